"""Helpers for the Slurm provider's unit tests: plan jobs against an inventory (pure), and run a
rendered batch script under bash with stand-ins for srun and scontrol (no cluster)."""
from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path
from typing import Mapping

from jsctl.config import workspace
from jsctl.plan import catalog
from jsctl.config.variables import Variables
from jsctl.plan.model import ResourceChange
from jsctl.plan.planner import PlanInputs, make_plan
from jsctl.plan.resolve import load_sources
from jsctl.model.cluster import Facts
from jsctl.model.state import State

CI_INVENTORY = """\
version: jetstream.v1
clusters:
  - name: ci
    provider: slurm
    access: {{mode: local}}
    container_runtime: {runtime}
    shared_dir: {shared}
    partitions:
      - name: debug
        gpus_per_node: 4
        nodes: 2
        cpus_per_node: 8
        memory_per_node: 64Gi
        max_time: 2h
        gpu_hour_rate: 0.5
        qos: {{high: urgent}}
"""


def write_workspace(tmp: Path, runtime: str = "none", shared: str | None = None, text: str | None = None) -> str:
    body = text or CI_INVENTORY.format(runtime=runtime, shared=shared or str(tmp / "shared"))
    path = tmp / "jsctl.yaml"
    path.write_text(body)
    return str(path)


def plan_changes(tmp: Path, files: Mapping[str, str], entry: list[str], inventory: str | None = None,
                 variables: Mapping[str, str] | None = None, facts: Mapping[str, Facts] | None = None,
                 runtime: str = "none") -> list[ResourceChange]:
    for name, text in files.items():
        (tmp / name).write_text(textwrap.dedent(text))
    ws = workspace.load(inventory or write_workspace(tmp, runtime))
    paths = [str(tmp / e) for e in entry]
    sources, diags = load_sources(paths, Variables(dict(variables or {})))
    assert not [d for d in diags if d.severity == "error"], diags
    plan = make_plan(PlanInputs(sources, State(), ws, dict(facts or {}), {}, (), False, False, tuple(paths),
                                catalog=catalog.load(ws.catalog)))
    return list(plan.changes)


def script_of(change: ResourceChange) -> str:
    assert change.artifact is not None
    return change.artifact.files[0][1]


FAKE_SRUN = r"""#!/bin/bash
# stand-in for srun: drop options, run the command (once: one node)
while [ $# -gt 0 ]; do case $1 in --*) shift ;; *) break ;; esac; done
printf 'srun %s\n' "$*" >> "$FAKE_SLURM_LOG"
exec "$@"
"""
FAKE_SCONTROL = r"""#!/bin/bash
printf 'scontrol %s\n' "$*" >> "$FAKE_SLURM_LOG"
case "$1 $2" in
  "show hostnames") echo node1 ;;
  "-o show") echo "NodeName=$4 Arch=x86_64 NodeAddr=10.0.0.1 NodeHostName=$4 Port=0" ;;
  "requeue "*) exit "${FAKE_REQUEUE_RC:-0}" ;;
esac
"""


def fake_slurm(tmp: Path) -> dict[str, str]:
    """A bin directory with srun and scontrol stand-ins; returns the environment to run a script in."""
    bin_dir = tmp / "fakebin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("srun", FAKE_SRUN), ("scontrol", FAKE_SCONTROL)):
        p = bin_dir / name
        p.write_text(text)
        p.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_SLURM_LOG": str(tmp / "slurm.log"),
            "SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "node1", "SLURM_RESTART_COUNT": "0",
            "HOME": str(tmp)}


def run_script(tmp: Path, text: str, env: Mapping[str, str] | None = None,
               cwd: Path | None = None) -> subprocess.CompletedProcess:
    path = tmp / "job.sbatch"
    path.write_text(text)
    full = {**fake_slurm(tmp), **(env or {})}
    return subprocess.run(["bash", str(path)], capture_output=True, text=True, env=full, cwd=cwd or tmp,
                          timeout=60)
