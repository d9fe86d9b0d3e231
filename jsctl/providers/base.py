"""The provider interface: a pure half (offers, validate, render, diff) and an effectful client.

Everything that crosses this boundary is a frozen dataclass. Pure methods never touch the
network or the file system; only a ProviderClient does, and only when a command needs it.
"""
from __future__ import annotations

import functools
import json
from abc import ABC, abstractmethod
from importlib import resources
from typing import Any, Iterator, Mapping

from jsctl.config.diagnostics import Diagnostic
from jsctl.errors import CapabilityError
from jsctl.model.artifact import (Change, RenderedArtifact, Request, content_digest, recorded_file_digests,
                                  request_change)
from jsctl.model.catalog import Catalog
from jsctl.model.cluster import Capabilities, Cluster, Facts, Offer
from jsctl.model.job import JobContext
from jsctl.model.runtime_names import RuntimeNames
from jsctl.model.status import EngineEvent, JobHandle, LiveStatus, PauseResult


def package_schema(package: str, name: str = "settings.schema.json") -> dict[str, Any]:
    """A JSON Schema shipped inside a provider's package (e.g. its settings schema)."""
    return json.loads(_package_text(package, name))


@functools.lru_cache(maxsize=None)
def _package_text(package: str, name: str) -> str:
    return resources.files(package).joinpath(name).read_text("utf-8")


class Provider(ABC):
    """The pure half: a function of its inputs, safe to call while planning."""

    name: str = ""

    @abstractmethod
    def capabilities(self) -> Capabilities: ...

    @abstractmethod
    def offers(self, cluster: Cluster, facts: Facts | None, catalog: Catalog) -> list[Offer]:
        """Every place on this cluster a job could run, for placement to choose from, with its price.
        `catalog` (instance types and list prices) is input for providers that price from it (the
        clouds: `jsctl.model.catalog.instance_offers`); others ignore it."""

    def settings_schema(self) -> dict[str, Any]:
        """A JSON Schema for one cluster entry's settings in jsctl.yaml (every key besides `name`,
        `provider` and `description`), checked when the workspace loads. Default: no settings."""
        return {"type": "object", "additionalProperties": False, "properties": {}}

    def runtime_names(self) -> RuntimeNames:
        """Environment variables this provider's engine sets when a job runs (names and/or
        prefixes): `${NAME}` in a job file waits for run time instead of being an error."""
        return RuntimeNames()

    def check_cluster(self, cluster: Cluster, catalog: Catalog) -> list[Diagnostic]:
        """Problems with a cluster's settings that its schema cannot see (an instance type the catalog
        lacks); errors stop the plan, warnings are printed with it."""
        return []

    def validate(self, job: JobContext, facts: Facts | None) -> list[Diagnostic]:
        return []

    @abstractmethod
    def render(self, job: JobContext, facts: Facts | None) -> RenderedArtifact: ...

    @abstractmethod
    def request_type(self) -> type[Request]:
        """The frozen Request subclass this provider renders (to read a saved plan back)."""

    def diff(self, prior: Mapping[str, Any] | None, artifact: RenderedArtifact,
             prior_digest: str | None = None) -> Change:
        """Compare the recorded artifact (its dict, from state: files named by their digests, or with
        their text when an older jsctl recorded it) and the recorded digest with a new one: request
        fields that changed, and whether they force replacement (Request.IN_PLACE fields do not)."""
        if prior_digest is not None and prior_digest == artifact.digest:
            return Change("no-op")
        change = request_change((prior or {}).get("request"), artifact.request)
        if change.action == "no-op":
            before = recorded_file_digests(prior)
            changed = [n for n, text in artifact.files if before.get(n) != content_digest(text)]
            if not changed and prior_digest is None:
                return Change("no-op")  # no digest recorded: the same request and files are the same job
            return Change("replace", tuple(f"{n} changed (forces replacement)" for n in changed) or
                          ("artifact changed",), tuple(f"files.{n}" for n in changed))
        return change

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

    def events(self, handle: JobHandle) -> list[EngineEvent]:
        """Recent engine events about the job and its parts (its pods, ...), oldest first, for `jsctl
        describe`; [] where the engine keeps none (the default). Best effort for the caller: an error
        here never fails describe."""
        return []

    def artifact_files(self, handle: JobHandle, recorded: Mapping[str, Any]) -> dict[str, str]:
        """The text of the job's artifact files as the engine holds them (state keeps only each file's
        digest; `recorded` is the artifact as state has it), for describe and the dashboard; the files it
        cannot give are left out (the default: all)."""
        return {}

    def check(self, artifact: RenderedArtifact) -> str:
        raise CapabilityError(f"provider {self.provider} cannot check a job against the scheduler (--check-remote)")

    def pause(self, handle: JobHandle, timeout_s: float = 300.0, force: bool = False) -> PauseResult:
        """Checkpoint the job (its runtime's preemption path), wait up to `timeout_s` for the checkpoint,
        then release its resources; returns the checkpoint step (None where the provider pauses without
        one) and what happened, in the engine's terms (how it paused, what the job still holds, what is
        lost). A job without checkpoints is refused unless `force` (which says what it loses)."""
        raise CapabilityError(f"provider {self.provider} cannot pause jobs")

    def resume(self, handle: JobHandle) -> None:
        raise CapabilityError(f"provider {self.provider} cannot resume jobs")

    def scale(self, handle: JobHandle, gpus: int) -> None:
        raise CapabilityError(f"provider {self.provider} cannot scale a running job",
                              hint="change compute.resources.gpu.count in the job file and run jsctl apply: the "
                                   "job is replaced and, with checkpoints, resumes on the new shape (jsruntime "
                                   "reshards)")

    def tune(self, handle: JobHandle, strategy: Mapping[str, Any]) -> None:
        """Switch a running job to another strategy (what JETSTREAM_STRATEGY carries): checkpoint,
        restart with it, restore resharded."""
        raise CapabilityError(f"provider {self.provider} cannot switch a running job's strategy",
                              hint="change strategy.parallelism (and strategy.config) in the job file and run "
                                   "jsctl apply: the job is replaced and, with checkpoints, resumes under the new "
                                   "strategy (jsruntime reshards)")

    def memory_per_worker(self, placement: Mapping[str, Any]) -> int | None:
        """Memory one worker may use, for the tuning rule when the placement names no GPU model (the
        local provider's emulated GPUs); None when unknown."""
        return None
