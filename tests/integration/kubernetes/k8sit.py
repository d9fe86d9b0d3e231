"""Helpers for the Kubernetes integration tests (a module name of its own: conftest.py is ambiguous)."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from k8sci import KUBECONFIG, get, kubectl, wait_for  # noqa: F401  (the tests import them from here)

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"


def inventory(namespace: str, flavor: str = "job", name: str = "ci") -> str:
    """The CI cluster (scripts/k8s-up.sh) as a jsctl.yaml: its two kwok pools, in `namespace`."""
    return f"""\
version: jetstream.v1
prefer: [{name}/cpu]   # CPU-only jobs on the CPU pool (neither pool prices a CPU job)
clusters:
  - name: {name}
    provider: kubernetes
    description: kube-apiserver + kwok fake nodes on this machine (scripts/k8s-up.sh)
    kubeconfig: {KUBECONFIG}
    namespace: {namespace}
    flavor: {flavor}
    gpu_hour_rate: 1.0
    storage:
      - {{prefix: /lustre, host_path: /tmp/jsctl-k8s-lustre}}
    pools:
      - name: cpu
        gpus_per_node: 0
        nodes: 2
        cpus_per_node: 32
        memory_per_node: 128Gi
        node_selector: {{jsctl.dev/pool: cpu}}
      - name: a100
        gpu_type: a100-80gb
        gpus_per_node: 8
        nodes: 4
        cpus_per_node: 96
        memory_per_node: 1Ti
        node_selector: {{jsctl.dev/pool: a100}}
        tolerations: [{{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}]
        interconnect: infiniband
        interconnect_resources: {{rdma/ib: 1}}
"""


IMAGE = "  image: python:3.11-slim\n"


def small_job(name: str, command: list[str], gpus: int = 0, labels: dict | None = None, env: dict | None = None,
              extra: str = "") -> str:
    """A job file for the CI cluster: CPU only, or `gpus` A100s (8 per node)."""
    text = f"version: jetstream.v1\njob:\n  name: {name}\n"
    if labels:
        text += "  labels:\n" + "".join(f"    {k}: {json.dumps(v)}\n" for k, v in labels.items())
    if gpus:
        text += f"compute:\n  resources:\n    gpu:\n      type: a100-80gb\n      count: {gpus}\n  time_limit: 10m\n"
    else:
        text += "compute:\n  resources:\n    cpu:\n      count: 1\n    memory:\n      total: 128Mi\n  time_limit: 10m\n"
    text += "environment:\n" + IMAGE
    if env:
        text += "  env_vars:\n" + "".join(f"    {k}: {json.dumps(v)}\n" for k, v in env.items())
    text += "lifecycle:\n  command: [" + ", ".join(json.dumps(a) for a in command) + "]\n" + extra
    return text


def cli(*args: str, cwd: Path, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    """jsctl in a process of its own (for tests that kill it)."""
    return subprocess.run([sys.executable, "-m", "jsctl.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def state(ws: Path) -> dict:
    return json.loads((ws / ".jsctl" / "state.json").read_text(encoding="utf-8"))


def objects(kind: str, namespace: str, selector: str | None = None) -> list[dict]:
    args = [kind, "-n", namespace] + (["-l", selector] if selector else [])
    return get(*args, namespace=None)["items"]


def job_pods(namespace: str, job_id: str) -> list[dict]:
    return objects("pods", namespace, f"jsctl.dev/job-id={job_id}")


def status_rows(jsctl) -> dict[str, dict]:
    code, out, err = jsctl("status", "--json")
    assert code == 0, out + err
    return {row["name"]: row for row in json.loads(out)["jobs"]}


def wait_phases(jsctl, want: dict[str, str], timeout: float = 60) -> dict[str, dict]:
    def ok():
        rows = status_rows(jsctl)
        return rows if all(rows.get(n, {}).get("phase") == p for n, p in want.items()) else None
    try:
        return wait_for(ok, timeout, what=f"phases {want}")
    except AssertionError:
        raise AssertionError(f"timed out waiting for {want}: {status_rows(jsctl)}") from None


def now() -> float:
    return time.time()
