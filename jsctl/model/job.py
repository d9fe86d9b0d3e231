"""Where a job runs (Placement) and everything a provider needs to render it (JobContext)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from jsctl.model.cluster import Cluster
from jsctl.model.runtime_names import NONE, RuntimeNames
from jsctl.model.spec import JobSpec


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
    emulated: bool = False  # GPUs are worker processes on CPU

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "Placement | None":
        if not d:
            return None
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    @property
    def workers(self) -> int:
        return self.nodes * max(self.gpus_per_node, 1)

    def describe(self) -> str:
        nodes = f"{self.nodes} node{'s' if self.nodes != 1 else ''}"
        if not self.gpus_per_node:
            return f"{self.cluster} / {self.pool} : {nodes}, CPU only"
        if self.emulated:
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
    runtime_names: RuntimeNames = NONE  # names the engine sets when the job runs (its provider declares them)
