"""A Slurm cluster's inventory entry (jsctl.yaml `clusters:`), read once into a frozen dataclass.

    - name: hpc
      provider: slurm
      access: {mode: ssh, host: login.hpc.example, user: alice}   # or {mode: local, slurm_conf: ...}
      container_runtime: pyxis          # pyxis | apptainer | none (default: none, jobs run on the host)
      shared_dir: /shared/alice/jsctl   # logs live here (required with ssh access)
      partitions: [...]                 # optional: else read from the cluster (sinfo)
      settings: {signal_grace: 120}     # seconds between the preemption notice (USR1) and the end

The workspace checks an entry against settings.schema.json (beside this file) when it loads.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any, Mapping

from jsctl.errors import ProviderError
from jsctl.model.cluster import Cluster
from jsctl.model.runtime_names import RuntimeNames

DEFAULT_SIGNAL_GRACE_S = 120
ACCESS_MODES = ("local", "ssh", "slurmrestd")
CONTAINER_RUNTIMES = ("pyxis", "apptainer", "none")
# set by Slurm in every job step: `${SLURM_PROCID}` in a job file waits for run time
RUNTIME_NAMES = RuntimeNames(frozenset({"SLURM_JOB_ID", "SLURM_PROCID", "SLURM_NODEID"}))


@dataclass(frozen=True)
class Access:
    mode: str = "local"
    host: str | None = None
    user: str | None = None
    port: int | None = None
    ssh_options: tuple[str, ...] = ()
    slurm_conf: str | None = None

    @property
    def remote(self) -> bool:
        return self.mode != "local"


@dataclass(frozen=True)
class SlurmSettings:
    cluster: str
    access: Access
    container_runtime: str = "none"
    shared_dir: str | None = None
    partitions: tuple[Mapping[str, Any], ...] = ()
    gpu_hour_rate: float | None = None
    signal_grace_s: int = DEFAULT_SIGNAL_GRACE_S
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, cluster: Cluster) -> "SlurmSettings":
        s = cluster.settings or {}
        a = s.get("access") or {}
        mode = a.get("mode", "ssh" if a.get("host") else "local")
        if mode not in ACCESS_MODES:
            raise ProviderError(f"cluster {cluster.name}: access.mode must be one of {', '.join(ACCESS_MODES)}")
        access = Access(mode, a.get("host"), a.get("user"), a.get("port"), tuple(a.get("ssh_options") or ()),
                        a.get("slurm_conf"))
        runtime = s.get("container_runtime") or "none"
        if runtime not in CONTAINER_RUNTIMES:
            raise ProviderError(f"cluster {cluster.name}: container_runtime must be one of "
                                f"{', '.join(CONTAINER_RUNTIMES)}")
        extra = dict(s.get("settings") or {})
        grace = extra.get("signal_grace", DEFAULT_SIGNAL_GRACE_S)
        if not isinstance(grace, int) or isinstance(grace, bool) or grace < 1:
            raise ProviderError(f"cluster {cluster.name}: settings.signal_grace must be a whole number of seconds")
        return cls(cluster.name, access, runtime, s.get("shared_dir"), tuple(s.get("partitions") or ()),
                   s.get("gpu_hour_rate"), grace, extra)

    def partition(self, name: str) -> Mapping[str, Any] | None:
        return next((p for p in self.partitions if p.get("name") == name), None)

    def log_root(self, workdir: str) -> str:
        """Where batch logs go: `<shared_dir>/logs`, else `<job file dir>/.jsctl/slurm-logs` (local access)."""
        if self.shared_dir:
            return posixpath.join(self.shared_dir, "logs")
        return posixpath.join(workdir, ".jsctl", "slurm-logs")

    def log_roots(self, workspace_dir: str) -> tuple[str, ...]:
        """Where a client looks for a log when Slurm no longer knows the job."""
        roots = [posixpath.join(self.shared_dir, "logs")] if self.shared_dir else []
        if not self.access.remote:
            roots.append(posixpath.join(workspace_dir, ".jsctl", "slurm-logs"))
        return tuple(roots)
