"""Apply a Plan: under the state lock, walk the DAG, submit, and record each job as soon as it is live.

Apply says what it does through typed events (below) passed to a callback; the CLI prints them as
text, or as JSON lines with `jsctl apply --json` (docs/apply-json.md).
"""
from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from jsctl.config.workspace import Workspace
from jsctl.errors import JsctlError, PlanError, StateError
from jsctl.model.state import CostBasis, NotSubmitted, PastRun, RecordEvent, RecordStatus, State, StateRecord
from jsctl.model.status import JobHandle, LiveStatus
from jsctl.plan import dag
from jsctl.plan.model import Plan, ResourceChange
from jsctl.providers import registry
from jsctl.providers.base import ProviderClient
from jsctl.state.backend import StateBackend as StateStore


# ---- events -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ApplyEvent:
    """Something apply did to one address. `type` names it in JSON (`submit_failed` for SubmitFailed)."""

    address: str

    @property
    def type(self) -> str:
        name = type(self).__name__
        return "".join("_" + ch.lower() if ch.isupper() and i else ch.lower() for i, ch in enumerate(name))

    def to_dict(self) -> dict[str, Any]:
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {"type": self.type, **{k: str(v) if isinstance(v, JobHandle) else v for k, v in values.items()}}


@dataclass(frozen=True)
class Stopping(ApplyEvent):
    """Cancelling the job a delete or replace removes."""

    handle: JobHandle


@dataclass(frozen=True)
class Destroyed(ApplyEvent):
    """The job was cancelled and its record removed from state."""


@dataclass(frozen=True)
class Updated(ApplyEvent):
    """The record took the new spec and artifact; the running job stays."""


@dataclass(frozen=True)
class Waiting(ApplyEvent):
    """Waiting for a dependency on another engine (or one that cannot order jobs) to succeed."""

    dependency: str


@dataclass(frozen=True)
class Skipped(ApplyEvent):
    """Not submitted: a dependency failed, or was not submitted itself."""

    reason: str


@dataclass(frozen=True)
class Adopted(ApplyEvent):
    """The engine already had this job (an earlier apply died before recording it): recorded, not resubmitted."""

    handle: JobHandle
    job_id: str | None


@dataclass(frozen=True)
class Submitted(ApplyEvent):
    handle: JobHandle
    job_id: str | None


@dataclass(frozen=True)
class SubmitFailed(ApplyEvent):
    message: str


OnEvent = Callable[[ApplyEvent], None]


@dataclass(frozen=True)
class ApplyResult:
    """What apply did (the last line of `apply --json`): counts, and the jobs it did not submit."""

    added: int = 0
    changed: int = 0
    destroyed: int = 0
    skipped: dict[str, str] = field(default_factory=dict)  # address -> why it was not submitted
    failed: dict[str, str] = field(default_factory=dict)  # address -> the engine's message
    refreshed: int = 0  # apply --refresh-only: jobs whose drift was recorded in state

    @property
    def ok(self) -> bool:
        return not self.skipped and not self.failed

    @property
    def not_submitted(self) -> dict[str, str]:
        """Every job this apply did not submit, and why (state keeps them: `jsctl status` shows them)."""
        return {**{a: f"submit failed: {m}" for a, m in self.failed.items()}, **self.skipped}

    def to_dict(self) -> dict[str, Any]:
        return {"type": "summary", "ok": self.ok, "added": self.added, "changed": self.changed,
                "destroyed": self.destroyed, "skipped": dict(self.skipped), "failed": dict(self.failed)}


# ---- apply ------------------------------------------------------------------------------------------

def check_fresh(plan: Plan, state: State, state_exists: bool) -> None:
    if plan.state_exists and (state.lineage != plan.prior_lineage or state.serial != plan.prior_serial):
        raise PlanError(f"the saved plan is stale: it was made against state serial {plan.prior_serial}, "
                        f"lineage {plan.prior_lineage[:8]}…, and the state is now serial {state.serial}, "
                        f"lineage {state.lineage[:8]}…", hint="run jsctl plan again and apply the new plan")
    if not plan.state_exists and state_exists and state.resources:
        raise PlanError("the saved plan is stale: it was made before any state existed, and state exists now",
                        hint="run jsctl plan again and apply the new plan")


def secret_values(plan: Plan) -> dict[str, str]:
    needed = sorted({s for c in plan.changes if c.action in ("create", "replace") for s in c.secrets})
    missing = [s for s in needed if s not in os.environ]
    if missing:
        raise JsctlError(f"secret{'s' if len(missing) > 1 else ''} not set in your environment: "
                         f"{', '.join(missing)}", hint="export them before apply; their values are passed to "
                         "the job and never written to plan files or state")
    return {s: os.environ[s] for s in needed}


def new_record(c: ResourceChange, handle: JobHandle, now: float) -> StateRecord:
    """The state record of a job just submitted (or adopted) for a planned change."""
    return StateRecord(
        address=c.address, name=c.name, generation=int(c.generation or 1), provider=c.provider, cluster=c.cluster,
        job_id=c.job_id, handle=handle, spec=c.spec, artifact_digest=c.artifact.digest if c.artifact else None,
        artifact=c.artifact.to_record() if c.artifact else None,
        placement=c.placement.to_dict() if c.placement else None, strategy=dict(c.strategy),
        depends_on=tuple(c.depends_on), outputs=dict(c.outputs), status=RecordStatus.submitted(),
        created_at=now, updated_at=now, submitted_at=now,
        cost_basis=CostBasis(c.price_per_hour, c.placement.capacity if c.placement else None,
                             c.cost.bound if c.cost else c.run_bound, c.cost.expected if c.cost else c.run_bound),
        events=(RecordEvent(now, f"submitted as {handle}"),))


def apply(plan: Plan, workspace: Workspace, store: StateStore, on_event: OnEvent | None = None,
          poll_s: float = 1.0) -> ApplyResult:
    """Carry out a plan, telling `on_event` each step. The caller holds the state lock."""
    emit = on_event or (lambda event: None)
    if not plan.has_changes:
        return ApplyResult()
    state = store.read()
    check_fresh(plan, state, store.exists_at_read)
    if plan.refresh_only:  # --- drift: record the refreshed statuses; nothing is submitted or cancelled
        from jsctl.plan.drift import record

        if record(state, plan.observed, time.time()):
            store.write(state)
        return ApplyResult(refreshed=sum(1 for o in plan.observed if o.drift))
    secrets = secret_values(plan)
    recorder = _Recorder(store, state)
    try:
        result = _apply(plan, workspace, state, recorder, secrets, emit, poll_s)
        recorder.flush()
    except StateError as exc:
        raise recorder.failed(exc) from exc
    except BaseException:
        recorder.flush_quietly()  # what was recorded in a batch is not kept waiting
        raise
    return result


class _Recorder:
    """Records each change in state as apply goes (StateBackend.record: a journal line, or a batch),
    and knows which submitted jobs are not durably recorded yet, to name them if a write fails."""

    def __init__(self, store: StateStore, state: State) -> None:
        self.store, self.state = store, state
        self.unsaved: list[str] = []
        self.dirty = False  # something was recorded since the last flush

    def __call__(self, address: str, handle: JobHandle | None = None, done: str = "submitted") -> None:
        """Record what `state` holds at `address`; `handle`: the job this change submitted (or cancelled)."""
        self.dirty = True
        if handle is not None:
            self.unsaved.append(f"{address}: {done} {handle}")
        if self.store.record(self.state, [address]):
            self.unsaved.clear()

    def flush(self) -> None:
        if self.dirty:
            self.store.flush(self.state)
        self.dirty = False
        self.unsaved.clear()

    def flush_quietly(self) -> None:
        try:
            self.flush()
        except StateError:
            pass

    def failed(self, exc: StateError) -> StateError:
        if not self.unsaved:
            return exc
        jobs = "\n  ".join(self.unsaved)
        return StateError(f"{exc.message}\nDone on the engines but not recorded in state:\n  {jobs}",
                          hint="nothing is lost: the next jsctl apply finds the submitted jobs on their engine and "
                               "adopts them instead of submitting them again (a cancelled one is cancelled again, "
                               "which does nothing). If the state lock could not be released, its lease expires "
                               "by itself (JSCTL_LOCK_LEASE, 60 s by default)")


def _apply(plan: Plan, workspace: Workspace, state: State, store: _Recorder, secrets: dict[str, str],
           emit: OnEvent, poll_s: float) -> ApplyResult:
    """apply's walk; `store(address)` records each change as it is made."""
    clients = registry.Clients(workspace)
    added = changed = destroyed = 0
    skipped: dict[str, str] = {}
    failed: dict[str, str] = {}
    for c in plan.changes:
        before = StateRecord.from_dict(c.before, c.address) if c.before else None
        if c.action in ("delete", "replace") and before and before.handle:
            emit(Stopping(c.address, before.handle))
            clients.get(before.handle.cluster).cancel(before.handle)
            if c.action == "delete":
                state.remove(c.address)
                forgotten = _forget_not_submitted(state, c.address)
                store(c.address, before.handle, "cancelled")
                for address in forgotten:
                    store(address)
                destroyed += 1
                emit(Destroyed(c.address))
    blocked: dict[str, str] = {}
    edges = {c.address: c.depends_on for c in plan.changes if c.action != "delete"}
    for c in plan.changes:
        if c.action == "update":
            record = state.record(c.address)
            if record is None:
                raise PlanError(f"{c.address} is not in state any more; it cannot be updated",
                                hint="run jsctl plan again")
            state.put(c.address, replace(record, spec=c.spec,
                                         artifact_digest=c.artifact.digest if c.artifact else None,
                                         artifact=c.artifact.to_record() if c.artifact else None,
                                         updated_at=time.time()))
            store(c.address)
            changed += 1
            emit(Updated(c.address))
            continue
        if c.action not in ("create", "replace"):
            continue
        if c.address in blocked:
            skipped[c.address] = blocked[c.address]
            _record_not_submitted(state, store, c, blocked[c.address])
            emit(Skipped(c.address, blocked[c.address]))
            continue
        upstream = _wait_for_upstream(c, state, store, clients, emit, poll_s)
        if isinstance(upstream, str):  # why it cannot be submitted
            skipped[c.address] = upstream
            _record_not_submitted(state, store, c, upstream)
            emit(Skipped(c.address, upstream))
            for child in dag.descendants(edges, [c.address]):
                blocked.setdefault(child, f"upstream {c.address} was not submitted")
            continue
        client = clients.get(c.cluster)
        try:
            handle = client.adopt(c.artifact)
            if handle is not None:
                emit(Adopted(c.address, handle, c.job_id))
            else:
                handle = client.submit(c.artifact, secrets, upstream)
        except JsctlError as exc:
            failed[c.address] = exc.message
            _record_not_submitted(state, store, c, f"submit failed: {exc.message}")
            emit(SubmitFailed(c.address, exc.message))
            for child in dag.descendants(edges, [c.address]):
                blocked.setdefault(child, f"upstream {c.address} failed to submit")
            continue
        record = new_record(c, handle, time.time())
        prior = StateRecord.from_dict(c.before, c.address) if c.before else state.record(c.address)
        if c.action == "replace" and prior:  # earlier runs stay, for cost reports
            record = replace(record, history=(*prior.history, PastRun(prior.job_id, prior.status, prior.cost_basis)),
                             events=(*prior.events, *record.events))
        state.put(c.address, record)
        store(c.address, handle)
        if c.action == "replace":
            destroyed += 1
        added += 1
        emit(Submitted(c.address, handle, c.job_id))
    return ApplyResult(added, changed, destroyed, skipped, failed)


def _record_not_submitted(state: State, store: _Recorder, c: ResourceChange, reason: str) -> None:
    """Keep in state that `c` was not submitted, and why: status shows it; the next plan creates it."""
    state.mark_not_submitted(NotSubmitted(c.address, c.name, reason, time.time(), c.job_id,
                                          int(c.generation) if c.generation else None, c.provider, c.cluster,
                                          tuple(c.depends_on)))
    store(c.address)


def _forget_not_submitted(state: State, destroyed: str) -> list[str]:
    """A destroy also forgets the jobs of the same workflow that were never submitted (a plan cannot
    name them: they are not resources); their addresses."""
    workflow = destroyed.split(".job.", 1)[0] + ".job." if destroyed.startswith("workflow.") else None
    forgotten = []
    for address, entry in list(state.unsubmitted().items()):
        if destroyed in entry.depends_on or (workflow and address.startswith(workflow)):
            state.not_submitted.pop(address, None)
            forgotten.append(address)
    return forgotten


def _wait_for_upstream(c: ResourceChange, state: State, store: _Recorder, clients: registry.Clients,
                       emit: OnEvent, poll_s: float) -> dict[str, JobHandle] | str:
    """The dependencies' handles for submit, or why the job cannot be submitted. A dependency the
    engine cannot order by itself (another cluster, or no dependency support) is waited for here."""
    ordered_by_engine = c.dependencies_enforced
    upstream: dict[str, JobHandle] = {}
    for dep in c.depends_on:
        record = state.record(dep)
        if record is None or record.handle is None:
            return f"dependency {dep} was not submitted"
        upstream[dep] = record.handle
        if record.handle.cluster == c.cluster and ordered_by_engine:
            continue
        emit(Waiting(c.address, dep))
        store.flush()  # everything submitted so far is in the stored state while apply waits
        live = wait_terminal(clients.get(record.handle.cluster), record.handle, poll_s)
        state.observe(dep, live, time.time())
        store(dep)
        if live.phase != "SUCCEEDED":
            return f"dependency {dep} ended {live.phase}" + (f" ({live.reason})" if live.reason else "")
    return upstream


def wait_terminal(client: ProviderClient, handle: JobHandle, poll_s: float) -> LiveStatus:
    while True:
        live = client.refresh([handle])[handle]
        if live.terminal or live.phase == "UNKNOWN":
            return live
        time.sleep(poll_s)
