"""The provider interface: a pure half (offers, validate, render, diff) and an effectful client.

Everything that crosses this boundary is a frozen dataclass. Pure methods never touch the
network or the file system; only a ProviderClient does, and only when a command needs it.
"""
from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from jsctl.config.diagnostics import Diagnostic
from jsctl.config.spec import JobSpec
from jsctl.errors import CapabilityError, ProviderError

PHASES = ("PENDING", "RUNNING", "PAUSED", "PREEMPTED", "SUCCEEDED", "FAILED", "CANCELLED", "UNKNOWN")
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
REQUEUE_EXIT_CODE = 75  # the in-job runtime exits with this after a preemption checkpoint


@dataclass(frozen=True)
class Cluster:
    """One entry of the workspace inventory (`clusters:` in jsctl.yaml)."""

    name: str
    provider: str
    settings: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Facts:
    """What a client's probe learned about a cluster, as plain data (pure input to planning)."""

    cluster: str
    data: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Offer:
    """One place a job could run: a Slurm partition, a node pool, a cloud instance type, this machine."""

    cluster: str
    provider: str
    pool: str  # partition / node pool / instance type / "this machine"
    gpu_type: str | None  # catalog name; None = no GPUs; "*" = any type, emulated (local)
    gpus_per_node: int
    max_nodes: int | None  # None = as many as asked (cloud)
    cpus_per_node: int
    memory_per_node: int  # bytes
    interconnect: str | None = None  # infiniband, efa, gpudirect-tcpx, ... (None = none)
    nvlink: bool = False
    max_time_s: int | None = None
    node_hour_price: float | None = None  # on-demand $/node-hour (cloud instances)
    spot_node_hour_price: float | None = None
    gpu_hour_price: float | None = None  # $/GPU-hour (Slurm and Kubernetes clusters charge by GPUs used)
    capacities: tuple[str, ...] = ("on-demand",)
    region: str | None = None
    available: bool = True
    note: str | None = None


@dataclass(frozen=True)
class Placement:
    """Where a job runs: the chosen offer and the shape of the allocation."""

    cluster: str
    provider: str
    pool: str
    nodes: int
    gpus_per_node: int
    gpu_type: str | None
    cpus_per_task: int | None
    memory_per_node: int | None
    interconnect: str | None
    capacity: str
    price_per_hour: float | None  # for the whole allocation

    @property
    def workers(self) -> int:
        return self.nodes * max(self.gpus_per_node, 1)

    def describe(self) -> str:
        nodes = f"{self.nodes} node{'s' if self.nodes != 1 else ''}"
        if not self.gpus_per_node:
            return f"{self.cluster} / {self.pool} : {nodes}, CPU only"
        if self.provider == "local":
            return (f"{self.cluster} / {self.pool} : {self.workers} worker process{'es' if self.workers != 1 else ''}"
                    f" (GPUs{' ' + self.gpu_type if self.gpu_type else ''} emulated on CPU)")
        shape = f"{nodes} × {self.gpus_per_node} {self.gpu_type or 'GPU'}"
        return f"{self.cluster} / {self.pool} : {shape}" + (f", {self.interconnect}" if self.interconnect else "")


@dataclass(frozen=True)
class JobContext:
    """Everything a provider needs to render one job (pure input)."""

    address: str
    job_id: str
    generation: int
    spec: JobSpec
    placement: Placement
    depends_on: tuple[str, ...] = ()  # addresses this job waits for
    strategy: Mapping[str, Any] = field(default_factory=dict)  # JETSTREAM_STRATEGY
    workdir: str = "."  # directory of the job file: relative paths in commands resolve here
    cluster: Cluster | None = None  # the inventory entry of placement.cluster, with its settings


@dataclass(frozen=True)
class RenderedArtifact:
    """The exact thing apply sends: files (a script, a manifest) and a request body."""

    kind: str  # "local-run", "sbatch-script", ...
    job_id: str
    files: tuple[tuple[str, str], ...]  # (name, content)
    request: Mapping[str, Any]
    summary: str  # "sbatch script, 58 lines"
    notes: tuple[str, ...] = ()  # what the plan should say (mount mappings, no container runtime ...)

    @property
    def digest(self) -> str:
        body = json.dumps({"kind": self.kind, "files": self.files, "request": self.request},
                          sort_keys=True, default=str)
        return hashlib.sha256(body.encode()).hexdigest()

    def to_dict(self) -> dict:
        return {"kind": self.kind, "job_id": self.job_id, "files": [list(f) for f in self.files],
                "request": dict(self.request), "summary": self.summary, "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RenderedArtifact":
        return cls(d["kind"], d["job_id"], tuple((a, b) for a, b in d["files"]), d["request"], d["summary"],
                   tuple(d.get("notes", ())))


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
    phase: str  # one of PHASES
    engine_state: str  # the engine's own word (Slurm's COMPLETED, ...)
    reason: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    restarts: int = 0
    nodes: tuple[str, ...] = ()
    step: int | None = None

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL


@dataclass(frozen=True)
class Change:
    """The provider's verdict on a changed artifact: update in place, or replace (with reasons)."""

    action: str  # "no-op" | "update" | "replace"
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class Capabilities:
    pause: bool = False
    resume: bool = False
    scale: bool = False
    node_logs: bool = False
    check_remote: bool = False
    dependencies: bool = False  # the engine itself enforces workflow order (e.g. Slurm afterok)


class Provider(ABC):
    """The pure half: a function of its inputs, safe to call while planning."""

    name: str = ""

    @abstractmethod
    def capabilities(self) -> Capabilities: ...

    @abstractmethod
    def offers(self, cluster: Cluster, facts: Facts | None) -> list[Offer]:
        """Every place on this cluster a job could run, for placement to choose from."""

    def validate(self, job: JobContext, facts: Facts | None) -> list[Diagnostic]:
        return []

    @abstractmethod
    def render(self, job: JobContext, facts: Facts | None) -> RenderedArtifact: ...

    def diff(self, prior: Mapping[str, Any], job: JobContext, artifact: RenderedArtifact,
             live: LiveStatus | None) -> Change:
        """Compare a state record with a new artifact. Default: any change replaces."""
        if prior.get("artifact_digest") == artifact.digest:
            return Change("no-op")
        return Change("replace", ("artifact changed",))

    @abstractmethod
    def client(self, cluster: Cluster, workspace_dir: str) -> "ProviderClient": ...


class ProviderClient(ABC):
    """The effectful half: talks to the engine. Construct only when a command needs it."""

    provider: str = ""

    def __init__(self, cluster: Cluster, workspace_dir: str) -> None:
        self.cluster = cluster
        self.workspace_dir = workspace_dir

    def probe(self) -> Facts:
        return Facts(self.cluster.name)

    @abstractmethod
    def submit(self, artifact: RenderedArtifact, env: Mapping[str, str],
               upstream: Mapping[str, JobHandle]) -> JobHandle:
        """Submit; `env` carries secret values (never written to disk); `upstream` the dependencies' handles."""

    def adopt(self, artifact: RenderedArtifact) -> JobHandle | None:
        """A job already submitted for this artifact's job id (after a crash), or None."""
        return None

    @abstractmethod
    def refresh(self, handles: list[JobHandle]) -> dict[JobHandle, LiveStatus]:
        """Status of many jobs in one batched query."""

    @abstractmethod
    def logs(self, handle: JobHandle, node: str | None = None, follow: bool = False,
             tail: int | None = None) -> Iterator[str]: ...

    @abstractmethod
    def cancel(self, handle: JobHandle) -> None:
        """Stop the job; idempotent."""

    def check(self, artifact: RenderedArtifact) -> str:
        raise CapabilityError(f"provider {self.provider} cannot check a job against the scheduler (--check-remote)")

    def pause(self, handle: JobHandle) -> None:
        raise CapabilityError(f"provider {self.provider} cannot pause jobs")

    def resume(self, handle: JobHandle) -> None:
        raise CapabilityError(f"provider {self.provider} cannot resume jobs")

    def scale(self, handle: JobHandle, gpus: int) -> None:
        raise CapabilityError(f"provider {self.provider} cannot scale a running job",
                              hint="change compute.resources.gpu.count in the job file and run jsctl apply: the "
                                   "job is replaced and, with checkpoints, resumes on the new shape (jsruntime "
                                   "reshards)")
