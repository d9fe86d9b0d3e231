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
