"""Clusters, what a probe learned about them, the places they offer, and what their provider can do."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


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
    emulated: bool = False  # GPUs are worker processes on CPU (the local machine)


@dataclass(frozen=True)
class Capabilities:
    pause: bool = False
    resume: bool = False
    scale: bool = False
    node_logs: bool = False
    check_remote: bool = False
    dependencies: bool = False  # the engine itself enforces workflow order (e.g. Slurm afterok)
