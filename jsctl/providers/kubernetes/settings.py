"""A Kubernetes cluster's inventory entry (jsctl.yaml `clusters:`), read once into frozen dataclasses.

    - name: k8s
      provider: kubernetes
      kubeconfig: ~/.kube/config        # optional: else the client's default (KUBECONFIG, in-cluster)
      context: training                 # optional
      namespace: ml                     # default: default
      flavor: job                       # job | jobset | volcano | kubeflow (default: job)
      queue: team-a                     # optional Kueue LocalQueue (job.queue in a job file wins)
      gpu_hour_rate: 2.0                # $/GPU-hour for pools that do not set their own
      priority_classes: {high: ml-high, low: ml-low}   # PriorityClass per job.priority
      storage:                          # job storage paths → volumes (longest prefix wins)
        - {prefix: /lustre, pvc: lustre-rwx, sub_path: llm}
        - {prefix: /scratch, host_path: /mnt/scratch}
      pools:
        - name: a100
          gpu_type: a100-80gb
          gpus_per_node: 8
          nodes: 4
          cpus_per_node: 96
          memory_per_node: 1Ti
          node_selector: {jsctl.dev/pool: a100}
          tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
          interconnect: infiniband
          interconnect_resources: {rdma/ib: 1}

The workspace checks an entry against settings.schema.json (beside this file) when it loads.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any, Mapping

from jsctl.errors import ProviderError
from jsctl.model.cluster import Cluster
from jsctl.model.runtime_names import RuntimeNames

FLAVORS = ("job", "jobset", "volcano", "kubeflow")
GPU_RESOURCE = "nvidia.com/gpu"
MASTER_PORT = 29500
DEFAULT_TRAINING_RUNTIME = "torch-distributed"
# set in every pod of a job when it runs: `${JOB_COMPLETION_INDEX}` in a job file waits for run time.
# The downward-API ones are defined in the container's environment when a job names them; HOSTNAME
# is the container runtime's (a shell sees it; Kubernetes' $(VAR) does not).
DOWNWARD_NAMES = {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace", "POD_IP": "status.podIP",
                  "NODE_NAME": "spec.nodeName"}
RUNTIME_NAMES = RuntimeNames(frozenset({"JOB_COMPLETION_INDEX", "HOSTNAME", *DOWNWARD_NAMES}))


@dataclass(frozen=True)
class Pool:
    name: str
    gpu_type: str | None = None
    gpus_per_node: int | None = None
    nodes: int | None = None
    cpus_per_node: int | None = None
    memory_per_node: str | None = None
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    interconnect: str | None = None
    interconnect_resources: Mapping[str, int] = field(default_factory=dict)
    nvlink: bool = False
    max_time: str | None = None
    gpu_hour_rate: float | None = None
    capacities: tuple[str, ...] = ("on-demand",)

    @property
    def fabric(self) -> str | None:
        """The interconnect placement sees: the name given, else the first interconnect resource."""
        return self.interconnect or next(iter(sorted(self.interconnect_resources)), None)


@dataclass(frozen=True)
class StorageRule:
    """Job storage paths under `prefix` become a PVC (`pvc`, optional `sub_path`) or a hostPath."""

    prefix: str
    pvc: str | None = None
    sub_path: str | None = None
    host_path: str | None = None

    def covers(self, path: str) -> bool:
        p = self.prefix.rstrip("/") or "/"
        return path == p or path.startswith(p if p.endswith("/") else p + "/")

    def rest(self, path: str) -> str:
        return path[len(self.prefix.rstrip("/")):].strip("/")


@dataclass(frozen=True)
class KubernetesSettings:
    cluster: str
    namespace: str = "default"
    flavor: str = "job"
    kubeconfig: str | None = None
    context: str | None = None
    queue: str | None = None
    gpu_hour_rate: float | None = None
    gpu_resource: str = GPU_RESOURCE
    pools: tuple[Pool, ...] = ()
    storage: tuple[StorageRule, ...] = ()
    priority_classes: Mapping[str, str] = field(default_factory=dict)
    service_account: str | None = None
    image_pull_secrets: tuple[str, ...] = ()
    volcano_queue: str | None = None
    training_runtime: str = DEFAULT_TRAINING_RUNTIME

    @classmethod
    def of(cls, cluster: Cluster) -> "KubernetesSettings":
        s = cluster.settings or {}
        flavor = s.get("flavor") or "job"
        if flavor not in FLAVORS:
            raise ProviderError(f"cluster {cluster.name}: flavor must be one of {', '.join(FLAVORS)} (not {flavor!r})")
        pools = []
        for p in s.get("pools") or ():
            pools.append(Pool(
                p["name"], p.get("gpu_type"), p.get("gpus_per_node"), p.get("nodes"), p.get("cpus_per_node"),
                p.get("memory_per_node"), {str(k): str(v) for k, v in (p.get("node_selector") or {}).items()},
                tuple(dict(t) for t in p.get("tolerations") or ()), p.get("interconnect"),
                {str(k): int(v) for k, v in (p.get("interconnect_resources") or {}).items()},
                bool(p.get("nvlink", False)), p.get("max_time"), p.get("gpu_hour_rate"),
                tuple(p.get("capacities") or ("on-demand",))))
        storage = []
        for r in s.get("storage") or ():
            if bool(r.get("pvc")) == bool(r.get("host_path")):
                raise ProviderError(f"cluster {cluster.name}: storage prefix {r.get('prefix')!r} needs either pvc "
                                    "or host_path")
            storage.append(StorageRule(posixpath.normpath(r["prefix"]), r.get("pvc"), r.get("sub_path"),
                                       r.get("host_path")))
        volcano = s.get("volcano") or {}
        kubeflow = s.get("kubeflow") or {}
        return cls(cluster.name, s.get("namespace") or "default", flavor, s.get("kubeconfig"), s.get("context"),
                   s.get("queue"), s.get("gpu_hour_rate"), s.get("gpu_resource") or GPU_RESOURCE, tuple(pools),
                   tuple(storage), dict(s.get("priority_classes") or {}), s.get("service_account"),
                   tuple(s.get("image_pull_secrets") or ()), volcano.get("queue"),
                   kubeflow.get("runtime") or DEFAULT_TRAINING_RUNTIME)

    def pool(self, name: str) -> Pool | None:
        return next((p for p in self.pools if p.name == name), None)

    def storage_rule(self, path: str) -> StorageRule | None:
        """The rule with the longest prefix covering `path` (None: not mapped, not mounted)."""
        found = [r for r in self.storage if r.covers(posixpath.normpath(path))]
        return max(found, key=lambda r: len(r.prefix), default=None)
