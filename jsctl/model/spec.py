"""Typed, frozen job specifications: what every stage after config reads instead of raw YAML."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any



@dataclass(frozen=True)
class Gpu:
    type: str | None
    count: int
    per_node: int | None = None


@dataclass(frozen=True)
class Compute:
    gpu: Gpu | None
    cpu_per_gpu: int | None
    cpu_count: int | None
    memory_per_gpu: int | None  # bytes
    memory_total: int | None  # bytes
    topology: str
    time_limit_s: int | None
    capacity: str
    target: str | None

    @property
    def gpus(self) -> int:
        return self.gpu.count if self.gpu else 0


@dataclass(frozen=True)
class Environment:
    image: str | None
    pip_packages: tuple[str, ...]
    system_packages: tuple[str, ...]
    env_vars: tuple[tuple[str, str], ...]
    secrets: tuple[str, ...]


@dataclass(frozen=True)
class Strategy:
    framework: str
    parallelism: str
    config: tuple[tuple[str, Any], ...]
    launcher: str | None
    launcher_args: tuple[str, ...]

    def option(self, name: str, default: Any = None) -> Any:
        return dict(self.config).get(name, default)


@dataclass(frozen=True)
class Frequency:
    """A checkpoint save policy, parsed once: every `n` steps or every `n` seconds."""

    unit: str  # "steps" | "seconds"
    n: int

    def __str__(self) -> str:  # the form JETSTREAM_SAVE_FREQUENCY carries to the runtime
        return f"{self.n}steps" if self.unit == "steps" else f"{self.n}s"


@dataclass(frozen=True)
class Mount:
    name: str
    path: str
    mount_path: str | None
    save_every: Frequency | None = None  # storage.outputs[].policy.save_frequency
    keep_latest: int | None = None


@dataclass(frozen=True)
class Lifecycle:
    command: tuple[str, ...]
    pre_run: tuple[tuple[str, ...], ...]
    post_success: tuple[tuple[str, ...], ...]
    post_failure: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Model:
    parameters: float | None
    config: str | None
    sequence_length: int | None
    micro_batch_size: int | None


@dataclass(frozen=True)
class Recovery:
    max_restarts: int
    restart_on_exit_codes: tuple[int, ...]


@dataclass(frozen=True)
class JobSpec:
    name: str
    priority: str
    queue: str | None
    labels: tuple[tuple[str, str], ...]
    compute: Compute
    environment: Environment
    strategy: Strategy
    inputs: tuple[Mount, ...]
    outputs: tuple[Mount, ...]
    lifecycle: Lifecycle
    model: Model | None
    recovery: Recovery
    file: str
    document: dict = field(compare=False, repr=False)  # the resolved document, for diffs and plan files

    @property
    def checkpoint_output(self) -> Mount | None:
        """The output that holds checkpoints: the first with a save policy."""
        return next((o for o in self.outputs if o.save_every or o.keep_latest), None)
