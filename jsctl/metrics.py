"""Read the metric lines jsruntime prints and summarise them for ``jsctl metrics``.

Pure Python: no torch import (the CLI must stay fast).  A metric line is a JSON object
whose first key is ``"jetstream"`` (``metrics``, ``checkpoint`` or ``event``); any other
line, and any text before the object on a line (log prefixes), is ignored.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

METRIC_FIELDS = ("loss", "lr", "step_time_s", "compute_s", "comm_s", "samples_per_s", "tokens_per_s", "peak_mem_bytes")
SAMPLE_FIELDS = ("step_time_s", "compute_s", "comm_s", "peak_mem_bytes")
"""What each metric record of the current attempt keeps in `MetricsSummary.samples` (for tuning)."""
_SPARK = "▁▂▃▄▅▆▇█"
_MARK = '{"jetstream"'


@dataclass(frozen=True)
class MetricStats:
    latest: float
    mean: float
    min: float
    max: float
    count: int


@dataclass(frozen=True)
class CheckpointRecord:
    step: int
    blocking_s: float | None
    write_s: float | None
    mode: str | None
    path: str | None
    time: float | None


@dataclass(frozen=True)
class MetricsSummary:
    job: str | None = None
    step: int | None = None
    mem_kind: str | None = None
    records: int = 0
    stats: Mapping[str, MetricStats] = field(default_factory=lambda: MappingProxyType({}))
    last_checkpoint: CheckpointRecord | None = None
    checkpoints: int = 0
    loss_series: tuple[tuple[int, float], ...] = ()
    throughput_series: tuple[tuple[int, float], ...] = ()
    tokens_series: tuple[tuple[int, float], ...] = ()
    restores: tuple[tuple[int, int], ...] = ()  # (step restored, restart count)
    last_event: str | None = None
    last_time: float | None = None
    samples: tuple[Mapping[str, float], ...] = ()  # the current attempt's records (SAMPLE_FIELDS + step)
    parallelism: str | None = None  # as the current attempt's start event reported it
    sharding_strategy: str | None = None
    world_size: int | None = None

    def latest(self, name: str) -> float | None:
        s = self.stats.get(name)
        return s.latest if s else None

    @property
    def averages(self) -> dict[str, float]:
        return {k: v.mean for k, v in self.stats.items()}


def _parse_line(line: str) -> dict[str, Any] | None:
    start = line.find(_MARK)
    if start < 0:
        return None
    try:
        rec = json.loads(line[start:].strip())
    except (json.JSONDecodeError, ValueError):
        return None
    return rec if isinstance(rec, dict) and isinstance(rec.get("jetstream"), str) else None


def is_metric_line(line: str) -> bool:
    """Whether a log line is one of the runtime's metric lines (the ones ``parse_metrics`` reads);
    ``jsctl logs`` hides them unless asked (``--metrics``)."""
    return _parse_line(line) is not None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def parse_metrics(lines: Iterable[str]) -> MetricsSummary:
    """Summarise jsruntime's JSON lines (e.g. a job's stdout); other lines are ignored."""
    values: dict[str, list[float]] = {}
    latest: dict[str, float] = {}
    series: dict[str, dict[int, float]] = {"loss": {}, "samples_per_s": {}, "tokens_per_s": {}}
    job = mem_kind = last_event = None
    step = None
    records = checkpoints = 0
    last_ckpt = None
    last_time = None
    restores: list[tuple[int, int]] = []
    samples: list[dict[str, float]] = []
    parallelism = sharding = world_size = None
    for line in lines:
        rec = _parse_line(line)
        if rec is None:
            continue
        kind = rec["jetstream"]
        job = rec.get("job", job)
        last_time = _number(rec.get("time")) or last_time
        if kind == "metrics":
            records += 1
            if isinstance(rec.get("step"), int):
                step = rec["step"]
            mem_kind = rec.get("mem_kind", mem_kind)
            for name in METRIC_FIELDS:
                v = _number(rec.get(name))
                if v is None:
                    continue
                values.setdefault(name, []).append(v)
                latest[name] = v
                if name in series and step is not None:
                    series[name][step] = v  # a replay after a restart overwrites its steps
            sample = {n: v for n in SAMPLE_FIELDS if (v := _number(rec.get(n))) is not None}
            if step is not None:
                sample["step"] = float(step)
            samples.append(sample)
        elif kind == "checkpoint" and isinstance(rec.get("step"), int):
            checkpoints += 1
            last_ckpt = CheckpointRecord(
                rec["step"], _number(rec.get("blocking_s")), _number(rec.get("write_s")),
                rec.get("mode"), rec.get("path"), _number(rec.get("time")),
            )
        elif kind == "event":
            last_event = rec.get("event", last_event)
            if rec.get("event") == "start":  # a new attempt (maybe another strategy or shape): measure it alone
                samples = []
                parallelism, sharding = rec.get("parallelism"), rec.get("sharding_strategy")
                world_size = rec.get("world_size") if isinstance(rec.get("world_size"), int) else None
            if rec.get("event") == "restore" and isinstance(rec.get("step"), int):
                restores.append((rec["step"], int(rec.get("restart_count") or 0)))
    stats = {
        name: MetricStats(latest[name], sum(vs) / len(vs), min(vs), max(vs), len(vs))
        for name, vs in values.items()
    }
    return MetricsSummary(
        job=job, step=step, mem_kind=mem_kind, records=records, stats=MappingProxyType(stats),
        last_checkpoint=last_ckpt, checkpoints=checkpoints,
        loss_series=tuple(sorted(series["loss"].items())),
        throughput_series=tuple(sorted(series["samples_per_s"].items())),
        tokens_series=tuple(sorted(series["tokens_per_s"].items())),
        restores=tuple(restores), last_event=last_event, last_time=last_time,
        samples=tuple(MappingProxyType(x) for x in samples), parallelism=parallelism, sharding_strategy=sharding,
        world_size=world_size,
    )


# ---- rendering ------------------------------------------------------------------------
def sparkline(values: list[float], width: int = 10) -> str:
    """``width`` bars over the whole series (bucket means), scaled between min and max."""
    if not values:
        return ""
    if len(values) > width:
        buckets = [values[i * len(values) // width:(i + 1) * len(values) // width] for i in range(width)]
        values = [sum(b) / len(b) for b in buckets if b]
    lo, hi = min(values), max(values)
    if hi - lo <= 1e-12 * max(1.0, abs(hi)):
        return _SPARK[3] * len(values)
    return "".join(_SPARK[min(7, int((v - lo) / (hi - lo) * 8))] for v in values)


def human(value: float) -> str:
    """412000 -> '412k', 1.5e6 -> '1.5M', 12.34 -> '12.3'."""
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{unit}"
    return f"{value:.3g}"


def seconds(value: float) -> str:
    if value < 1:
        return f"{value * 1000:.3g} ms"
    if value < 120:
        return f"{value:.3g} s"
    if value < 7200:
        return f"{value / 60:.3g} min"
    return f"{value / 3600:.3g} h"


def mem(value: float) -> str:
    gib = value / 2**30
    return f"{gib:.1f} GiB" if gib >= 1 else f"{value / 2**20:.0f} MiB"


def _fmt(name: str, value: float) -> str:
    if name == "peak_mem_bytes":
        return mem(value)
    if name in ("step_time_s", "compute_s", "comm_s"):
        return seconds(value)
    if name in ("samples_per_s", "tokens_per_s"):
        return human(value)
    return f"{value:.4g}"


def render_metrics(summary: MetricsSummary, detail: bool = False) -> str:
    """The text ``jsctl metrics JOB`` prints (``detail`` adds averages and a table)."""
    if summary.records == 0 and summary.last_checkpoint is None:
        return "no metrics yet" + (f" (last event: {summary.last_event})" if summary.last_event else "")
    parts = [f"step {summary.step if summary.step is not None else '?'}"]
    loss = summary.latest("loss")
    if loss is not None:
        parts.append(f"loss {loss:.4g} {sparkline([v for _, v in summary.loss_series])}".rstrip())
    sps = summary.latest("samples_per_s")
    if sps is not None:
        parts.append(f"samples/s {human(sps)} {sparkline([v for _, v in summary.throughput_series])}".rstrip())
    tps = summary.latest("tokens_per_s")
    if tps is not None:
        parts.append(f"tokens/s {human(tps)} {sparkline([v for _, v in summary.tokens_series])}".rstrip())
    st = summary.latest("step_time_s")
    if st is not None:
        comm = summary.latest("comm_s")
        parts.append(f"step {seconds(st)}" + (f" ({comm / st:.0%} waiting on collectives)" if comm is not None and st > 0
                                              else ""))
    peak = summary.stats.get("peak_mem_bytes")
    if peak is not None:
        parts.append(f"mem {mem(peak.max)} peak ({summary.mem_kind or '?'})")
    lines = ["   ".join(parts)]
    ck = summary.last_checkpoint
    if ck is None:
        lines.append("checkpoints: none yet")
    else:
        text = f"checkpoints: last at step {ck.step}"
        if ck.blocking_s is not None:
            text += f", blocked training {seconds(ck.blocking_s)}"
        if ck.write_s is not None:
            text += f", written in {seconds(ck.write_s)}"
        if ck.mode:
            text += " (sync)" if ck.mode == "sync" else f" (async, {ck.mode})"
        lines.append(text)
    if summary.restores:
        step, restart = summary.restores[-1]
        lines.append(f"recovered: resumed from checkpoint step {step} (restart {restart}, {len(summary.restores)} restore(s))")
    if detail:
        avg = summary.averages
        bits = [f"{n} {_fmt(n, avg[n])}" for n in ("loss", "step_time_s", "samples_per_s", "tokens_per_s") if n in avg]
        lines.append("averages: " + (", ".join(bits) if bits else "-") + f" over {summary.records} records"
                     + f", {summary.checkpoints} checkpoint(s)")
        lines.append(f"{'metric':<16}{'latest':>12}{'mean':>12}{'min':>12}{'max':>12}")
        for name in METRIC_FIELDS:
            s = summary.stats.get(name)
            if s is not None:
                cells = "".join(f"{_fmt(name, v):>12}" for v in (s.latest, s.mean, s.min, s.max))
                lines.append(f"{name:<16}{cells}")
    return "\n".join(lines)
