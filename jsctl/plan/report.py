"""`jsctl report cost [JOB] [--since DATE]`: actual cost from state, estimate against actual (pure).

Each state record carries `status` (`started_at` / `ended_at`, unix seconds; no `ended_at` while
running) and `cost_basis` (`price_per_hour` recorded at submit, and the plan's estimate), so a
report does not change when the catalog does. Earlier runs of the same address may sit in
`history` (a list of {status, cost_basis, job_id}). Nothing here reads a clock or a file: the
caller passes the records and `now`.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

from jsctl import JSON_FORMAT_VERSION
from jsctl.config.quantities import parse_duration
from jsctl.model.state import CostBasis, RecordStatus, StateRecord
from jsctl.plan.cost import money


@dataclass(frozen=True)
class CostRow:
    address: str
    job_id: str | None
    cluster: str | None
    phase: str | None
    started_at: float | None  # None = never started
    ended_at: float | None  # None = still running (counted up to `now`)
    hours: float  # billed hours inside the report window
    price_per_hour: float | None  # as recorded at submit
    actual: float | None  # hours × price (None without a recorded price)
    estimate: float | None  # the plan's estimate recorded at submit

    @property
    def running(self) -> bool:
        return self.started_at is not None and self.ended_at is None

    @property
    def difference(self) -> float | None:
        return None if self.actual is None or self.estimate is None else self.actual - self.estimate

    @property
    def name(self) -> str:
        return self.address.rsplit("job.", 1)[-1]

    def to_dict(self) -> dict[str, Any]:
        return {"address": self.address, "job_id": self.job_id, "cluster": self.cluster, "phase": self.phase,
                "started_at": self.started_at, "ended_at": self.ended_at, "running": self.running,
                "hours": round(self.hours, 4), "price_per_hour": self.price_per_hour,
                "actual": None if self.actual is None else round(self.actual, 2),
                "estimate": self.estimate,
                "difference": None if self.difference is None else round(self.difference, 2)}


@dataclass(frozen=True)
class CostReport:
    rows: tuple[CostRow, ...]
    now: float
    since: float | None
    job: str | None

    @property
    def total_actual(self) -> float:
        return round(sum(r.actual or 0.0 for r in self.rows), 2)

    @property
    def total_estimate(self) -> float:
        return round(sum(r.estimate or 0.0 for r in self.rows), 2)

    @property
    def unpriced(self) -> tuple[str, ...]:
        return tuple(r.address for r in self.rows if r.price_per_hour is None and r.hours > 0)

    def to_dict(self) -> dict[str, Any]:
        return {"format_version": JSON_FORMAT_VERSION, "now": self.now, "since": self.since, "job": self.job,
                "total_actual": self.total_actual, "total_estimate": self.total_estimate,
                "unpriced": list(self.unpriced), "rows": [r.to_dict() for r in self.rows]}


def parse_since(text: str, now: float) -> float:
    """`2026-11-01`, `2026-11-01T10:00[:00][Z|+hh:mm]`, `2026-11-01 10:00`, or a span back from now: `7d`, `36h`.

    Dates without a zone are UTC.
    """
    t = text.strip()
    if re.fullmatch(r"(?:[0-9]+d)?(?:[0-9]+h)?(?:[0-9]+m)?(?:[0-9]+s)?", t) and t:
        return now - parse_duration(t)
    try:
        when = dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--since: not a date or a span: {text!r} (try 2026-11-01, 2026-11-01T09:30 or 7d)")
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return when.timestamp()


Records = Mapping[str, "StateRecord | Mapping[str, Any]"] | Iterable["StateRecord | Mapping[str, Any]"]


def _runs(record: StateRecord) -> Iterable[tuple[str | None, RecordStatus, CostBasis]]:
    for old in record.history:
        yield old.job_id, old.status, old.cost_basis
    yield record.job_id, record.status, record.cost_basis


def _matches(job: str, address: str, job_id: str | None) -> bool:
    return job in (address, job_id) or address.endswith(f"job.{job}") or address == f"job.{job}"


def _typed(record: StateRecord | Mapping[str, Any], address: str) -> StateRecord:
    return record if isinstance(record, StateRecord) else StateRecord.from_dict(record, address)


def _items(records: Records) -> list[tuple[str, StateRecord]]:
    if isinstance(records, Mapping):
        return [(str(a), _typed(r, str(a))) for a, r in records.items() if isinstance(r, (Mapping, StateRecord))]
    out = []
    for r in records:
        if isinstance(r, StateRecord):
            out.append((r.address, r))
        elif isinstance(r, Mapping):
            out.append((str(r.get("address")), _typed(r, str(r.get("address")))))
    return out


def cost_rows(address: str, record: StateRecord | Mapping[str, Any], now: float,
              since: float | None = None) -> list[CostRow]:
    """One row per run of a record (history first), clipped to [since, now]."""
    record = _typed(record, address)
    rows = []
    for job_id, status, basis in _runs(record):
        start, end = status.started_at, status.ended_at
        price = basis.price_per_hour
        if since is not None and (start is None or (end is not None and end < since)):
            continue
        hours = 0.0
        if start is not None:
            lo = max(start, since) if since is not None else start
            hi = end if end is not None else now
            hours = max(0.0, hi - lo) / 3600.0
        actual = round(hours * price, 2) if price is not None else (0.0 if start is None else None)
        rows.append(CostRow(address, job_id, record.cluster, status.phase, start, end, hours, price, actual,
                            basis.expected()))
    return rows


def cost_report(records: Records, now: float, job: str | None = None, since: float | None = None) -> CostReport:
    """Rows for every job (or the one named by address, name or job id), oldest start first."""
    rows: list[CostRow] = []
    for address, record in _items(records):
        if job and not _matches(job, address, record.job_id) and not any(h.job_id == job for h in record.history):
            continue
        rows.extend(cost_rows(address, record, now, since))
    rows.sort(key=lambda r: (r.started_at if r.started_at is not None else float("inf"), r.address))
    return CostReport(tuple(rows), now, since, job)


def running_cost(record: StateRecord | Mapping[str, Any], now: float) -> float | None:
    """What a record's current run has cost so far ($ so far in `status` and `cluster status`)."""
    record = _typed(record, "")
    rows = cost_rows(record.address, replace(record, history=()), now)
    return rows[-1].actual if rows else None


@dataclass(frozen=True)
class ClusterCost:
    """The jsctl jobs running on one cluster and what they cost (for `jsctl cluster status`)."""

    cluster: str
    jobs: tuple[str, ...]  # addresses of running jobs
    per_hour: float  # Σ recorded $/h of the running jobs
    so_far: float  # Σ what their current runs have cost up to `now`

    def text(self) -> str:
        n = len(self.jobs)
        if not n:
            return "no jsctl jobs running"
        return (f"{n} jsctl job{'s' if n != 1 else ''} running ({', '.join(self.jobs)}): "
                f"{money(self.per_hour)}/h, {money(self.so_far)} so far")


def cluster_costs(records: Records, now: float) -> dict[str, ClusterCost]:
    """Running jsctl jobs and their running cost, per cluster."""
    found: dict[str, list[tuple[str, float, float]]] = {}
    for address, record in _items(records):
        if record.status.started_at is None or record.status.ended_at is not None:
            continue
        found.setdefault(str(record.cluster), []).append(
            (address, record.cost_basis.price_per_hour or 0.0,
             running_cost(replace(record, address=address), now) or 0.0))
    return {c: ClusterCost(c, tuple(a for a, _, _ in sorted(v)), round(sum(p for _, p, _ in v), 4),
                           round(sum(x for _, _, x in v), 2)) for c, v in sorted(found.items())}


def _when(ts: float | None) -> str:
    if ts is None:
        return "—"
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")


def _num(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "—"
    return f"{x:+,.2f}" if signed else f"{x:,.2f}"


def format_report(report: CostReport) -> str:
    """The table `jsctl report cost` prints, then a total line (times in UTC)."""
    if not report.rows:
        what = f" for {report.job}" if report.job else ""
        return f"No job runs{what}" + (f" since {_when(report.since)} UTC." if report.since is not None else ".")
    head = ("JOB", "ID", "CLUSTER", "PHASE", "STARTED (UTC)", "ENDED (UTC)", "HOURS", "$/h", "ACTUAL", "ESTIMATE",
            "DIFF")
    table = [head]
    for r in report.rows:
        ended = "running" if r.running else _when(r.ended_at)
        table.append((r.name, r.job_id or "—", r.cluster or "—", r.phase or "—", _when(r.started_at), ended,
                      f"{r.hours:,.2f}", _num(r.price_per_hour), _num(r.actual), _num(r.estimate),
                      _num(r.difference, signed=True)))
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    numeric = set(range(6, len(head)))
    lines = ["  ".join(c.rjust(widths[i]) if i in numeric and n else c.ljust(widths[i])
                       for i, c in enumerate(row)).rstrip() for n, row in enumerate(table)]
    runs = len(report.rows)
    total = f"Total: {money(report.total_actual)} actual"
    if any(r.estimate is not None for r in report.rows):
        total += f" (estimated {money(report.total_estimate)})"
    total += f" for {runs} run{'s' if runs != 1 else ''}"
    if report.since is not None:
        total += f" since {_when(report.since)} UTC"
    if any(r.running for r in report.rows):
        total += f"; running jobs counted up to {_when(report.now)} UTC"
    lines.append(total + ".")
    if report.unpriced:
        lines.append(f"No price recorded for {', '.join(sorted(set(report.unpriced)))}: not counted.")
    return "\n".join(lines)


def report_json(report: CostReport) -> dict[str, Any]:
    return report.to_dict()
