"""A submitted job (JobHandle) and what its engine says about it (LiveStatus)."""
from __future__ import annotations

from dataclasses import dataclass

from jsctl.errors import ProviderError
from jsctl.model.word import Word


class Phase(Word):
    """jsctl's word for where a job is, the same on every engine (the engine's own word stays beside it).
    A str: it compares equal to its name and prints as it, in text and JSON."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    PREEMPTED = "PREEMPTED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    UNKNOWN = "UNKNOWN"


PHASES = tuple(p.value for p in Phase)
TERMINAL = frozenset({Phase.SUCCEEDED, Phase.FAILED, Phase.CANCELLED})
REQUEUE_EXIT_CODE = 75  # the in-job runtime exits with this after a preemption checkpoint


@dataclass(frozen=True)
class JobHandle:
    """A submitted job, written `slurm://hpc/123456`."""

    provider: str
    cluster: str
    id: str

    def __str__(self) -> str:
        return f"{self.provider}://{self.cluster}/{self.id}"

    @classmethod
    def parse(cls, text: str) -> "JobHandle":
        provider, sep, rest = text.partition("://")
        cluster, slash, ident = rest.partition("/")
        if not sep or not slash or not provider or not cluster or not ident:
            raise ProviderError(f"not a job handle: {text!r} (expected provider://cluster/id)")
        return cls(provider, cluster, ident)


@dataclass(frozen=True)
class PauseResult:
    """What a provider client's pause did: the checkpoint step the job resumes from (None: none it
    knows of) and, in its own words, what happened to the job's processes and resources and what
    resume will do (`its workers are stopped (GPUs held: none)`): a clause the CLI prints after
    "Paused JOB (HANDLE)[ at checkpoint step N]: ", no final period."""

    step: int | None
    how: str


@dataclass(frozen=True)
class EngineEvent:
    """Something the engine recorded about a job or one of its parts (Kubernetes' Events: the pod was
    `Scheduled`, the Job controller's `SuccessfulCreate`, a `FailedScheduling` warning), for `jsctl describe`."""

    time: float | None  # seconds since the epoch (None: the engine gave no time)
    reason: str  # the engine's short word for what happened (`Scheduled`)
    message: str
    object: str = ""  # what it is about, as the engine names it (`Pod/js-train-0000-0-abcde`)
    type: str = ""  # the engine's severity word (`Normal`, `Warning`), "" where it has none
    count: int = 1  # how many times the engine saw it (repeats folded into one event)

    def to_dict(self) -> dict:
        return {"time": self.time, "type": self.type, "reason": self.reason, "object": self.object,
                "message": self.message, "count": self.count}


@dataclass(frozen=True)
class LiveStatus:
    phase: Phase
    engine_state: str  # the engine's own word (Slurm's COMPLETED, ...)
    reason: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    restarts: int = 0
    nodes: tuple[str, ...] = ()
    step: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "phase", Phase(self.phase))  # a typo in a provider fails here, not later

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL
