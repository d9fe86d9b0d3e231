"""Helpers for the Kubernetes provider's unit tests: an inventory like the CI control plane's, jobs
planned against it (pure), and Kubernetes' own `$(VAR)` expansion to read a container back."""
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


def k8s_expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' expansion (third_party/forked/golang/expansion): `$$` → `$`, `$(NAME)` → its value
    when defined (else as written), `$(` without `)` and `$x` as written."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                j = text.find(")", i + 2)
                if j != -1:
                    name = text[i + 2:j]
                    out.append(env[name] if name in env else f"$({name})")
                    i = j + 1
                    continue
                out.append("$(")
                i += 2
                continue
            out.append("$" + nxt)
            i += 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def run_env(container: Mapping[str, Any], sources: Mapping[str, str]) -> dict[str, str]:
    """The container's environment as the kubelet builds it: in order, each value expanded with the
    names above it; valueFrom entries from `sources` (by variable name)."""
    env: dict[str, str] = {}
    for e in container.get("env") or ():
        env[e["name"]] = k8s_expand(e["value"], env) if "value" in e else sources.get(e["name"], "<" + e["name"] + ">")
    return env


def run_argv(container: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    return [k8s_expand(a, env) for a in [*container.get("command", ()), *container.get("args", ())]]
