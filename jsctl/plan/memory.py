"""Memory per GPU for one way of running a job, with every term named (a first-order estimate).

Model states, mixed-precision Adam (Rajbhandari et al., ZeRO): per parameter 2 bytes of bf16/fp16 weights,
2 of gradients, 12 of fp32 optimizer state (master weights 4 + momentum 4 + variance 4). In fp32 (the CPU
path): weights 4, gradients 4, optimizer 8 (momentum + variance; the weights are the master copy).
Partitioned over the data-parallel group:

    DDP (NO_SHARD)                 nothing sharded
    ZeRO-1                         optimizer state / world
    SHARD_GRAD_OP (= ZeRO-2)       gradients and optimizer state / world
    FULL_SHARD (= ZeRO-3)          all of it / world
    HYBRID_SHARD                   all of it / GPUs per node (sharded in a node, replicated across nodes)

Offload moves the optimizer state (and with `offload_params` the sharded weights and gradients) to host memory.

Activations per micro-batch and layer (Korthikanti et al., "Reducing Activation Recomputation in Large
Transformer Models", 2022, eq. 2 without tensor parallelism): s·b·h·(34 + 5·a·s/h) bytes at 16-bit; with
full activation checkpointing each layer keeps its 2·s·b·h-byte input and one layer's full activations are
live during its recomputation. fp32 doubles every value (the CPU path; its dropout masks are full-size too,
so there the formula is a few percent low). Logits: as backward starts, the fp32 log-probabilities kept by
the loss, their gradient, and the logits' gradient in the compute precision: s·b·V·(4 + 4 + 2) bytes.

Allowance (named, not measured): 1 GiB for the CUDA context and framework workspace, plus communication
buffers: DDP's gradient buckets (2 × 25 MB); DeepSpeed ZeRO-1/2's reduce and allgather buckets (5e8 values
each by default, at most the model); FSDP/ZeRO-3's gathered current and prefetched layer with their
unsharded gradients (SHARD_GRAD_OP: the gradients only, its weights stay gathered and count as weights).
A term whose inputs are missing is a lower bound and says why.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Mapping

from jsctl.model.spec import JobSpec, Model
from jsctl.plan import modelsize

GIB = 2**30
MB = 10**6
CONTEXT_BYTES = 1 * GIB  # CUDA context (~0.5 GiB) + cuBLAS/NCCL workspaces + allocator slack
DDP_BUCKET_BYTES = 25 * MB  # torch DDP bucket_cap_mb default; two buckets in flight
DS_BUCKET_ELEMENTS = 5e8  # DeepSpeed ZeRO-1/2 reduce_bucket_size and allgather_bucket_size defaults
SHARDINGS = ("NO_SHARD", "ZERO1", "SHARD_GRAD_OP", "FULL_SHARD", "HYBRID_SHARD")


@dataclass(frozen=True)
class ModelShape:
    """What the memory model needs; None = unknown."""

    parameters: float
    hidden: int | None = None
    layers: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    intermediate: int | None = None
    vocab: int | None = None
    experts: int | None = None
    sequence_length: int | None = None
    micro_batch_size: int | None = None
    source: str = ""  # "model.parameters" | "config.json <path>"


@dataclass(frozen=True)
class StrategyOption:
    """One way to run: the advisor compares these."""

    parallelism: str  # "ddp" | "fsdp" | "deepspeed"
    sharding: str  # one of SHARDINGS
    offload_optimizer: bool = False
    offload_params: bool = False
    activation_checkpointing: bool = False

    def label(self) -> str:
        if self.parallelism == "deepspeed":
            stage = {"NO_SHARD": 0, "ZERO1": 1, "SHARD_GRAD_OP": 2, "FULL_SHARD": 3}.get(self.sharding, 3)
            text = f"deepspeed ZeRO-{stage}"
        elif self.parallelism == "ddp" or self.sharding == "NO_SHARD":
            text = "ddp" if self.parallelism == "ddp" else f"{self.parallelism} NO_SHARD"
        elif self.sharding == "ZERO1":
            text = "ZeRO-1" if self.parallelism == "fsdp" else f"{self.parallelism} ZeRO-1"
        else:
            text = f"{self.parallelism} {self.sharding}"
        extras = []
        if self.offload_optimizer:
            extras.append("offload optimizer")
        if self.offload_params:
            extras.append("offload params")
        if self.activation_checkpointing:
            extras.append("activation checkpointing")
        return text + (" + " + " + ".join(extras) if extras else "")


@dataclass(frozen=True)
class Term:
    name: str
    bytes: float
    lower_bound: bool = False
    why: str = ""

    def to_dict(self) -> dict:
        return {"name": self.name, "bytes": self.bytes, "lower_bound": self.lower_bound, "why": self.why}


@dataclass(frozen=True)
class MemoryEstimate:
    option: StrategyOption
    terms: tuple[Term, ...]
    shape: ModelShape | None = None  # what it was computed for
    precision: str = "bf16"
    nodes: int = 1
    gpus_per_node: int = 1

    @property
    def total(self) -> float:
        return sum(t.bytes for t in self.terms)

    @property
    def lower_bound(self) -> bool:
        return any(t.lower_bound for t in self.terms)

    def term(self, name: str) -> Term | None:
        return next((t for t in self.terms if t.name == name), None)

    def fits(self, gpu_memory_bytes: float, margin: float = 0.9) -> bool:
        return self.total <= gpu_memory_bytes * margin

    def to_dict(self) -> dict:
        model = None
        if self.shape is not None:
            model = {k: getattr(self.shape, k) for k in ("parameters", "hidden", "layers", "heads", "kv_heads",
                                                          "intermediate", "vocab", "experts", "sequence_length",
                                                          "micro_batch_size", "source")}
        return {"option": self.option.label(), "precision": self.precision, "nodes": self.nodes,
                "gpus_per_node": self.gpus_per_node, "model": model, "total_bytes": self.total,
                "lower_bound": self.lower_bound, "terms": [t.to_dict() for t in self.terms]}


_BASE = (StrategyOption("ddp", "NO_SHARD"), StrategyOption("deepspeed", "ZERO1"),
         StrategyOption("fsdp", "SHARD_GRAD_OP"), StrategyOption("fsdp", "FULL_SHARD"),
         StrategyOption("fsdp", "HYBRID_SHARD"))
CANDIDATES: tuple[StrategyOption, ...] = (
    *_BASE,
    StrategyOption("deepspeed", "SHARD_GRAD_OP", offload_optimizer=True),
    StrategyOption("fsdp", "FULL_SHARD", offload_optimizer=True, offload_params=True),
    *(StrategyOption(o.parallelism, o.sharding, activation_checkpointing=True) for o in _BASE),
    StrategyOption("deepspeed", "SHARD_GRAD_OP", offload_optimizer=True, activation_checkpointing=True),
    StrategyOption("fsdp", "FULL_SHARD", offload_optimizer=True, offload_params=True, activation_checkpointing=True),
)


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "cpu")
    if isinstance(value, Mapping):  # DeepSpeed style: {device: cpu}
        return str(value.get("device", "cpu")).lower() not in ("none", "")
    return bool(value)


def option_from(parallelism: str, config: Mapping[str, Any]) -> StrategyOption:
    """The option a job's `strategy.parallelism` and `strategy.config` name."""
    ckpt = _flag(config.get("activation_checkpointing", False))
    par = str(parallelism).lower()
    if par == "fsdp":
        sharding = str(config.get("sharding_strategy", "FULL_SHARD")).upper()
        if sharding in ("_HYBRID_SHARD_ZERO2", "HYBRID_SHARD_ZERO2"):
            sharding = "HYBRID_SHARD"
        if sharding not in SHARDINGS:
            sharding = "FULL_SHARD"
        cpu = _flag(config.get("cpu_offload", False))
        # FSDP's CPUOffload(offload_params=True) moves parameters, gradients and optimizer step to the host
        return StrategyOption("fsdp", sharding, offload_optimizer=cpu or _flag(config.get("offload_optimizer", False)),
                              offload_params=cpu or _flag(config.get("offload_param", False)),
                              activation_checkpointing=ckpt)
    if par == "deepspeed":
        stage = int(config.get("zero_stage", 0) or 0)
        sharding = {0: "NO_SHARD", 1: "ZERO1", 2: "SHARD_GRAD_OP"}.get(stage, "FULL_SHARD")
        return StrategyOption("deepspeed", sharding,
                              offload_optimizer=_flag(config.get("offload_optimizer", False))
                              or _flag(config.get("cpu_offload", False)),
                              offload_params=_flag(config.get("offload_param", False)) and stage >= 3,
                              activation_checkpointing=ckpt)
    return StrategyOption("ddp", "NO_SHARD", activation_checkpointing=ckpt)


def model_shape(spec: JobSpec, workdir: str) -> ModelShape | None:
    """The model's shape from `model.config` (a Hugging Face config.json, relative to the job file's
    directory; without it, the config.json of an input named like a model, when readable here) or else
    `model.parameters`; None when the job says neither. A config that cannot be read
    falls back to `model.parameters` and the source says why."""
    m = spec.model or Model(None, None, None, None)
    note = ""
    config = m.config or _mounted_model_config(spec, workdir)
    if config:
        path = config if os.path.isabs(config) else os.path.join(workdir, config)
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        try:
            with open(path, encoding="utf-8") as f:
                cfg = json.load(f)
            arch = modelsize.analyze(cfg)
        except (OSError, ValueError) as e:
            note = f" (config.json {config} unreadable: {getattr(e, 'strerror', None) or e})"
        else:
            return ModelShape(parameters=m.parameters or arch.parameters, hidden=arch.hidden, layers=arch.layers,
                              heads=arch.heads, kv_heads=arch.kv_heads, intermediate=arch.intermediate,
                              vocab=arch.vocab, experts=arch.experts,
                              sequence_length=m.sequence_length, micro_batch_size=m.micro_batch_size,
                              source=f"config.json {config}")
    if m.parameters is None:
        return None
    return ModelShape(parameters=m.parameters, sequence_length=m.sequence_length,
                      micro_batch_size=m.micro_batch_size, source="model.parameters" + note)


def _mounted_model_config(spec: JobSpec, workdir: str) -> str | None:
    """Without `model.config`: the config.json of an input named like a model (`pretrained-model`, `model`),
    when this machine can read its path."""
    for mount in spec.inputs:
        if "model" in mount.name.lower() and "://" not in mount.path:
            path = os.path.join(mount.path if os.path.isabs(mount.path) else os.path.join(workdir, mount.path),
                                "config.json")
            if os.path.isfile(path):
                return os.path.join(mount.path, "config.json")
    return None


def _bytes_per_value(precision: str) -> int:
    return 4 if precision in ("fp32", "float32", "no", "none") else 2


def _model_state_terms(p: float, option: StrategyOption, nodes: int, gpus_per_node: int,
                       precision: str) -> list[Term]:
    world = max(nodes * gpus_per_node, 1)
    fp32 = _bytes_per_value(precision) == 4
    w_b, g_b, o_b = (4, 4, 8) if fp32 else (2, 2, 12)
    shard = {"NO_SHARD": (1, 1, 1), "ZERO1": (1, 1, world), "SHARD_GRAD_OP": (1, world, world),
             "FULL_SHARD": (world, world, world),
             "HYBRID_SHARD": (max(gpus_per_node, 1),) * 3}[option.sharding]
    how = {1: "replicated", world: f"/ {world} GPUs"}
    terms = []
    for (name, per, div, off) in (("weights", w_b, shard[0], option.offload_params),
                                  ("gradients", g_b, shard[1], option.offload_params),
                                  ("optimizer state", o_b, shard[2], option.offload_optimizer)):
        place = how.get(div, f"/ {div} GPUs of a node")
        if off:
            host = per * p / div / GIB
            terms.append(Term(name, 0.0, why=f"{per} B/param {place}: {host:.2f} GiB offloaded to CPU memory"))
        else:
            terms.append(Term(name, per * p / div, why=f"{per} B/param x {p:.4g} params, {place}"))
    return terms


def _activation_terms(shape: ModelShape, option: StrategyOption, precision: str) -> list[Term]:
    s, b, h, L, a = shape.sequence_length, shape.micro_batch_size, shape.hidden, shape.layers, shape.heads
    scale = _bytes_per_value(precision) / 2  # Korthikanti's constants count 16-bit values
    missing = [n for n, v in (("model.sequence_length", s), ("model.micro_batch_size", b),
                              ("hidden size", h), ("layers", L), ("heads", a)) if not v]
    if missing:
        why = "unknown " + ", ".join(missing) + " (give model.config, model.sequence_length, model.micro_batch_size)"
        return [Term("activations", 0.0, lower_bound=True, why=why),
                Term("logits", 0.0, lower_bound=True, why=why)]
    per_layer = s * b * h * (34 + 5 * a * s / h) * scale
    if option.activation_checkpointing:
        act = 2 * s * b * h * scale * L + per_layer
        why = f"checkpointed: 2sbh x {L} layers + one layer's sbh(34+5as/h), s={s} b={b} h={h} a={a}"
    else:
        act = per_layer * L
        why = f"sbh(34+5as/h) x {L} layers, s={s} b={b} h={h} a={a}"
    if shape.vocab:
        logits = s * b * shape.vocab * (4 + 4 + _bytes_per_value(precision))
        lwhy = (f"s*b*V x (4+4+{_bytes_per_value(precision)}) B: fp32 log-probs kept for the loss, their gradient "
                f"and the logits' gradient, live as backward starts; V={shape.vocab}")
        lterm = Term("logits", logits, why=lwhy)
    else:
        lterm = Term("logits", 0.0, lower_bound=True, why="unknown vocabulary size (give model.config)")
    if shape.experts:
        why += f"; MoE ({shape.experts} experts): the dense formula, one MLP per token"
    return [Term("activations", act, why=why), lterm]


def _allowance_terms(shape: ModelShape, option: StrategyOption, precision: str) -> list[Term]:
    terms = [Term("cuda context + framework", float(CONTEXT_BYTES),
                  why="allowance: ~1 GiB for the CUDA context, cuBLAS/NCCL workspaces and allocator slack")]
    bpv = _bytes_per_value(precision)
    if option.parallelism == "deepspeed" and option.sharding in ("ZERO1", "SHARD_GRAD_OP"):
        n = min(DS_BUCKET_ELEMENTS, shape.parameters)
        terms.append(Term("communication buffers", 2.0 * n * bpv,
                          why=f"allowance: DeepSpeed's reduce and allgather buckets, {n:.3g} values each "
                              f"(reduce_bucket_size, allgather_bucket_size: default 5e8)"))
    elif option.sharding in ("NO_SHARD", "ZERO1"):
        terms.append(Term("communication buffers", 2.0 * DDP_BUCKET_BYTES,
                          why="allowance: two 25 MB gradient buckets (DDP bucket_cap_mb) in flight"))
    elif shape.layers:
        layer = shape.parameters / shape.layers
        if option.sharding == "SHARD_GRAD_OP":  # gathered weights stay until backward: counted in `weights`
            buf = 2 * layer * bpv
            why = (f"allowance: unsharded gradients of the current and next layer ({layer:.3g} params each) "
                   "before reduce-scatter")
        else:
            buf = 4 * layer * bpv
            why = (f"allowance: gathered weights of the current and prefetched layer ({layer:.3g} params each) "
                   "and their gradients before reduce-scatter")
        terms.append(Term("communication buffers", buf, why=why))
    else:
        terms.append(Term("communication buffers", 0.0, lower_bound=True,
                          why="unknown layer count: the gathered layers are not sized (give model.config)"))
    return terms


def estimate(shape: ModelShape, option: StrategyOption, nodes: int, gpus_per_node: int,
             precision: str = "bf16") -> MemoryEstimate:
    """Bytes per GPU for `shape` run as `option` on `nodes` × `gpus_per_node` GPUs."""
    terms = (_model_state_terms(shape.parameters, option, max(nodes, 1), max(gpus_per_node, 1), precision)
             + _activation_terms(shape, option, precision) + _allowance_terms(shape, option, precision))
    return MemoryEstimate(option, tuple(terms), shape, precision, max(nodes, 1), max(gpus_per_node, 1))
