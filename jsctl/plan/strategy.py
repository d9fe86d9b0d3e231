"""Size a job's strategy: which parallelism, and whether it fits in GPU memory (a first-order estimate).

Bytes per parameter with Adam in mixed precision: 2 (bf16 weights) + 2 (grads) + 12 (fp32 master,
momentum, variance) = 16. DDP keeps all of it on every GPU; FSDP FULL_SHARD divides all of it by the
world size, SHARD_GRAD_OP divides grads and optimizer state; cpu_offload moves the 12 bytes to host.
The full estimate per GPU (model states, activations, logits, allowances: every term) is
jsctl.plan.memory's; `StrategyAdvice.memory` carries it for the chosen option.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from jsctl.model.spec import JobSpec
from jsctl.model import gpus
from jsctl.model.job import Placement
from jsctl.model.cluster import Offer
from jsctl.plan import advisor, memory as memmodel
from jsctl.plan.memory import MemoryEstimate
from jsctl.plan import strategy_config

GIB = 2**30


@dataclass(frozen=True)
class StrategyAdvice:
    parallelism: str  # ddp | fsdp | deepspeed | none
    config: tuple[tuple[str, object], ...]
    bytes_per_gpu: float | None  # the memory estimate's total per GPU, when the model size is known
    gpu_memory_bytes: float | None
    why: str
    memory: MemoryEstimate | None = None  # every term of bytes_per_gpu, for the chosen option
    inputs: strategy_config.Inputs | None = None  # the placement's shape and micro-batch the generated config uses

    @property
    def fits(self) -> bool | None:
        if self.bytes_per_gpu is None or not self.gpu_memory_bytes:
            return None
        return self.bytes_per_gpu <= self.gpu_memory_bytes

    def generated(self) -> strategy_config.Generated:
        """The configuration the job runs with (FSDP arguments, DeepSpeed JSON), with its problems."""
        return strategy_config.generate(self.parallelism, dict(self.config), self.inputs)

    def to_env(self) -> dict:
        """What JETSTREAM_STRATEGY carries (jsctl.plan.strategy_config)."""
        return self.generated().env

    def to_dict(self) -> dict:
        """The advice as data (the plan JSON's `strategy_advice`): the verdict is a field, not only words."""
        return {"parallelism": self.parallelism, "memory_per_gpu_bytes": self.bytes_per_gpu,
                "gpu_memory_bytes": self.gpu_memory_bytes, "fits": self.fits, "why": self.why,
                "text": self.describe(), "memory": self.memory.to_dict() if self.memory else None}

    def describe(self) -> str:
        cfg = dict(self.config)
        parts = [self.parallelism]
        if self.parallelism == "fsdp":
            parts.append(str(cfg.get("sharding_strategy", "FULL_SHARD")))
        if self.parallelism == "deepspeed" and "zero_stage" in cfg:
            parts.append(f"ZeRO-{cfg['zero_stage']}")
        text = " ".join(parts)
        extras = [str(cfg["mixed_precision"])] if cfg.get("mixed_precision") else []
        extras += [k for k in ("cpu_offload", "offload_optimizer", "offload_param") if cfg.get(k)]
        if extras:
            text += ", " + ", ".join(extras)
        if self.bytes_per_gpu is not None and self.gpu_memory_bytes:
            verdict = "fits" if self.fits else "DOES NOT FIT"
            text += f"   ({verdict}: {self.bytes_per_gpu / GIB:.1f} of {self.gpu_memory_bytes / GIB:.0f} GiB per GPU)"
        return text


def model_state_bytes(params: float, parallelism: str, config: dict, world: int) -> float:
    weights, grads, optim = 2 * params, 2 * params, 12 * params
    if config.get("cpu_offload") or config.get("offload_optimizer"):
        optim = 0.0
    if parallelism == "fsdp":
        mode = config.get("sharding_strategy", "FULL_SHARD")
        if mode == "FULL_SHARD":
            return (weights + grads + optim) / world
        if mode in ("SHARD_GRAD_OP", "HYBRID_SHARD"):
            return weights + (grads + optim) / world
    if parallelism == "deepspeed":
        stage = int(config.get("zero_stage", 0))
        if stage >= 3:
            return (weights + grads + optim) / world
        if stage == 2:
            return weights + (grads + optim) / world
        if stage == 1:
            return weights + grads + optim / world
    return weights + grads + optim


def advise(spec: JobSpec, placement: Placement, offer: Offer | None = None) -> StrategyAdvice:
    """`offer`: the chosen one (its nodes' NVLink and host memory inform `parallelism: auto`)."""
    config = dict(spec.strategy.config)
    world = placement.workers
    models = gpus.resolve(placement.gpu_type) if placement.gpu_type else ()
    memory = min(m.memory_gib for m in models) * GIB if models else None
    chosen = spec.strategy.parallelism
    why = "as configured"
    if chosen == "auto":  # the advisor's recommendation (jsctl/plan/advisor.py)
        shape = memmodel.model_shape(spec, os.path.dirname(os.path.abspath(spec.file)))
        rec = advisor.recommend(shape, placement, precision_of(config), offer.nvlink if offer else None,
                                offer.memory_per_node if offer else None)
        if world <= 1 and rec.option == memmodel.StrategyOption("ddp", "NO_SHARD"):
            chosen, why = "none", "one worker"
        else:
            chosen, why = rec.option.parallelism, rec.why
            config = advisor.config_for(rec.option, config)
    estimate = memory_estimate(spec, placement, chosen, config)
    need = estimate.total if estimate else None
    return StrategyAdvice(chosen, tuple(sorted(config.items())), need, memory, why, estimate,
                          inputs=strategy_config.Inputs.of(spec, placement))


def precision_of(config: dict) -> str:
    """The compute precision `strategy.config.mixed_precision` names; fp32 without one, as the
    generated configuration and jsruntime then run (strategy_config.py)."""
    mp = str(config.get("mixed_precision") or "fp32").lower()
    return "fp32" if mp in ("fp32", "float32", "no", "none", "false") else ("fp16" if "16" in mp and "b" not in mp else "bf16")


def memory_estimate(spec: JobSpec, placement: Placement, parallelism: str, config: dict) -> MemoryEstimate | None:
    """Every term of memory per GPU for the job run as `parallelism` + `config` on the placement; None
    when the job gives no model size."""
    shape = memmodel.model_shape(spec, os.path.dirname(os.path.abspath(spec.file)))
    if shape is None:
        return None
    option = memmodel.option_from("ddp" if parallelism == "none" else parallelism, config)
    return memmodel.estimate(shape, option, placement.nodes, max(placement.gpus_per_node, 1), precision_of(config))
