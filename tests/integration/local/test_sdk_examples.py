"""The SDK's example scripts (examples/sdk/) run as a user runs them, in a fresh workspace on the local
provider, and what they print agrees with what the SDK reads back from the jobs (issue 15)."""
import json
import os
import re
import subprocess
import sys

import pytest

from paths import EXAMPLES

import jsctl

SWEEP = os.path.join(EXAMPLES, "sdk", "sweep.py")
GATE = os.path.join(EXAMPLES, "sdk", "plan_gate.py")
TINY = 'version: jetstream.v1\njob:\n  name: tiny\nlifecycle:\n  command: ["sleep", "{seconds}"]\n'


def script(path: str, *args: str, timeout: float = 60, env: dict | None = None):
    proc = subprocess.run([sys.executable, path, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def test_the_sweep_prints_the_best_final_loss_of_its_eight_jobs(ws):
    pytest.importorskip("torch", reason="the quickstart needs torch==2.13.0 (pip install -e '.[runtime]')")
    # 8 jobs at once on a small machine: one worker each, a few steps (the script's --steps and --gpus)
    code, out, err = script(SWEEP, "--steps", "2", "--gpus", "1", "--workdir", str(ws), timeout=240)
    assert code == 0, out + err
    found = re.search(r"^best final loss: (\S+) \(lr (\S+), (job\.sweep-lr\d)\)$", out, re.M)
    assert found, out
    workspace = jsctl.open_workspace()
    addresses = [f"job.sweep-lr{i}" for i in range(8)]
    rows = jsctl.status(workspace)
    assert sorted(r.address for r in rows) == addresses and {r.phase for r in rows} == {"SUCCEEDED"}, rows
    summaries = {a: jsctl.metrics(workspace, a) for a in addresses}
    assert {s.step for s in summaries.values()} == {2}
    losses = {a: s.latest("loss") for a, s in summaries.items()}
    assert len(set(losses.values())) == 8, losses  # eight learning rates really trained differently
    best = min(losses, key=losses.__getitem__)
    assert float(found[1]) == losses[best] and found[3] == best, (out, losses)
    argv = json.loads((ws / ".jsctl" / "runs" / rows[addresses.index(best)].job_id / "run.json").read_text())["argv"]
    assert float(argv[argv.index("--lr") + 1]) == float(found[2])  # the best job really ran with that rate
    # again: nothing is rerun (the plan has no changes) and the same best is printed
    code, again, err = script(SWEEP, "--steps", "2", "--gpus", "1", "--workdir", str(ws), timeout=60)
    assert code == 0 and "Plan: 0 to add, 0 to change, 0 to destroy." in again, again + err
    assert found[0] in again.splitlines()


def test_the_gate_applies_a_cheap_plan_and_refuses_a_replacement(ws):
    (ws / "tiny.yaml").write_text(TINY.format(seconds=30))
    code, out, err = script(GATE, "-f", "tiny.yaml", "--max-cost", "1")
    assert code == 0, out + err
    assert "Gate passed" in out and "submitted: job.tiny" in out
    workspace = jsctl.open_workspace()
    (first,) = jsctl.status(workspace)
    assert first.address == "job.tiny" and first.phase in ("PENDING", "RUNNING"), first
    try:
        (ws / "tiny.yaml").write_text(TINY.format(seconds=31))  # a new command: the local provider replaces
        code, out, err = script(GATE, "-f", "tiny.yaml", "--max-cost", "1")
        assert code == 1, out + err
        assert "Gate failed" in err and "job.tiny would be replaced" in err and "lifecycle.command" in err, err
        (now,) = jsctl.status(workspace)
        assert now.job_id == first.job_id and now.phase in ("PENDING", "RUNNING"), now  # nothing applied
        code, out, err = script(GATE, "-f", "missing.yaml", "--max-cost", "1")
        assert code == 1 and "Gate failed" in err and "missing.yaml" in err, err
    finally:
        jsctl.stop(workspace, "tiny")


def test_the_gate_refuses_a_plan_over_its_cost_bound(ws):
    # a priced cluster (the local one is free): planned from the inventory, its probe failing fast
    (ws / "jsctl.yaml").write_text(
        "clusters:\n  - name: hpc\n    provider: slurm\n    access: {slurm_conf: /nonexistent/slurm.conf}\n"
        "    partitions:\n      - {name: gpu, gpu_type: a100-80gb, gpus_per_node: 8, nodes: 4, cpus_per_node: 64,"
        " memory_per_node: 1Ti, interconnect: infiniband, gpu_hour_rate: 2.0}\n")
    (ws / "big.yaml").write_text('version: jetstream.v1\njob:\n  name: big\nlifecycle:\n  command: ["train.py"]\n'
                                 "compute:\n  resources:\n    gpu: {type: a100, count: 16}\n  time_limit: 24h\n")
    code, out, err = script(GATE, "-f", "big.yaml", "--max-cost", "500", env={"JSCTL_PROBE_TIMEOUT": "1"})
    assert code == 1, out + err
    assert "Gate failed: cost: the plan is over the bound of $500.00 (job.big)" in err, err
    assert "$768.00" in err and "applying" not in out
    assert jsctl.status(jsctl.open_workspace()) == ()  # nothing was submitted
