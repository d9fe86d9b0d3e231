"""Day-two verbs on jobs in state: status, describe, logs, stop, pause, resume, scale, metrics.

Each takes a job reference (name, address, job id or handle), acts through the job's provider
client, records what it did in state, and returns typed data for the CLI to print.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Iterator

from jsctl.api.live import Echo, observe, refresh, store_for
from jsctl.model.state import NotSubmitted, State, StateRecord
from jsctl.model.status import JobHandle

if TYPE_CHECKING:
    from jsctl.config.workspace import Workspace
    from jsctl.metrics import MetricsSummary
    from jsctl.providers.base import ProviderClient

OnLockWait = Callable[[dict], None]  # told the holder's lock info once, when the state lock is busy


@dataclass(frozen=True)
class JobStatus:
    """One job as `jsctl status` shows it: jsctl's phase beside the engine's own state."""

    address: str
    name: str
    job_id: str | None
    handle: JobHandle | None
    phase: str
    engine_state: str | None
    reason: str | None
    exit_code: int | None
    restarts: int
    started_at: float | None
    ended_at: float | None
    submitted_at: float | None
    cost_so_far: float | None  # recorded $/h × run time up to now (or the end)

    def to_dict(self) -> dict[str, Any]:
        return {"address": self.address, "name": self.name, "job_id": self.job_id,
                "handle": str(self.handle) if self.handle else None, "phase": self.phase,
                "engine_state": self.engine_state, "reason": self.reason, "exit_code": self.exit_code,
                "restarts": self.restarts, "started_at": self.started_at, "ended_at": self.ended_at,
                "submitted_at": self.submitted_at, "cost_so_far": self.cost_so_far}


@dataclass(frozen=True)
class JobDetail:
    """Everything state knows about one job (`jsctl describe`), with its status as just observed.
    A job apply did not submit has `not_submitted`, and a `record` only if an earlier run of it is in
    state (a replace whose new run was not submitted)."""

    status: JobStatus
    record: StateRecord | None
    not_submitted: NotSubmitted | None = None


@dataclass(frozen=True)
class Controlled:
    """What stop, pause, resume or scale did: the verb, the job and its handle."""

    verb: str  # "stop" | "pause" | "resume" | "scale"
    address: str
    handle: JobHandle
    gpus: int | None = None  # scale: the job's GPU count from now on


def find(state: State, ref: str) -> str:
    """The address of the one job `ref` names (a name, address, job id or handle); jobs apply did not
    submit count too."""
    from jsctl.errors import UsageError

    matches = state.find(ref)
    if not matches:
        known = ", ".join(sorted({r.name for r in state.records().values()} |
                                 {n.name for n in state.unsubmitted().values()})) or "none"
        raise UsageError(f"no job {ref!r} in state (jobs: {known})")
    if len(matches) > 1:
        raise UsageError(f"{ref!r} matches several jobs: {', '.join(matches)}; use the full address")
    return matches[0]


def _job_status(record: StateRecord, now: float) -> JobStatus:
    s = record.status
    price = record.cost_basis.price_per_hour
    end = s.ended_at or now
    spent = price * (end - s.started_at) / 3600 if price is not None and s.started_at else None
    return JobStatus(record.address, record.name, record.job_id, record.handle, s.phase, s.engine_state, s.reason,
                     s.exit_code, s.restarts or 0, s.started_at, s.ended_at, record.submitted_at, spent)


def _not_submitted_status(entry: NotSubmitted) -> JobStatus:
    return JobStatus(entry.address, entry.name, entry.job_id, None, NotSubmitted.PHASE, None, entry.reason, None,
                     0, None, None, None, None)


def _row(state: State, address: str, now: float) -> JobStatus:
    """A job's status row: NOT SUBMITTED when the last apply that planned it did not submit it (its
    earlier run, if any, was stopped by that replace), else its record's status."""
    entry = state.unsubmitted().get(address)
    return _not_submitted_status(entry) if entry else _job_status(state.record(address), now)


def status(ws: Workspace, job: str | None = None, echo: Echo | None = None) -> tuple[JobStatus, ...]:
    """Every job in state (or the one named), refreshed from its engine first; jobs apply did not
    submit too, with phase NOT SUBMITTED and the reason."""
    state = store_for(ws).read()
    addresses = [find(state, job)] if job else sorted(set(state.resources) | set(state.not_submitted))
    seen = observe(ws, state, refresh(ws, state, echo))
    now = time.time()
    return tuple(_row(seen, a, now) for a in addresses)


def describe(ws: Workspace, job: str, echo: Echo | None = None) -> JobDetail:
    state = store_for(ws).read()
    address = find(state, job)
    seen = observe(ws, state, refresh(ws, state, echo))
    return JobDetail(_row(seen, address, time.time()), seen.record(address), seen.unsubmitted().get(address))


def _target(ws: Workspace, job: str) -> tuple[str, StateRecord, ProviderClient, JobHandle]:
    from jsctl.errors import UsageError
    from jsctl.providers.registry import Clients

    state = store_for(ws).read()
    address = find(state, job)
    record = state.record(address)
    entry = state.unsubmitted().get(address)
    if record is None and entry is not None:
        raise UsageError(f"{address} was not submitted: {entry.reason}",
                         hint="fix the cause and run jsctl apply again: the next plan creates it")
    if record.handle is None:
        raise UsageError(f"{address} has no job handle in state (it was never submitted)")
    return address, record, Clients(ws).get(record.handle.cluster), record.handle


def logs(ws: Workspace, job: str, node: str | None = None, follow: bool = False,
         tail: int | None = None, metrics: bool = True) -> Iterator[str]:
    """A job's log lines (all nodes, or one); with `follow`, until the job ends. Without `metrics`,
    the runtime's JSON metric lines are left out (`tail` counts the lines that remain; while
    following, the first lines are the engine's last `tail` before the filter)."""
    from collections import deque

    from jsctl.metrics import is_metric_line

    _, _, client, handle = _target(ws, job)
    if metrics:
        return client.logs(handle, node=node, follow=follow, tail=tail)
    if follow or tail is None:
        return (line for line in client.logs(handle, node=node, follow=follow, tail=tail)
                if not is_metric_line(line))
    return iter(deque((line for line in client.logs(handle, node=node) if not is_metric_line(line)), maxlen=tail))


def metrics(ws: Workspace, job: str) -> MetricsSummary:
    """The training metrics the in-job runtime printed to the job's log."""
    from jsctl.metrics import parse_metrics

    _, _, client, handle = _target(ws, job)
    return parse_metrics(client.logs(handle))


def _record(ws: Workspace, address: str, operation: str, event: str, lock_timeout_s: float,
            on_lock_wait: OnLockWait | None, change: Callable[[StateRecord], StateRecord]) -> None:
    """Record in state what a day-two verb did to a job: the changed record and an event."""
    store = store_for(ws)
    with store.locked(operation, lock_timeout_s, on_lock_wait):
        state = store.read()
        record = state.record(address)
        if record is None:  # destroyed while we acted: nothing left to record
            return
        state.put(address, change(record).with_event(event, time.time()))
        store.write(state)


def _control(verb: str, method: str, new_status: dict[str, Any], ws: Workspace, job: str, lock_timeout_s: float,
             on_lock_wait: OnLockWait | None) -> Controlled:
    address, _, client, handle = _target(ws, job)
    getattr(client, method)(handle)
    _record(ws, address, verb, verb, lock_timeout_s, on_lock_wait,
            lambda r: replace(r, status=replace(r.status, **new_status)))
    return Controlled(verb, address, handle)


def stop(ws: Workspace, job: str, lock_timeout_s: float = 0.0, on_lock_wait: OnLockWait | None = None) -> Controlled:
    """Cancel a job (idempotent); it stays in state as CANCELLED, stopped by jsctl (so not drift)."""
    return _control("stop", "cancel", {"phase": "CANCELLED", "reason": "stopped by jsctl stop",
                                       "stopped_by_jsctl": True}, ws, job, lock_timeout_s, on_lock_wait)


def pause(ws: Workspace, job: str, lock_timeout_s: float = 0.0, on_lock_wait: OnLockWait | None = None) -> Controlled:
    return _control("pause", "pause", {"phase": "PAUSED"}, ws, job, lock_timeout_s, on_lock_wait)


def resume(ws: Workspace, job: str, lock_timeout_s: float = 0.0, on_lock_wait: OnLockWait | None = None) -> Controlled:
    return _control("resume", "resume", {"phase": "RUNNING"}, ws, job, lock_timeout_s, on_lock_wait)


def scale(ws: Workspace, job: str, gpus: int, lock_timeout_s: float = 0.0,
          on_lock_wait: OnLockWait | None = None) -> Controlled:
    """Change a running job's GPU count where its provider can. State records the new shape, so the
    next plan shows the job file's difference until gpu.count is changed there too."""
    address, _, client, handle = _target(ws, job)
    client.scale(handle, gpus)

    def scaled(r: StateRecord) -> StateRecord:
        spec = copy.deepcopy(dict(r.spec or {}))
        spec.setdefault("compute", {}).setdefault("resources", {}).setdefault("gpu", {})["count"] = gpus
        return replace(r, spec=spec, placement=dict(r.placement or {}, gpus_per_node=gpus))

    _record(ws, address, "scale", f"scaled to {gpus} GPUs", lock_timeout_s, on_lock_wait, scaled)
    return Controlled("scale", address, handle, gpus)

