"""Day-two verbs on jobs in state: status, describe, logs, stop, pause, resume, scale, metrics, tune.

Each takes a job reference (name, address, job id or handle), acts through the job's provider
client, records what it did in state, and returns typed data for the CLI to print.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from jsctl.api.live import Echo, observe, refresh, store_for
from jsctl.model.state import NotSubmitted, State, StateRecord
from jsctl.model.status import EngineEvent, JobHandle

if TYPE_CHECKING:
    from jsctl.config.workspace import Workspace
    from jsctl.metrics import MetricsSummary
    from jsctl.plan.tuning import Recommendation
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
class ArtifactFile:
    """One file of a submitted job's artifact: state records its digest; the text comes from the engine
    (the run directory, Slurm's copy of the batch script), or from a record an older jsctl wrote."""

    name: str
    digest: str  # "sha256:…", as recorded
    text: str | None  # None: the engine does not hold it (any more)
    matches: bool | None  # whether that text still has the recorded digest (None without text)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "digest": self.digest, "text": self.text, "matches": self.matches}


@dataclass(frozen=True)
class JobDetail:
    """Everything state knows about one job (`jsctl describe`), with its status as just observed.
    A job apply did not submit has `not_submitted`, and a `record` only if an earlier run of it is in
    state (a replace whose new run was not submitted)."""

    status: JobStatus
    record: StateRecord | None
    not_submitted: NotSubmitted | None = None
    recommendation: Recommendation | None = None  # a running job's strategy, judged by what it measured
    events: tuple[EngineEvent, ...] = ()  # what the engine recorded about the job, oldest first
    events_error: str | None = None  # why the engine's events could not be read (describe shows the rest)
    files: tuple[ArtifactFile, ...] = ()  # the artifact's files, their text as the engine holds it


@dataclass(frozen=True)
class Controlled:
    """What stop, resume or scale did: the verb, the job and its handle (pause: `Paused`)."""

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
    entry = state.unsubmitted().get(address) if address in state.not_submitted else None
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
    row = _row(seen, address, time.time())
    advice = None
    if row.phase in ("RUNNING", "PAUSED"):
        from jsctl.errors import JsctlError

        try:
            advice = advise(ws, job)
        except (JsctlError, OSError, ValueError):  # the log cannot be read now: describe shows the rest
            advice = None
    record = seen.record(address)
    events, events_error = _engine_events(ws, record) if record is not None else ((), None)
    files = artifact_files(ws, record) if record is not None else ()
    return JobDetail(row, record, seen.unsubmitted().get(address), advice, events, events_error, files)


def artifact_files(ws: Workspace, record: StateRecord) -> tuple[ArtifactFile, ...]:
    """The recorded artifact's files with their text, best effort: from the record where an older jsctl
    kept it there, else from the engine (ProviderClient.artifact_files); a file the engine no longer
    holds has no text."""
    from jsctl.model.artifact import content_digest, recorded_file_digests
    from jsctl.providers.registry import Clients

    recorded = record.artifact or {}
    digests = recorded_file_digests(recorded)
    texts = {name: value for name, value in recorded.get("files") or () if value != digests.get(name)}
    if len(texts) < len(digests) and record.handle is not None:
        try:
            texts = {**Clients(ws).get(record.handle.cluster).artifact_files(record.handle, recorded), **texts}
        except Exception:  # noqa: BLE001 - an engine that cannot answer: the digests still show
            pass
    return tuple(ArtifactFile(name, digest, texts.get(name),
                              None if name not in texts else content_digest(texts[name]) == digest)
                 for name, digest in digests.items())


def _engine_events(ws: Workspace, record: StateRecord) -> tuple[tuple[EngineEvent, ...], str | None]:
    """The engine's events about a submitted job, best effort: on any failure, none and why (one line)."""
    from jsctl.errors import JsctlError
    from jsctl.providers.registry import Clients

    if record.handle is None:
        return (), None
    try:
        return tuple(Clients(ws).get(record.handle.cluster).events(record.handle)), None
    except JsctlError as e:
        why = str(e)
    except Exception as e:  # noqa: BLE001  (an SDK's or the network's own error: describe still shows the rest)
        why = f"{type(e).__name__}: {e}"
    return (), " ".join(why.split()) or "no reason given"


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


@dataclass(frozen=True)
class Paused:
    """What `pause` did: the job, its handle, the checkpoint step it paused at (None: none known —
    forced, not started, or a checkpoint this machine cannot see) and `how`, the provider's words for
    what happened to it (how it stopped, what it still holds, what is lost)."""

    address: str
    handle: JobHandle
    step: int | None
    forced: bool = False
    verb: str = "pause"
    how: str = ""


def pause(ws: Workspace, job: str, timeout_s: float = 300.0, force: bool = False, lock_timeout_s: float = 0.0,
          on_lock_wait: OnLockWait | None = None) -> Paused:
    """Checkpoint the job, wait up to `timeout_s` for the checkpoint, then release its resources (where its
    provider can); state records PAUSED with the checkpoint step. A job without checkpoints is refused
    unless `force`; a checkpoint that does not complete in time leaves the job running (ProviderError)."""
    address, _, client, handle = _target(ws, job)
    result = client.pause(handle, timeout_s=timeout_s, force=force)
    step = result.step
    event = f"paused at checkpoint step {step}" if step is not None else "paused (no checkpoint)"
    engine = f"paused at step {step}" if step is not None else None
    _record(ws, address, "pause", event, lock_timeout_s, on_lock_wait,
            lambda r: replace(r, status=replace(r.status, phase="PAUSED",
                                                engine_state=engine or r.status.engine_state)))
    return Paused(address, handle, step, forced=force and step is None, how=result.how)


def resume(ws: Workspace, job: str, lock_timeout_s: float = 0.0, on_lock_wait: OnLockWait | None = None) -> Controlled:
    return _control("resume", "resume", {"phase": "RUNNING"}, ws, job, lock_timeout_s, on_lock_wait)


@dataclass(frozen=True)
class ScalePlan:
    """What `scale` would do, planned before it acts: the job's shape now and the new one on the same
    cluster and pool (placement rules, GPU memory fit), and what the change costs per hour."""

    address: str
    handle: JobHandle
    gpus: int
    old: Mapping[str, Any]  # the recorded placement
    new: Mapping[str, Any] | None  # the planned placement (None: it cannot run so)
    reasons: tuple[str, ...] = ()  # why it cannot (new is None)
    notes: tuple[str, ...] = ()  # how it would run (packing), memory per GPU

    @property
    def feasible(self) -> bool:
        return self.new is not None

    @property
    def delta_per_hour(self) -> float | None:
        old, new = (self.old or {}).get("price_per_hour"), (self.new or {}).get("price_per_hour")
        return None if old is None or new is None else float(new) - float(old)

    def describe(self) -> str:
        from jsctl.plan.cost import money, signed

        def shape(p: Mapping[str, Any]) -> str:
            nodes, per = int(p.get("nodes") or 1), int(p.get("gpus_per_node") or 0)
            return f"{nodes} node{'s' if nodes != 1 else ''} × {per} GPU{'s' if per != 1 else ''}"

        lines = [f"{self.address} ({self.handle}): {shape(self.old)} → "
                 + (shape(self.new) if self.new else f"{self.gpus} GPUs")
                 + f" on {self.old.get('cluster')}/{self.old.get('pool')}"]
        if self.new is None:
            lines += [f"  cannot: {r}" for r in self.reasons]
            return "\n".join(lines)
        lines += [f"  note: {n}" for n in self.notes]
        old, new = self.old.get("price_per_hour"), self.new.get("price_per_hour")
        if old is not None and new is not None:
            lines.append(f"  cost: {money(float(old))}/h → {money(float(new))}/h ({signed(float(new) - float(old))}/h)")
        else:
            lines.append("  cost: not priced (the cluster has no rate)")
        return "\n".join(lines)


def plan_scale(ws: Workspace, job: str, gpus: int) -> ScalePlan:
    """Plan a job's new GPU count on its cluster and pool: the placement rules (GPUs per node, nodes,
    cpu/memory per GPU), the model's GPU memory fit where the job describes its model, and the price."""
    import os

    from jsctl.config.spec import build
    from jsctl.errors import JsctlError
    from jsctl.plan import catalog, memory
    from jsctl.plan.placement import place
    from jsctl.providers import registry

    address, record, client, handle = _target(ws, job)
    old = dict(record.placement or {})
    doc = copy.deepcopy(dict(record.spec or {}))
    resources = doc.setdefault("compute", {}).setdefault("resources", {})
    gpu = resources.setdefault("gpu", {})  # a job without GPUs: its provider says whether it can take some
    gpu["count"] = gpus
    per_node = gpu.get("per_node")
    if per_node and gpus % int(per_node):
        gpu.pop("per_node")  # the file's per_node cannot hold the new count: let placement choose
    spec = build(doc, os.path.join(ws.dir, f"{record.name}.yaml"))
    cluster = ws.cluster(record.cluster or "")
    if cluster is None:
        return ScalePlan(address, handle, gpus, old, None, (f"cluster {record.cluster} is not in the workspace",))
    try:
        facts = client.probe()
    except (JsctlError, OSError):
        facts = None
    offers = [o for o in registry.get(cluster.provider).offers(cluster, facts, catalog.load(ws.catalog))
              if o.pool == old.get("pool")]
    shape = memory.model_shape(spec, ws.dir)
    result = place(spec, offers, (), shape)
    if result.placement is None:
        reasons = tuple(r for c in result.candidates[:1] for r in c.reasons) or ((result.why or "no placement"),)
        return ScalePlan(address, handle, gpus, old, None, reasons)
    chosen = result.chosen
    notes = list(chosen.notes if chosen else ())
    new = result.placement.to_dict()
    from jsctl.plan.advisor import gpu_memory_bytes

    if shape is None:
        notes.append("GPU memory: the job does not describe its model, so the fit per GPU is not estimated")
    elif gpu_memory_bytes(new.get("gpu_type")) is None:
        notes.append("GPU memory: the pool names no GPU model, so the fit per GPU is not checked")
    else:
        notes.append(f"GPU memory: the model fits {new.get('gpu_type')} on {new.get('nodes')} × "
                     f"{new.get('gpus_per_node')} (the placement's memory rule)")
    return ScalePlan(address, handle, gpus, old, new, (), tuple(notes))


def scale(ws: Workspace, job: str, gpus: int, lock_timeout_s: float = 0.0,
          on_lock_wait: OnLockWait | None = None, planned: ScalePlan | None = None) -> Controlled:
    """Change a running (or paused) job's GPU count where its provider can: checkpoint, the new shape,
    restore resharded. `planned`: what plan_scale showed (planned here when None; refused when it cannot
    run so). State records the new shape, so the next plan shows the job file's difference until
    gpu.count is changed there too."""
    import inspect

    from jsctl.errors import UsageError

    address, _, client, handle = _target(ws, job)
    plan = planned or plan_scale(ws, job, gpus)
    if not plan.feasible:
        raise UsageError(f"{address} cannot run on {gpus} GPUs: " + "; ".join(plan.reasons))
    new = dict(plan.new or {})
    if "shape" in inspect.signature(client.scale).parameters:
        client.scale(handle, gpus, shape=new)
    else:
        client.scale(handle, gpus)

    def scaled(r: StateRecord) -> StateRecord:
        spec = copy.deepcopy(dict(r.spec or {}))
        gpu = spec.setdefault("compute", {}).setdefault("resources", {}).setdefault("gpu", {})
        gpu["count"] = gpus
        if gpu.get("per_node") and new.get("gpus_per_node") and gpu["per_node"] != new["gpus_per_node"]:
            gpu.pop("per_node")
        if not new:
            return replace(r, spec=spec, placement=dict(r.placement or {}, gpus_per_node=gpus))
        placement = dict(r.placement or {}, **{k: new[k] for k in ("nodes", "gpus_per_node", "cpus_per_task",
                                                                   "memory_per_node", "price_per_hour") if k in new})
        cost = replace(r.cost_basis, price_per_hour=new.get("price_per_hour", r.cost_basis.price_per_hour))
        return replace(r, spec=spec, placement=placement, cost_basis=cost,
                       status=replace(r.status, phase="RUNNING"))

    _record(ws, address, "scale", f"scaled to {gpus} GPUs", lock_timeout_s, on_lock_wait, scaled)
    return Controlled("scale", address, handle, gpus)


# ---- tuning from what the job measures (docs/tuning.md) ---------------------------------------
@dataclass(frozen=True)
class Tuned:
    """What `tune` found and did: the rule's recommendation, the strategy switched to (None: nothing
    applied) and the job's handle."""

    address: str
    handle: JobHandle
    recommendation: Recommendation
    applied: Mapping[str, Any] | None = None


def _memory_limit(record: StateRecord, client: ProviderClient) -> int | None:
    """One worker's memory: the placement's GPU model, else what the provider says (local: a share of
    the host's memory, or its memory_per_worker setting)."""
    from jsctl.model import gpus

    placement = dict(record.placement or {})
    if not placement.get("emulated") and placement.get("gpu_type"):
        gpu = gpus.model(str(placement["gpu_type"]))
        if gpu is not None:
            return int(gpu.memory_gib * 2**30)
    return client.memory_per_worker(placement)


def _recommend(record: StateRecord, client: ProviderClient, summary: MetricsSummary) -> Recommendation:
    from jsctl.plan.tuning import measure, recommend

    strategy = dict(record.strategy or {})
    if not strategy and summary.parallelism:
        strategy = {"parallelism": summary.parallelism, "config": (
            {"sharding_strategy": summary.sharding_strategy} if summary.sharding_strategy else {})}
    placement = dict(record.placement or {})
    world = summary.world_size or max(int(placement.get("nodes") or 1) * int(placement.get("gpus_per_node") or 1), 1)
    return recommend(strategy, measure(summary.samples, summary.mem_kind), _memory_limit(record, client), world)


def advise(ws: Workspace, job: str, summary: MetricsSummary | None = None) -> Recommendation:
    """The tuning rule's verdict on a job's strategy from the metrics of its current attempt
    (`summary`: what `metrics` returned, else read from the job's log now)."""
    from jsctl.metrics import parse_metrics

    _, record, client, handle = _target(ws, job)
    return _recommend(record, client, summary if summary is not None else parse_metrics(client.logs(handle)))


def tune(ws: Workspace, job: str, apply: bool = False, to: str | None = None, lock_timeout_s: float = 0.0,
         on_lock_wait: OnLockWait | None = None) -> Tuned:
    """The rule's recommendation for a job's strategy; with `apply`, switch the running job to it (or to
    `to`: ddp, fsdp, fsdp:SHARDING) through checkpoint, restart and resharded restore, where its
    provider can. State records the new strategy, so the next plan shows the job file's difference."""
    from jsctl.errors import UsageError
    from jsctl.metrics import parse_metrics
    from jsctl.plan.tuning import label, parse_target

    address, record, client, handle = _target(ws, job)
    advice = _recommend(record, client, parse_metrics(client.logs(handle)))
    target = parse_target(to, advice.current) if to else (advice.target if advice.wrong else None)
    if not apply:
        return Tuned(address, handle, advice, None)
    if target is None:
        raise UsageError(f"nothing to apply to {address}: {advice.describe()}",
                         hint="name a strategy with --to ddp|fsdp[:SHARDING] to switch anyway")
    if dict(target) == dict(advice.current):
        raise UsageError(f"{address} already runs with {label(target)}")
    client.tune(handle, target)

    def tuned(r: StateRecord) -> StateRecord:
        spec = copy.deepcopy(dict(r.spec or {}))
        section = spec.setdefault("strategy", {})
        section["parallelism"] = target["parallelism"]
        config = dict(section.get("config") or {})
        sharding = (target.get("config") or {}).get("sharding_strategy")
        if target["parallelism"] == "fsdp" and sharding:
            config["sharding_strategy"] = sharding
        else:
            for key in ("sharding_strategy", "cpu_offload"):
                config.pop(key, None)
        if (target.get("config") or {}).get("cpu_offload"):
            config["cpu_offload"] = True
        if config:
            section["config"] = config
        else:
            section.pop("config", None)
        return replace(r, spec=spec, strategy=dict(target))

    _record(ws, address, "tune", f"strategy switched to {label(target)}", lock_timeout_s, on_lock_wait, tuned)
    return Tuned(address, handle, advice, dict(target))
