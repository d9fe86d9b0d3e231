"""Helpers for the Kubernetes provider's unit tests: an inventory like the CI control plane's, jobs
planned against it (pure), and the manifest read back (the kubelet's `$(VAR)` expansion, to read a
container's env and argv, is tests/kubelet.py: env_of, argv_of)."""
from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import Any, Mapping

from jsctl.plan.model import ResourceChange
from slurmkit import plan_changes

INVENTORY = """\
version: jetstream.v1
{prefer}clusters:
  - name: k8s
    provider: kubernetes
    kubeconfig: /tmp/jsctl-k8s/kubeconfig
    namespace: jsctl-ci
    flavor: {flavor}
    gpu_hour_rate: 2.0
{extra}    storage:
      - {{prefix: /data, host_path: /mnt/data}}
      - {{prefix: /shared, pvc: shared-rwx, sub_path: team}}
    pools:
      - name: a100
        gpu_type: a100-80gb
        gpus_per_node: 8
        nodes: 4
        cpus_per_node: 96
        memory_per_node: 1Ti
        node_selector: {{jsctl.dev/pool: a100}}
        tolerations: [{{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}]
        interconnect_resources: {{rdma/ib: 1}}
      - name: cpu
        gpus_per_node: 0
        nodes: 2
        cpus_per_node: 32
        memory_per_node: 128Gi
        node_selector: {{jsctl.dev/pool: cpu}}
"""

GPU_JOB = """\
version: jetstream.v1
job:
  name: train
compute:
  resources:
    gpu: {type: a100-80gb, count: 16}
    cpu: {per_gpu: 8}
    memory: {per_gpu: 64Gi}
  topology: interconnect
  time_limit: 2h
environment:
  image: ghcr.io/example/train:1
  env_vars:
    RUN_DIR: /shared/runs/${JOB_ID}
    LOG_FILE: ${RUN_DIR}/rank-${NODE_RANK}.log
  secrets: [HF_TOKEN]
strategy:
  framework: pytorch
  parallelism: ddp
  launcher: torchrun
storage:
  inputs:
    - {name: dataset, path: /data/sets/a, mount_path: /in}
  outputs:
    - name: checkpoints
      path: /shared/ckpt/${JOB_ID}
      mount_path: /ckpt
      policy: {save_frequency: 100steps}
lifecycle:
  command: [python, train.py, --out, "${RUN_DIR}", --rank, "${NODE_RANK}"]
recovery:
  max_restarts: 2
  restart_on_exit_codes: [1, 137]
"""


def write_inventory(tmp: Path, flavor: str = "job", extra: str = "", prefer: str = "") -> str:
    path = tmp / "jsctl.yaml"
    path.write_text(INVENTORY.format(flavor=flavor, extra=textwrap.indent(extra, "    ") if extra else "",
                                     prefer=prefer))
    return str(path)


def plan_one(tmp: Path, job: str = GPU_JOB, flavor: str = "job", extra: str = "", prefer: str = "",
             **kw: Any) -> ResourceChange:
    inventory = write_inventory(tmp, flavor, extra, prefer)
    (change,) = plan_changes(tmp, {"job.yaml": job}, ["job.yaml"], inventory=inventory, **kw)
    return change


def documents(change: ResourceChange) -> list[dict]:
    """The manifest read back by a YAML 1.1 reader (PyYAML, like Kubernetes' own)."""
    import yaml

    assert change.artifact is not None
    (name, text), = change.artifact.files
    assert name == change.artifact.request.manifest
    return list(yaml.safe_load_all(io.StringIO(text)))


def pod_specs(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The pod specs inside a workload object, whatever its flavor."""
    kind, spec = obj["kind"], obj["spec"]
    if kind == "Job" and obj["apiVersion"] == "batch/v1":
        return [spec["template"]["spec"]]
    if kind == "JobSet":
        return [r["template"]["spec"]["template"]["spec"] for r in spec["replicatedJobs"]]
    if kind == "Job":  # Volcano
        return [t["template"]["spec"] for t in spec["tasks"]]
    return []

