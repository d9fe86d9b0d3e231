"""The state document: pure data and the operations on it; no I/O here."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from jsctl import __version__
from jsctl.errors import StateError
from jsctl.model.status import JobHandle, LiveStatus, Phase

FORMAT_VERSION = 1

_NUMBER = (int, float)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, _NUMBER) and not isinstance(value, bool) else None


def _phase(value: Any) -> Phase | None:
    try:
        return Phase(value) if value is not None else None
    except ValueError:  # a word this jsctl does not know
        return Phase.UNKNOWN


@dataclass(frozen=True)
class RecordStatus:
    """The last status jsctl knows of a job (a record's `status`): jsctl's phase beside the engine's word."""

    phase: Phase = Phase.UNKNOWN
    engine_state: str | None = None
    reason: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    restarts: int | None = None
    previous_phase: Phase | None = None  # the phase before the last change
    stopped_by_jsctl: bool = False  # `jsctl stop` ended it, so it is not drift

    @classmethod
    def submitted(cls) -> "RecordStatus":
        return cls(Phase.PENDING, "submitted")

    def observed(self, live: LiveStatus) -> "RecordStatus":
        """This status with what an engine said: every field it knows replaces ours (`reason` always)."""
        new = {"phase": Phase(live.phase), "engine_state": live.engine_state, "reason": live.reason,
               "started_at": live.started_at, "ended_at": live.ended_at, "exit_code": live.exit_code,
               "restarts": live.restarts}
        changed = replace(self, **{k: v for k, v in new.items() if v is not None or k == "reason"})
        if changed.phase != self.phase:
            changed = replace(changed, previous_phase=self.phase)
        return changed

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"phase": self.phase, "engine_state": self.engine_state}
        for key in ("reason", "started_at", "ended_at", "exit_code", "restarts", "previous_phase"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.stopped_by_jsctl:
            out["stopped_by_jsctl"] = True
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "RecordStatus":
        d = d if isinstance(d, (dict, Mapping)) else {}
        restarts = d.get("restarts")
        return cls(_phase(d.get("phase")) or Phase.UNKNOWN, d.get("engine_state"), d.get("reason"),
                   _num(d.get("started_at")), _num(d.get("ended_at")), d.get("exit_code"),
                   int(restarts) if isinstance(restarts, int) else None, _phase(d.get("previous_phase")),
                   bool(d.get("stopped_by_jsctl")))


@dataclass(frozen=True)
class CostBasis:
    """The price recorded at submission, so a cost report survives catalog changes."""

    price_per_hour: float | None = None
    capacity: str | None = None  # on-demand, spot, ...
    bound: float | None = None  # the plan's worst case for the run
    estimate: float | None = None  # the plan's expected cost for the run
    time_limit_s: float | None = None  # older records: price × time limit is the estimate
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys this jsctl does not know, kept as they were

    _KEYS = frozenset(("price_per_hour", "capacity", "bound", "estimate", "time_limit_s"))

    def expected(self) -> float | None:
        """The cost the plan expected for this run."""
        for value in (self.estimate, _num(self.extra.get("expected")), self.bound):
            if value is not None:
                return value
        duration = _num(self.extra.get("duration_s")) or self.time_limit_s
        if self.price_per_hour is not None and duration is not None:
            return round(self.price_per_hour * duration / 3600.0, 2)
        return None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"price_per_hour": self.price_per_hour, "capacity": self.capacity,
                               "bound": self.bound, "estimate": self.estimate}
        if self.time_limit_s is not None:
            out["time_limit_s"] = self.time_limit_s
        return {**out, **self.extra}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "CostBasis":
        d = d if isinstance(d, (dict, Mapping)) else {}
        return cls(_num(d.get("price_per_hour")), d.get("capacity"), _num(d.get("bound")), _num(d.get("estimate")),
                   _num(d.get("time_limit_s")),
                   {} if d.keys() <= cls._KEYS else {k: v for k, v in d.items() if k not in cls._KEYS})


@dataclass(frozen=True)
class RecordEvent:
    """One line of a job's history (`jsctl describe` shows them)."""

    time: float
    event: str

    def to_dict(self) -> dict[str, Any]:
        return {"time": self.time, "event": self.event}


@dataclass(frozen=True)
class PastRun:
    """An earlier run of the same address (kept on replace, for cost reports)."""

    job_id: str | None
    status: RecordStatus
    cost_basis: CostBasis

    def to_dict(self) -> dict[str, Any]:
        return {"job_id": self.job_id, "status": self.status.to_dict(), "cost_basis": self.cost_basis.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "PastRun":
        return cls(d.get("job_id"), RecordStatus.from_dict(d.get("status")), CostBasis.from_dict(d.get("cost_basis")))


@dataclass(frozen=True)
class StateRecord:
    """What state knows of one job (`resources[address]`). `to_dict` writes the state file's shape."""

    address: str
    name: str
    generation: int
    provider: str | None = None
    cluster: str | None = None
    job_id: str | None = None
    handle: JobHandle | None = None
    spec: Mapping[str, Any] | None = None  # the resolved job document
    artifact_digest: str | None = None
    artifact: Mapping[str, Any] | None = None  # the rendered artifact as planned (RenderedArtifact.to_dict)
    placement: Mapping[str, Any] | None = None
    strategy: Mapping[str, Any] = field(default_factory=dict)
    depends_on: tuple[str, ...] = ()
    outputs: Mapping[str, str] = field(default_factory=dict)
    status: RecordStatus = field(default_factory=RecordStatus)
    created_at: float | None = None
    updated_at: float | None = None
    submitted_at: float | None = None
    cost_basis: CostBasis = field(default_factory=CostBasis)
    events: tuple[RecordEvent, ...] = ()
    history: tuple[PastRun, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys this jsctl does not know, kept as they were

    _KEYS = frozenset(("address", "name", "generation", "provider", "cluster", "job_id", "handle", "spec",
                       "artifact_digest", "artifact", "placement", "strategy", "depends_on", "outputs", "status",
                       "created_at", "updated_at", "submitted_at", "cost_basis", "events", "history", "last_status"))

    @property
    def gpus(self) -> int:
        """GPUs the job holds while it runs: nodes × GPUs per node of its placement."""
        p = self.placement or {}
        return int(p.get("nodes") or 1) * int(p.get("gpus_per_node") or 0)

    def with_event(self, text: str, now: float) -> "StateRecord":
        return replace(self, events=(*self.events, RecordEvent(now, text)), updated_at=now)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "address": self.address, "name": self.name, "provider": self.provider, "cluster": self.cluster,
            "job_id": self.job_id, "generation": self.generation,
            "handle": str(self.handle) if self.handle else None, "spec": self.spec,
            "artifact_digest": self.artifact_digest, "artifact": self.artifact, "placement": self.placement,
            "strategy": dict(self.strategy), "depends_on": list(self.depends_on), "outputs": dict(self.outputs),
            "status": self.status.to_dict(), "created_at": self.created_at, "updated_at": self.updated_at,
            "submitted_at": self.submitted_at, "cost_basis": self.cost_basis.to_dict(),
            "events": [e.to_dict() for e in self.events]}
        if self.history:
            out["history"] = [h.to_dict() for h in self.history]
        return {**out, **self.extra}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], address: str | None = None) -> "StateRecord":
        """A record as the state file holds it (at `address`, its key there); missing keys take their
        defaults (older files), unknown ones are kept in `extra`."""
        handle = d.get("handle")
        status = d.get("status") or d.get("last_status")
        return cls(
            address=str(address or d.get("address") or ""),
            name=str(d.get("name") or str(address or d.get("address") or "").rsplit(".", 1)[-1]),
            generation=int(d.get("generation") or 0), provider=d.get("provider"), cluster=d.get("cluster"),
            job_id=d.get("job_id"), handle=JobHandle.parse(handle) if handle else None, spec=d.get("spec"),
            artifact_digest=d.get("artifact_digest"), artifact=d.get("artifact"), placement=d.get("placement"),
            strategy=d.get("strategy") or {}, depends_on=tuple(d.get("depends_on") or ()),
            outputs=d.get("outputs") or {}, status=RecordStatus.from_dict(status),
            created_at=_num(d.get("created_at")), updated_at=_num(d.get("updated_at")),
            submitted_at=_num(d.get("submitted_at")), cost_basis=CostBasis.from_dict(d.get("cost_basis")),
            events=tuple(RecordEvent(float(e.get("time") or 0), str(e.get("event", ""))) for e in d.get("events") or ()
                         if isinstance(e, (dict, Mapping))),
            history=tuple(PastRun.from_dict(h) for h in d.get("history") or () if isinstance(h, (dict, Mapping))),
            extra={} if d.keys() <= cls._KEYS else {k: v for k, v in d.items() if k not in cls._KEYS})


@dataclass(frozen=True)
class NotSubmitted:
    """A job the last apply that planned it did not submit (a dependency failed or was not submitted,
    or the engine refused it): the state document's `not_submitted[address]`. It is not a resource:
    plans never read it, so the next plan creates the job; `jsctl status` and `describe` show it as
    NOT SUBMITTED. Submitting (or destroying) the address removes it."""

    address: str
    name: str
    reason: str
    time: float | None = None
    job_id: str | None = None  # the id the plan gave it
    generation: int | None = None
    provider: str | None = None
    cluster: str | None = None
    depends_on: tuple[str, ...] = ()

    PHASE = "NOT SUBMITTED"  # the phase status shows (not an engine's Phase: nothing ran)

    def to_dict(self) -> dict[str, Any]:
        return {"address": self.address, "name": self.name, "reason": self.reason, "time": self.time,
                "job_id": self.job_id, "generation": self.generation, "provider": self.provider,
                "cluster": self.cluster, "depends_on": list(self.depends_on)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], address: str) -> "NotSubmitted":
        generation = d.get("generation")
        return cls(address, str(d.get("name") or address.rsplit(".", 1)[-1]), str(d.get("reason") or ""),
                   _num(d.get("time")), d.get("job_id"), generation if isinstance(generation, int) else None,
                   d.get("provider"), d.get("cluster"), tuple(d.get("depends_on") or ()))


@dataclass
class State:
    serial: int = 0
    lineage: str = field(default_factory=lambda: str(uuid.uuid4()))
    resources: dict[str, dict] = field(default_factory=dict)
    generations: dict[str, int] = field(default_factory=dict)  # survives destroy: ids are never reused
    # address -> NotSubmitted.to_dict(); written only when not empty, so older files and older jsctl read it
    not_submitted: dict[str, dict] = field(default_factory=dict)

    def to_dict(self) -> dict:
        out = {"format_version": FORMAT_VERSION, "serial": self.serial, "lineage": self.lineage,
               "jsctl_version": __version__, "resources": self.resources, "generations": self.generations}
        if self.not_submitted:
            out["not_submitted"] = self.not_submitted
        return out

    @classmethod
    def from_dict(cls, d: Any, path: str = "state") -> "State":
        if not isinstance(d, dict) or "lineage" not in d or "serial" not in d:
            raise StateError(f"{path} is not a jsctl state file (no serial/lineage)")
        version = d.get("format_version")
        if version != FORMAT_VERSION:
            raise StateError(f"{path} has format_version {version!r}; this jsctl reads {FORMAT_VERSION}",
                             hint="upgrade jsctl")
        not_submitted = d.get("not_submitted")
        return cls(int(d["serial"]), str(d["lineage"]), dict(d.get("resources") or {}),
                   dict(d.get("generations") or {}),
                   {str(a): dict(v) for a, v in not_submitted.items() if isinstance(v, Mapping)}
                   if isinstance(not_submitted, Mapping) else {})

    def copy(self) -> "State":
        """A copy that later changes to either leave alone. Records are replaced whole, never changed in
        place (put, observe, remove), so each record's top level is copied and what it nests is shared:
        a deep copy of 5,000 records took a second."""
        return State(self.serial, self.lineage, {a: dict(r) for a, r in self.resources.items()},
                     dict(self.generations), {a: dict(v) for a, v in self.not_submitted.items()})

    def next_generation(self, address: str) -> int:
        prior = self.resources.get(address)
        if prior:
            return int(prior["generation"])
        return int(self.generations.get(address, 0)) + 1

    def record(self, address: str) -> StateRecord | None:
        """The typed record at `address` (`resources` keeps the file's JSON shape, which plans embed)."""
        d = self.resources.get(address)
        return StateRecord.from_dict(d, address) if d is not None else None

    def records(self) -> dict[str, StateRecord]:
        """Every record, typed, by address (sorted)."""
        return {a: StateRecord.from_dict(d, a) for a, d in sorted(self.resources.items())}

    def put(self, address: str, record: StateRecord | Mapping[str, Any]) -> None:
        d = record.to_dict() if isinstance(record, StateRecord) else dict(record)
        self.resources[address] = d
        self.not_submitted.pop(address, None)
        self.generations[address] = max(int(d["generation"]), int(self.generations.get(address, 0)))
        self.serial += 1

    def observe(self, address: str, live: LiveStatus, now: float) -> bool:
        """Record an observed status. Observations are not configuration: the serial stays, so a
        saved plan is not made stale by someone running `jsctl status`. True when it changed."""
        record = self.record(address)
        if record is None:
            return False
        status = record.status.observed(live)
        if status == record.status:
            return False
        if status.phase != record.status.phase:
            event = f"{record.status.phase} -> {status.phase}" + (f" ({status.reason})" if status.reason else "")
            record = record.with_event(event, now)
        self.resources[address] = replace(record, status=status, updated_at=now).to_dict()
        return True

    def remove(self, address: str) -> None:
        self.not_submitted.pop(address, None)
        if self.resources.pop(address, None) is not None:
            self.serial += 1

    def mark_not_submitted(self, entry: NotSubmitted) -> None:
        """Say that apply did not submit `entry.address`. Like an observation, this is not configuration
        (plans never read it): the serial stays."""
        self.not_submitted[entry.address] = entry.to_dict()

    def unsubmitted(self) -> dict[str, NotSubmitted]:
        """Every job apply did not submit, typed, by address (sorted)."""
        return {a: NotSubmitted.from_dict(d, a) for a, d in sorted(self.not_submitted.items())}

    def find(self, ref: str) -> list[str]:
        """Addresses matching a job name, address, job id or handle (jobs not submitted too)."""
        if ref in self.resources or ref in self.not_submitted:
            return [ref]
        found = [a for a, r in self.records().items()
                 if ref in (r.name, r.job_id, r.handle and str(r.handle)) or a.endswith(f".job.{ref}")]
        return found + [a for a, n in self.unsubmitted().items() if a not in found
                        and (ref in (n.name, n.job_id) or a.endswith(f".job.{ref}"))]
