"""Tuning from what the job measures: the decision rule of docs/tuning.md, as a pure function.

Input: the metric records jsruntime printed during the job's current attempt (step time, time
waiting on collectives, peak memory), the memory one worker has (the GPU's, from the placement;
on the local provider a share of the host's) and the strategy the job runs with (what
JETSTREAM_STRATEGY carries). Output: keep it, or one step along the sharding ladder

    ddp  <  fsdp SHARD_GRAD_OP  <  fsdp HYBRID_SHARD  <  fsdp FULL_SHARD  (< activation checkpointing / offload)

less sharding when the job is communication-bound with ample memory headroom, more when memory is
near the limit. No I/O: `jsctl.api` gathers the inputs, the CLI prints the result.
"""
from __future__ import annotations

import copy
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

COMM_BOUND = 0.30  # X: communication-bound when more than this share of a step waits on collectives
AMPLE_HEADROOM = 0.50  # Y: less sharding only while the peak is below this share of the memory
NEAR_LIMIT = 0.85  # Z: more sharding when the peak is above this share of the memory
RECENT = 20  # the median is over this many of the latest metric records
MIN_RECORDS = 3  # fewer (after the first, warm-up, record) and the rule says nothing

LADDER = (("ddp", None), ("fsdp", "SHARD_GRAD_OP"), ("fsdp", "HYBRID_SHARD"), ("fsdp", "FULL_SHARD"))
SHARDINGS = ("FULL_SHARD", "SHARD_GRAD_OP", "HYBRID_SHARD", "NO_SHARD")
_SHARDING_ONLY = ("sharding_strategy", "cpu_offload", "zero_stage", "offload_optimizer", "offload_param")


@dataclass(frozen=True)
class Measurements:
    """Medians over the latest records of one attempt (one strategy and shape)."""

    records: int  # how many records the medians are over
    step_s: float | None = None
    comm_s: float | None = None
    peak_mem_bytes: float | None = None
    mem_kind: str | None = None  # "cuda" (max_memory_allocated) or "rss" (peak resident set)

    @property
    def comm_share(self) -> float | None:
        if self.comm_s is None or not self.step_s:
            return None
        return min(1.0, self.comm_s / self.step_s)

    def to_dict(self) -> dict[str, Any]:
        return {"records": self.records, "step_s": self.step_s, "comm_s": self.comm_s,
                "comm_share": self.comm_share, "peak_mem_bytes": self.peak_mem_bytes, "mem_kind": self.mem_kind}


def measure(samples: Iterable[Mapping[str, float]], mem_kind: str | None = None, recent: int = RECENT) -> Measurements:
    """Medians of step time and comm time, and the highest peak memory, over the latest `recent`
    records (the first record of an attempt is left out: it carries start-up and warm-up)."""
    rows = list(samples)
    if len(rows) > 1:
        rows = rows[1:]
    rows = rows[-recent:]

    def median(name: str) -> float | None:
        values = [float(r[name]) for r in rows if r.get(name) is not None]
        return statistics.median(values) if values else None

    peaks = [float(r["peak_mem_bytes"]) for r in rows if r.get("peak_mem_bytes") is not None]
    return Measurements(len(rows), median("step_time_s"), median("comm_s"), max(peaks) if peaks else None, mem_kind)


def label(strategy: Mapping[str, Any] | None) -> str:
    """'ddp', 'fsdp FULL_SHARD', 'fsdp FULL_SHARD, cpu_offload', 'deepspeed ZeRO-2', 'none'."""
    s = dict(strategy or {})
    cfg = dict(s.get("config") or {})
    p = str(s.get("parallelism") or "none")
    text = p
    if p == "fsdp":
        text += " " + str(cfg.get("sharding_strategy") or "FULL_SHARD")
    if p == "deepspeed" and cfg.get("zero_stage") is not None:
        text += f" ZeRO-{cfg['zero_stage']}"
    extras = [k for k in ("cpu_offload", "offload_optimizer", "offload_param", "activation_checkpointing") if cfg.get(k)]
    return text + (", " + ", ".join(extras) if extras else "")


def _level(strategy: Mapping[str, Any]) -> int | None:
    p = strategy.get("parallelism")
    sharding = str((strategy.get("config") or {}).get("sharding_strategy") or "FULL_SHARD")
    if p == "ddp" or (p == "fsdp" and sharding == "NO_SHARD"):
        return 0
    if p == "fsdp":
        return [s for _, s in LADDER].index(sharding) if sharding in SHARDINGS else None
    return None


def _step(level: int, direction: int) -> int:
    """The next rung; HYBRID_SHARD is never a target (it differs from FULL_SHARD only across nodes,
    where the plan chooses it from the fabric)."""
    nxt = level + direction
    return nxt + direction if LADDER[nxt][1] == "HYBRID_SHARD" else nxt


def switched(strategy: Mapping[str, Any] | None, parallelism: str, sharding: str | None = None) -> dict[str, Any]:
    """`strategy` with another parallelism (and FSDP sharding); options of the other strategies are
    dropped (to DDP: the generated `fsdp` object too; always the generated `deepspeed` one), the rest
    (mixed precision, the generated FSDP arguments with the new sharding) kept."""
    new = copy.deepcopy(dict(strategy or {}))
    cfg = dict(new.get("config") or {})
    new.pop("deepspeed", None)  # the plan's generated DeepSpeed JSON belongs to the old strategy
    if parallelism == "fsdp":
        for key in ("zero_stage", "offload_optimizer", "offload_param"):
            cfg.pop(key, None)
        cfg["sharding_strategy"] = sharding = sharding or "FULL_SHARD"
        generated = new.get("fsdp")
        if isinstance(generated, dict):  # the plan's resolved FSDP arguments win over `config`: keep them true
            generated["sharding_strategy"] = sharding
            generated["reshard_after_forward"] = sharding not in ("SHARD_GRAD_OP", "NO_SHARD")
            mesh = generated.get("mesh")
            if isinstance(mesh, dict) and sharding != "HYBRID_SHARD" and len(mesh.get("shape") or ()) > 1:
                size = 1
                for n in mesh["shape"]:
                    size *= int(n)
                generated["mesh"] = {"dim_names": ["shard"], "shape": [size]}
    else:
        new.pop("fsdp", None)
        for key in _SHARDING_ONLY:
            cfg.pop(key, None)
    new["parallelism"] = parallelism
    new["config"] = cfg
    return new


def parse_target(text: str, strategy: Mapping[str, Any] | None) -> dict[str, Any]:
    """`--to ddp`, `--to fsdp` (FULL_SHARD) or `--to fsdp:SHARD_GRAD_OP` applied to `strategy`."""
    from jsctl.errors import UsageError

    name, _, sharding = text.strip().partition(":")
    name = name.lower()
    if name == "ddp" and not sharding:
        return switched(strategy, "ddp")
    if name == "fsdp":
        sharding = (sharding or "FULL_SHARD").upper()
        if sharding in SHARDINGS:
            return switched(strategy, "fsdp", sharding)
        raise UsageError(f"--to {text}: unknown FSDP sharding {sharding!r}", hint=f"one of {', '.join(SHARDINGS)}")
    raise UsageError(f"--to {text}: expected ddp, fsdp or fsdp:SHARDING (e.g. fsdp:SHARD_GRAD_OP)")


@dataclass(frozen=True)
class Recommendation:
    action: str  # "keep" | "less_sharding" | "more_sharding" | "unknown"
    current: Mapping[str, Any]
    target: Mapping[str, Any] | None  # the JETSTREAM_STRATEGY to switch to; None: nothing tune can apply
    why: str
    measurements: Measurements
    memory_bytes: float | None

    @property
    def wrong(self) -> bool:
        """The measurements say the strategy is wrong (describe and metrics show it)."""
        return self.action in ("less_sharding", "more_sharding")

    @property
    def mem_share(self) -> float | None:
        m = self.measurements
        return m.peak_mem_bytes / self.memory_bytes if m.peak_mem_bytes is not None and self.memory_bytes else None

    def describe(self) -> str:
        if self.target is not None and self.wrong:
            return f"switch {label(self.current)} → {label(self.target)}: {self.why}"
        if self.wrong:
            return f"{label(self.current)} is near its memory limit: {self.why}"
        return f"keep {label(self.current)}: {self.why}"

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "current": dict(self.current), "current_label": label(self.current),
                "target": dict(self.target) if self.target is not None else None,
                "target_label": label(self.target) if self.target is not None else None, "why": self.why,
                "memory_bytes": self.memory_bytes, "mem_share": self.mem_share,
                "measurements": self.measurements.to_dict(), "text": self.describe()}


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def recommend(strategy: Mapping[str, Any] | None, m: Measurements, memory_bytes: float | None,
              world_size: int) -> Recommendation:
    """The decision rule (docs/tuning.md), in this order:

    1. one process, or no parallelism: keep (nothing to shard);
    2. fewer than MIN_RECORDS records: unknown;
    3. peak memory above NEAR_LIMIT of the memory: one step more sharding; at FULL_SHARD, activation
       checkpointing or offload (offload is applied on CUDA only; checkpointing is the program's);
    4. collectives above COMM_BOUND of the step and the peak below AMPLE_HEADROOM of the memory:
       one step less sharding;
    5. otherwise keep.
    """
    current = dict(strategy or {})
    p = current.get("parallelism") or "none"

    def out(action: str, why: str, target: dict[str, Any] | None = None) -> Recommendation:
        return Recommendation(action, current, target, why, m, memory_bytes)

    if world_size <= 1 or p == "none":
        return out("keep", "one process: there is nothing to shard")
    if m.records < MIN_RECORDS:
        return out("unknown", f"{m.records} metric record(s) in this attempt; the rule needs {MIN_RECORDS}")
    share = m.comm_share
    mem_share = m.peak_mem_bytes / memory_bytes if m.peak_mem_bytes is not None and memory_bytes else None
    comm_text = f"{share:.0%} of each step waits on collectives" if share is not None else "collectives are not timed"
    mem_text = (f"peak memory {_gib(m.peak_mem_bytes)} is {mem_share:.0%} of {_gib(memory_bytes)}"
                if mem_share is not None and m.peak_mem_bytes is not None and memory_bytes else "memory limit unknown")
    level = _level(current)
    if p == "deepspeed":
        stage = int((current.get("config") or {}).get("zero_stage") or 0)
        if mem_share is not None and mem_share > NEAR_LIMIT and stage < 3:
            return out("more_sharding", f"{mem_text}: raise zero_stage to {stage + 1} in the job file and apply")
        if share is not None and share > COMM_BOUND and mem_share is not None and mem_share < AMPLE_HEADROOM \
                and stage > 0:
            return out("less_sharding", f"{comm_text} and {mem_text}: lower zero_stage to {stage - 1} in the job "
                                        "file and apply")
        return out("keep", f"{comm_text}; {mem_text}")
    if level is None:
        return out("keep", f"parallelism {p}: the rule does not apply")
    if mem_share is not None and mem_share > NEAR_LIMIT:
        if level < len(LADDER) - 1:
            return out("more_sharding", f"{mem_text} (above {NEAR_LIMIT:.0%})",
                       switched(current, *LADDER[_step(level, +1)]))
        cfg = current.get("config") or {}
        if m.mem_kind == "cuda" and not cfg.get("cpu_offload"):
            target = copy.deepcopy(current)
            target.setdefault("config", {})["cpu_offload"] = True
            return out("more_sharding", f"{mem_text} (above {NEAR_LIMIT:.0%}) at FULL_SHARD: offload parameters and "
                                        "optimizer state to the CPU, or use activation checkpointing", target)
        return out("more_sharding", f"{mem_text} (above {NEAR_LIMIT:.0%}) at FULL_SHARD: use activation "
                                    "checkpointing, a smaller micro-batch or more GPUs")
    if share is not None and share > COMM_BOUND and level > 0:
        if mem_share is None:
            return out("keep", f"{comm_text}, but the memory limit is unknown: less sharding could run out of memory")
        if mem_share < AMPLE_HEADROOM:
            return out("less_sharding", f"{comm_text} (above {COMM_BOUND:.0%}) and {mem_text} (below "
                                        f"{AMPLE_HEADROOM:.0%})", switched(current, *LADDER[_step(level, -1)]))
    return out("keep", f"{comm_text}; {mem_text}")
