"""The strategy advisor: which ways of running a job fit a GPU's memory, which one `parallelism: auto`
gets, and what would fit when the strategy a job names does not.

Three uses of the memory estimate (jsctl/plan/memory.py), one rule each:
  * placement   a candidate (offer × nodes × GPUs per node) whose GPU is too small for the model under
                every option of memory.CANDIDATES (offload and activation checkpointing included) is not
                feasible; the reason says how much the leanest option needs.
  * auto        the first option that fits with a safety margin (MARGIN of the GPU's memory), in the order
                of least communication: DDP, SHARD_GRAD_OP, FULL_SHARD, the same with activation
                checkpointing, and offload last. HYBRID_SHARD takes FULL_SHARD's place when the job spans
                nodes that have NVLink inside and a slow network between them. `auto` chooses among what
                jsruntime applies itself (DDP and FSDP); DeepSpeed needs the program's own engine.
  * named       a strategy the job names that cannot fit on the chosen placement is a plan error that says
                what would: another strategy, activation checkpointing, a smaller micro-batch, offload,
                more GPUs, a larger GPU of the inventory. A named strategy that fits while one that
                communicates less would too gets a warning.
"Cannot fit" is against the whole GPU (a lower-bound estimate that exceeds it is certain to fail); a
recommendation keeps the margin. Unknown model size: no rule, nothing said.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Sequence

from jsctl.model import gpus
from jsctl.model.job import Placement
from jsctl.model.spec import JobSpec
from jsctl.plan import memory
from jsctl.plan.memory import MemoryEstimate, ModelShape, StrategyOption

GIB = 2**30
MARGIN = 0.9  # a recommendation leaves 10% of the GPU's memory free (allocator fragmentation, spikes)
FAST_FABRICS = ("infiniband", "efa", "gpudirect-rdma", "roce")  # RDMA between nodes; others count as slow
_SHARD_RANK = {"NO_SHARD": 0, "ZERO1": 1, "SHARD_GRAD_OP": 2, "HYBRID_SHARD": 3, "FULL_SHARD": 4}


def gpu_memory_bytes(gpu_type: str | None) -> float | None:
    """Memory of one GPU of a type (the smallest of a family); None for unknown or emulated (`*`)."""
    if not gpu_type or gpu_type == "*":
        return None
    models = gpus.resolve(gpu_type)
    return min(m.memory_gib for m in models) * GIB if models else None


def precision(spec: JobSpec) -> str:
    """The compute precision the memory estimate uses (strategy.precision_of, on the job's config)."""
    from jsctl.plan.strategy import precision_of  # (strategy imports this module)
    return precision_of(dict(spec.strategy.config))


def gib(n: float) -> str:
    """Bytes as GiB for a message: whole GiB from 10 up, one decimal below."""
    value = n / GIB
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def _gib_up(n: float) -> str:
    value = n / GIB
    return f"{math.ceil(value):,}" if value >= 10 else f"{math.ceil(value * 10) / 10:.1f}"


def _needs(e: MemoryEstimate) -> str:
    return f"{'≥ ' if e.lower_bound else ''}{_gib_up(e.total)} GiB"


def _per_gpu(e: MemoryEstimate) -> str:
    return f"{'≥ ' if e.lower_bound else ''}{gib(e.total)} GiB per GPU"


def host_bytes_per_gpu(shape: ModelShape, option: StrategyOption, nodes: int, gpus_per_node: int,
                       prec: str = "bf16") -> float:
    """Host memory one GPU's worker needs for what `option` offloads (0 without offload): the terms as
    they would be on the GPU."""
    if not _offloads(option):
        return 0.0
    onboard = memory.estimate(shape, replace(option, offload_optimizer=False, offload_params=False), nodes,
                              gpus_per_node, prec)
    names = (("optimizer state",) if option.offload_optimizer else ()) + \
        (("weights", "gradients") if option.offload_params else ())
    return sum(t.bytes for t in onboard.terms if t.name in names)


@dataclass(frozen=True)
class Fit:
    """One option on one shape: GPU memory per GPU, host memory per node for what it offloads."""

    estimate: MemoryEstimate
    host_per_node: float

    @property
    def option(self) -> StrategyOption:
        return self.estimate.option

    def fits(self, gpu_memory: float, host_memory: float | None, margin: float = MARGIN) -> bool:
        host_ok = host_memory is None or not self.host_per_node or self.host_per_node <= host_memory * margin
        return self.estimate.fits(gpu_memory, margin) and host_ok


def fit(shape: ModelShape, option: StrategyOption, nodes: int, gpus_per_node: int, prec: str = "bf16") -> Fit:
    nodes, gpus_per_node = max(nodes, 1), max(gpus_per_node, 1)
    return Fit(memory.estimate(shape, option, nodes, gpus_per_node, prec),
               host_bytes_per_gpu(shape, option, nodes, gpus_per_node, prec) * gpus_per_node)


@functools.lru_cache(maxsize=4096)  # placement asks it per offer, and again for every plan of the same job
def memory_miss(shape: ModelShape | None, gpu_type: str | None, nodes: int, gpus_per_node: int,
                prec: str = "bf16", host_memory: float | None = None, max_nodes: int | None = None) -> str | None:
    """The placement rule: why this GPU (and node) is too small for the model under every option of
    memory.CANDIDATES, or None when one fits (or nothing is known to compare). With `max_nodes` (of the
    pool; None = as many as asked) it adds the fewest GPUs of this pool on which an option fits."""
    mem = gpu_memory_bytes(gpu_type)
    if shape is None or mem is None or nodes <= 0 or gpus_per_node <= 0:
        return None
    fits = [fit(shape, o, nodes, gpus_per_node, prec) for o in memory.CANDIDATES]
    if any(f.fits(mem, host_memory, 1.0) for f in fits):
        return None
    usable = [f for f in fits if f.fits(math.inf, host_memory, 1.0)]
    best = min(usable or fits, key=lambda f: f.estimate.total)
    text = (f"needs {_needs(best.estimate)} per GPU even with {best.option.label()}; "
            f"{gpu_type} has {mem / GIB:g}")
    offload = [f for f in fits if f.host_per_node and f.estimate.fits(mem, 1.0)]
    if offload and host_memory is not None:
        least = min(offload, key=lambda f: f.host_per_node)
        text += (f" (offload would fit it but needs {_gib_up(least.host_per_node)} GiB of host memory per node; "
                 f"nodes have {host_memory / GIB:g})")
    more = _more_gpus(shape, None, order(nodes, False, "infiniband"), nodes, gpus_per_node, mem, host_memory, prec,
                      max_nodes)
    if more is not None:
        n, f = more
        text += f"; {n * gpus_per_node} GPUs ({n} × {gpus_per_node}) would fit with {f.option.label()}"
    return text


# --- which options, in which order --------------------------------------------------------------

def _hybrid_preferred(nodes: int, nvlink: bool, interconnect: str | None) -> bool:
    return nodes > 1 and nvlink and (interconnect or "").lower() not in FAST_FABRICS


def _offloads(o: StrategyOption) -> bool:
    return o.offload_optimizer or o.offload_params


def order(nodes: int, nvlink: bool, interconnect: str | None, family: str = "torch") -> list[StrategyOption]:
    """The options in the order the advisor tries them: least communication first, offload last.

    `family` "torch" keeps DDP and FSDP (what jsruntime applies); "deepspeed" maps them to ZeRO stages.
    HYBRID_SHARD goes right before FULL_SHARD (same offload and checkpointing) when nodes > 1 have NVLink
    and a slow network between them; otherwise it is left out (it never needs less than FULL_SHARD)."""
    if family == "deepspeed":
        opts = [replace(o, parallelism="deepspeed", offload_params=o.offload_params and o.sharding == "FULL_SHARD")
                for o in memory.CANDIDATES if o.sharding != "HYBRID_SHARD"]
    else:
        opts = [o for o in memory.CANDIDATES if o.parallelism in ("ddp", "fsdp")]
    opts = list(dict.fromkeys(opts))
    hybrid = _hybrid_preferred(nodes, nvlink, interconnect) and family != "deepspeed"
    out: list[StrategyOption] = []
    for o in opts:
        if o.sharding == "HYBRID_SHARD":
            continue
        if hybrid and o.sharding == "FULL_SHARD":
            out.append(replace(o, sharding="HYBRID_SHARD"))
        out.append(o)
    return [o for o in out if not _offloads(o)] + [o for o in out if _offloads(o)]


def _family(option: StrategyOption) -> str:
    return "deepspeed" if option.parallelism == "deepspeed" else "torch"


def communication_rank(o: StrategyOption) -> tuple[int, int]:
    """Smaller communicates less: the sharding, then offload (host transfers every step)."""
    return (_SHARD_RANK.get(o.sharding, 4), int(o.offload_optimizer) + int(o.offload_params))


def config_for(option: StrategyOption, base: dict | None = None) -> dict:
    """`strategy.config` keys that name an option (on top of what the job set, e.g. mixed_precision)."""
    cfg = {k: v for k, v in (base or {}).items()
           if k not in ("sharding_strategy", "cpu_offload", "zero_stage", "offload_optimizer", "offload_param",
                        "activation_checkpointing")}
    if option.parallelism == "fsdp":
        cfg["sharding_strategy"] = option.sharding
        if option.offload_params or option.offload_optimizer:
            cfg["cpu_offload"] = True
    elif option.parallelism == "deepspeed":
        cfg["zero_stage"] = {"NO_SHARD": 0, "ZERO1": 1, "SHARD_GRAD_OP": 2}.get(option.sharding, 3)
        if option.offload_optimizer:
            cfg["offload_optimizer"] = True
        if option.offload_params:
            cfg["offload_param"] = True
    if option.activation_checkpointing:
        cfg["activation_checkpointing"] = True
    return cfg


# --- parallelism: auto --------------------------------------------------------------------------

@dataclass(frozen=True)
class Recommendation:
    option: StrategyOption
    estimate: MemoryEstimate | None
    why: str  # one line
    fits: bool | None  # None: nothing known to compare


def node_nvlink(gpu_type: str | None) -> bool:
    m = gpus.model(gpu_type) if gpu_type and gpu_type != "*" else None
    return bool(m and m.nvlink)


def _pct() -> str:
    return f"{round((1 - MARGIN) * 100)}%"


def recommend(shape: ModelShape | None, placement: Placement, prec: str = "bf16", nvlink: bool | None = None,
              host_memory: float | None = None) -> Recommendation:
    """The option `parallelism: auto` gets on this placement, with one line of why. `nvlink` and
    `host_memory` (per node) come from the chosen offer; None: from the GPU model, and unchecked."""
    ddp = StrategyOption("ddp", "NO_SHARD")
    mem = None if placement.emulated else gpu_memory_bytes(placement.gpu_type)
    if shape is None:
        return Recommendation(ddp, None, "model size unknown: DDP, the least communication "
                              "(model.parameters or model.config sizes it)", None)
    nodes, per_node = placement.nodes, max(placement.gpus_per_node, 1)
    if mem is None:
        return Recommendation(ddp, memory.estimate(shape, ddp, nodes, per_node, prec),
                              "GPU memory unknown: DDP, the least communication", None)
    link = node_nvlink(placement.gpu_type) if nvlink is None else nvlink
    fits = [fit(shape, o, nodes, per_node, prec) for o in order(nodes, link, placement.interconnect)]
    where = f"{placement.gpu_type} ({mem / GIB:g} GiB)"
    for i, f in enumerate(fits):
        if f.fits(mem, host_memory):
            e = f.estimate
            if i == 0:
                why = f"ddp: the model fits one GPU ({_per_gpu(e)} of {mem / GIB:g}) and DDP communicates least"
            else:
                before = fits[i - 1].estimate
                why = (f"{e.option.label()}: the least communication that fits {where} with a {_pct()} margin "
                       f"({_per_gpu(e)}; {before.option.label()} needs {_needs(before)})")
            if e.option.sharding == "HYBRID_SHARD":
                why += (f"; HYBRID_SHARD shards inside each NVLink node, with "
                        f"{placement.interconnect or 'no RDMA fabric'} between nodes")
            return Recommendation(e.option, e, why, True)
    tight = next((f for f in fits if f.fits(mem, host_memory, 1.0)), None)
    if tight is not None:
        e = tight.estimate
        host = (f" and {_gib_up(tight.host_per_node)} of {host_memory / GIB:g} GiB of host memory per node"
                if tight.host_per_node and host_memory else "")
        return Recommendation(e.option, e, f"{e.option.label()}: nothing fits {where} with a {_pct()} margin; "
                              f"this needs {_per_gpu(e)}{host}", True)
    best = min(fits, key=lambda f: f.estimate.total).estimate
    return Recommendation(best.option, best, f"nothing fits {where}: {best.option.label()} needs "
                          f"{_needs(best)} per GPU", False)


# --- a strategy the job names -------------------------------------------------------------------

@dataclass(frozen=True)
class Review:
    error: str | None  # the named strategy cannot fit: what would
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Elsewhere:
    """Another place the job could run (a candidate of placement): to suggest a larger GPU."""

    cluster: str
    pool: str
    gpu_type: str
    nodes: int
    gpus_per_node: int
    host_memory: float | None = None  # per node


def review(address: str, shape: ModelShape | None, parallelism: str, config: dict, placement: Placement,
           prec: str = "bf16", elsewhere: Sequence[Elsewhere] = (), max_nodes: int | None = None,
           nvlink: bool | None = None, host_memory: float | None = None) -> Review:
    """Check a strategy the job names against the chosen placement (`max_nodes`, `nvlink`, `host_memory`:
    of the chosen offer; `elsewhere`: the other candidates, for a larger GPU)."""
    mem = None if placement.emulated else gpu_memory_bytes(placement.gpu_type)
    if shape is None or mem is None or parallelism not in ("ddp", "fsdp", "deepspeed"):
        return Review(None)
    named = memory.option_from(parallelism, config)
    nodes, per_node = placement.nodes, max(placement.gpus_per_node, 1)
    mine = fit(shape, named, nodes, per_node, prec)
    link = node_nvlink(placement.gpu_type) if nvlink is None else nvlink
    options = order(nodes, link, placement.interconnect, _family(named))
    here = f"{nodes * per_node} × {placement.gpu_type} ({mem / GIB:g} GiB)"
    e = mine.estimate
    if mine.fits(mem, host_memory, 1.0):
        warnings = []
        cheaper = next((f for f in (fit(shape, o, nodes, per_node, prec) for o in options)
                        if communication_rank(f.option) < communication_rank(named) and f.fits(mem, host_memory)),
                       None)
        if cheaper is not None:
            warnings.append(f"{address}: {cheaper.option.label()} fits {here} too ({_per_gpu(cheaper.estimate)}) "
                            f"and communicates less than the named {named.label()} ({_per_gpu(e)}); "
                            "consider it, or parallelism: auto")
        if not mine.fits(mem, host_memory):
            warnings.append(f"{address}: {named.label()} needs {gib(e.total)} of {mem / GIB:g} GiB per GPU, within "
                            f"the {_pct()} margin: it may run out of memory")
        return Review(None, tuple(warnings))
    if e.fits(mem, 1.0):  # the GPU would do: the host cannot hold what it offloads
        problem = (f"it offloads {_gib_up(mine.host_per_node)} GiB per node to host memory; nodes have "
                   f"{(host_memory or 0) / GIB:g} GiB")
    else:
        problem = f"it needs {_needs(e)} per GPU on {here}"
        if e.lower_bound:
            problem += f" (a lower bound: {_why_lower(e)})"
    ideas = _what_would_fit(shape, named, options, placement, mem, host_memory, prec, elsewhere, max_nodes)
    text = f"{address}: strategy {named.label()} does not fit: {problem}."
    if ideas:
        text += "\nWhat would fit:\n" + "\n".join(f"  - {i}" for i in ideas)
    else:
        text += "\nNothing in reach fits: use more or larger GPUs, or a smaller model."
    return Review(text)


def _why_lower(e: MemoryEstimate) -> str:
    return ", ".join(dict.fromkeys(t.name for t in e.terms if t.lower_bound)) + " not counted"


def _what_would_fit(shape: ModelShape, named: StrategyOption, options: list[StrategyOption], placement: Placement,
                    mem: float, host: float | None, prec: str, elsewhere: Sequence[Elsewhere],
                    max_nodes: int | None) -> list[str]:
    nodes, per_node = placement.nodes, max(placement.gpus_per_node, 1)

    def good(o: StrategyOption, s: ModelShape = shape) -> Fit | None:
        f = fit(s, o, nodes, per_node, prec)
        return f if f.fits(mem, host) else None

    def per_gpu(f: Fit) -> str:
        return _per_gpu(f.estimate)

    ideas: list[str] = []
    plain = [o for o in options if not _offloads(o) and not o.activation_checkpointing]
    other = next((f for f in map(good, plain) if f and f.option != named), None)
    if other is None:  # nothing plain fits: the first that does (checkpointing, offload)
        other = next((f for f in map(good, options) if f and f.option != named), None)
    if other is not None:
        ideas.append(f"another strategy: {other.option.label()} ({per_gpu(other)})")
    if not named.activation_checkpointing:
        f = good(replace(named, activation_checkpointing=True))
        if f and (other is None or f.option != other.option):
            ideas.append(f"activation checkpointing: {f.option.label()} ({per_gpu(f)}; "
                         "strategy.config.activation_checkpointing: true)")
    if shape.micro_batch_size and shape.micro_batch_size > 1:
        b = shape.micro_batch_size // 2
        while b >= 1:
            f = good(named, replace(shape, micro_batch_size=b))
            if f:
                ideas.append(f"a smaller micro-batch: model.micro_batch_size {b} with {named.label()} "
                             f"({per_gpu(f)}; gradient accumulation keeps the global batch)")
                break
            b //= 2
    if named.parallelism != "ddp" and not (named.offload_optimizer and named.offload_params):
        f = good(replace(named, offload_optimizer=True,
                         offload_params=named.parallelism == "fsdp" or named.sharding == "FULL_SHARD"))
        if f and (other is None or f.option != other.option):
            ideas.append(f"offload to CPU memory: {f.option.label()} ({per_gpu(f)}, "
                         f"{_gib_up(f.host_per_node)} GiB of host memory per node; slower steps)")
    more = _more_gpus(shape, named, options, nodes, per_node, mem, host, prec, max_nodes)
    if more:
        n, f = more
        ideas.append(f"more GPUs: gpu.count {n * per_node} ({n} × {per_node}) with {f.option.label()} "
                     f"({per_gpu(f)})")
    ideas += _larger_gpus(shape, named, options, mem, prec, elsewhere, placement)
    return ideas


def _more_gpus(shape: ModelShape, named: StrategyOption | None, options: list[StrategyOption], nodes: int,
               per_node: int, mem: float, host: float | None, prec: str,
               max_nodes: int | None) -> tuple[int, Fit] | None:
    """The fewest nodes (doubling, within the pool) on which the named option, else another, fits: without
    offload if any does, else with it. (nodes, the fit) or None."""
    others = [o for o in options if o != named]
    tiers = ([named] if named else []) + [o for o in others if not _offloads(o)], [o for o in others if _offloads(o)]
    for tier in tiers:
        for k in (2, 4, 8, 16, 32):
            n = nodes * k
            if max_nodes is not None and n > max_nodes:
                break
            f = next((f for f in (fit(shape, o, n, per_node, prec) for o in tier) if f.fits(mem, host)), None)
            if f is not None:
                return n, f
    return None


def _larger_gpus(shape: ModelShape, named: StrategyOption, options: list[StrategyOption], mem: float, prec: str,
                 elsewhere: Sequence[Elsewhere], placement: Placement, limit: int = 2) -> list[str]:
    """Other candidates with more memory per GPU on which the named option (else another) fits."""
    out: list[str] = []
    seen: set[tuple[str, str]] = {(placement.cluster, placement.pool)}
    for c in elsewhere:
        big = gpu_memory_bytes(c.gpu_type)
        if big is None or big <= mem or c.nodes <= 0 or c.gpus_per_node <= 0 or (c.cluster, c.pool) in seen:
            continue
        for o in [named] + [o for o in options if o != named]:
            f = fit(shape, o, c.nodes, c.gpus_per_node, prec)
            if f.fits(big, c.host_memory):
                seen.add((c.cluster, c.pool))
                out.append(f"a larger GPU: {c.cluster}/{c.pool} ({c.nodes} × {c.gpus_per_node} {c.gpu_type}, "
                           f"{big / GIB:g} GiB) with {o.label()} ({_per_gpu(f.estimate)}; "
                           f"gpu.type {c.gpu_type})")
                break
        if len(out) >= limit:
            break
    return out
