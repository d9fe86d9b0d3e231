"""Drift: what changed about a job outside jsctl, from its state record and what its engine says now.

Only the fields in COMPARED count. Everything else an engine reports changes by itself while a job
waits or runs (IGNORED: elapsed and start times, queue position and the PENDING reason text, the node
list, the engine's finer-grained word, restarts, the step) and is never drift: a plan or a
`--refresh-only` plan stays quiet about it. A job its engine forgot after it SUCCEEDED (Slurm purges
finished jobs; a Kubernetes TTL deletes them) is not drift either: it finished, and stays finished.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from jsctl.model.address import job_id
from jsctl.model.spec import JobSpec
from jsctl.model.state import State, StateRecord
from jsctl.model.status import LiveStatus, Phase

COMPARED = ("phase",)  # a job that vanished shows as phase UNKNOWN (the engine's word: gone, missing, ...)
IGNORED = ("engine_state", "reason", "started_at", "ended_at", "exit_code", "restarts", "nodes", "step")
RECOVERABLE = frozenset({Phase.CANCELLED, Phase.UNKNOWN})  # stopped or lost behind jsctl's back


def compared(live: LiveStatus) -> dict[str, Any]:
    """The fields of `live` that drift is computed from."""
    return {name: getattr(live, name) for name in COMPARED}


def known_phase(record: StateRecord) -> Phase:
    """The phase state last recorded; for a job already recorded as forgotten (UNKNOWN) by `jsctl
    status`, the phase it had before."""
    status = record.status
    if status.phase == Phase.UNKNOWN and status.previous_phase is not None:
        return status.previous_phase
    return status.phase


def finished(record: StateRecord, live: LiveStatus | None) -> bool:
    """The job succeeded: its engine says so, or state recorded it and the engine has since forgotten
    it (or was not asked). A finished job is never run again while its file is unchanged."""
    if live is not None and live.phase == Phase.SUCCEEDED:
        return True
    return known_phase(record) == Phase.SUCCEEDED and (live is None or live.phase == Phase.UNKNOWN)


@dataclass(frozen=True)
class Drift:
    """One job's compared fields, before (state) and after (its engine)."""

    address: str
    before: Phase
    after: Phase
    provider: str | None
    engine_state: str
    reason: str | None = None

    @property
    def gone(self) -> bool:
        return self.after == Phase.UNKNOWN

    def text(self) -> str:
        return f'status = "{self.before}" -> "{self.after}" ({self.provider}: {self.engine_state}' + \
            (f", {self.reason}" if self.reason else "") + ")"


def detect(record: StateRecord, live: LiveStatus | None) -> Drift | None:
    """Any change of a COMPARED field since state recorded it (the `--refresh-only` view): phase
    changes and jobs gone; None for a job that is as recorded, or finished and then forgotten."""
    if live is None or finished(record, live) and live.phase != Phase.SUCCEEDED:
        return None
    before = record.status.phase
    if compared(live) == {"phase": before}:
        return None
    return Drift(record.address, before, live.phase, record.provider, live.engine_state, live.reason)


def unexpected(record: StateRecord, live: LiveStatus | None) -> Drift | None:
    """What a plain plan notes as changed outside jsctl: a job stopped or lost behind jsctl's back
    (not one that failed on its own, finished, or was stopped with `jsctl stop`)."""
    if live is None or live.phase not in RECOVERABLE or record.status.stopped_by_jsctl or finished(record, live):
        return None
    before = record.status.phase
    if before == live.phase:  # `jsctl status` already recorded it: show what it was before
        before = record.status.previous_phase or before
    return Drift(record.address, before, live.phase, record.provider, live.engine_state, live.reason)


@dataclass(frozen=True)
class Observation:
    """A job of state refreshed by a `--refresh-only` plan: what its engine said, and the drift in it."""

    address: str
    live: LiveStatus
    drift: Drift | None = None

    def to_dict(self) -> dict[str, Any]:
        live = self.live
        return {"address": self.address, "drift": self.drift.text() if self.drift else None,
                "before": {"phase": self.drift.before, "provider": self.drift.provider} if self.drift else None,
                "after": {"phase": live.phase, "engine_state": live.engine_state, "reason": live.reason,
                          "started_at": live.started_at, "ended_at": live.ended_at, "exit_code": live.exit_code,
                          "restarts": live.restarts, "nodes": list(live.nodes), "step": live.step}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], record: StateRecord | None = None) -> "Observation":
        a = dict(d.get("after") or {})
        live = LiveStatus(a.get("phase") or "UNKNOWN", a.get("engine_state") or "", a.get("reason"),
                          a.get("started_at"), a.get("ended_at"), a.get("exit_code"), int(a.get("restarts") or 0),
                          tuple(a.get("nodes") or ()), a.get("step"))
        b = d.get("before") or {}
        before = b.get("phase")
        drift = (Drift(d["address"], Phase(before), live.phase, b.get("provider") or (record.provider if record else None),
                       live.engine_state, live.reason) if before else None)
        return cls(d["address"], live, drift)


def observations(state: State, live: Mapping[str, LiveStatus], in_scope=lambda address: True) -> tuple[Observation, ...]:
    """Every job of state its engine answered for (within scope), with its drift; a finished job
    its engine forgot is left as state has it."""
    out = []
    for address, record in sorted(state.records().items()):
        status = live.get(address)
        if status is None or not in_scope(address):
            continue
        if finished(record, status) and status.phase != Phase.SUCCEEDED:
            continue  # forgotten after it succeeded: state keeps SUCCEEDED
        out.append(Observation(address, status, detect(record, status)))
    return tuple(out)


def record(state: State, observed: tuple[Observation, ...], now: float) -> int:
    """Write `observed` into `state` (apply --refresh-only); the serial goes up once when anything
    changed. How many records changed."""
    changed = sum(1 for o in observed if state.observe(o.address, o.live, now))
    if changed:
        state.serial += 1
    return changed


# ---- a recovery replacement resumes from the newest complete checkpoint ------------------------------------
# The checkpoint output's path usually holds ${JOB_ID}, which changes with each generation: the
# replacement of a job that failed, was cancelled or vanished keeps the path its previous generation
# wrote (state's `outputs`), so jsruntime finds and restores the newest complete checkpoint there.
# A replacement for a changed job file (its resolved document differs) starts over in its own directory.

def resumed_checkpoint(prior: StateRecord, spec: JobSpec) -> tuple[str, str] | None:
    """(output name, path) of the checkpoint directory the replacement of `prior` keeps."""
    ckpt = spec.checkpoint_output
    path = prior.outputs.get(ckpt.name) if ckpt is not None else None
    return (ckpt.name, path) if path else None


def carried_checkpoint(prior: StateRecord, spec: JobSpec) -> tuple[str, str] | None:
    """The checkpoint directory `prior` kept from an earlier generation (a recovery replacement), when
    `spec` (resolved for prior's generation) still has the same path but for the job id: the job
    keeps it, so that a plan does not see a change there. None otherwise (a path the file changed)."""
    ckpt = spec.checkpoint_output
    path = prior.outputs.get(ckpt.name) if ckpt is not None else None
    if not path or not prior.job_id or path == ckpt.path:
        return None
    for generation in range(1, prior.generation):
        earlier = job_id(prior.name, prior.address, generation)
        if earlier in path and path.replace(earlier, prior.job_id) == ckpt.path:
            return ckpt.name, path
    return None


def keep_checkpoint_path(spec: JobSpec, name: str, path: str) -> JobSpec:
    """`spec` with its output `name` at `path` (in the typed outputs and the resolved document)."""
    import copy
    from dataclasses import replace

    outputs = tuple(replace(o, path=path) if o.name == name else o for o in spec.outputs)
    document = copy.deepcopy(spec.document)
    for entry in ((document.get("storage") or {}).get("outputs") or []):
        if isinstance(entry, dict) and entry.get("name") == name:
            entry["path"] = path
    return replace(spec, outputs=outputs, document=document)


UNSEEN = "unseen"  # checkpoint_steps' value for a directory jsctl cannot see from here


def resume_text(keep: tuple[str, str] | None, step: int | str | None = UNSEEN) -> str:
    """How the plan says where a recovery replacement starts."""
    if keep is None:
        return ""
    if isinstance(step, int):
        return f" and resumes from step {step} (the newest complete checkpoint in {keep[1]})"
    if step is None:
        return f" from the start (no complete checkpoint in {keep[1]} yet)"
    return f" and resumes from the newest complete checkpoint in {keep[1]}"


def latest_step(directory: str) -> int | None:
    """The newest complete checkpoint's step in `directory` (jsruntime's layout: `step-N/COMPLETE`)."""
    import os
    import re

    best = None
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return None
    for entry in entries:
        m = re.fullmatch(r"step-(\d+)", entry.name)
        if m and entry.is_dir() and os.path.isfile(os.path.join(entry.path, "COMPLETE")):
            best = max(best or 0, int(m.group(1)))
    return best
