"""benchmarks/apply_bench.py at a reduced size on the CI Slurm cluster: it completes and prints its
figures (apply and destroy, per group of jobs). Times are printed, never asserted."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_apply_bench_runs_at_a_reduced_size(slurm):
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "apply_bench.py"), "--jobs", "50", "--per", "10"],
                         capture_output=True, text=True, timeout=600, env={**os.environ, "SLURM_CONF": slurm})
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    for verb in ("apply", "destroy"):
        assert f"{verb} of 50 jobs: jsctl's own time per job" in out, out
        assert len(re.findall(r"^  jobs +\d+-\d+ +jsctl +[\d.]+ ms/job +engine +[\d.]+ ms/job$", out, re.M)) == 10, out
        assert re.search(rf"^  {verb}: mean [\d.]+ ms/job .* last/first group [\d.]+", out, re.M), out
    assert re.search(r"state file after apply: \d+ KiB, \d+ bytes/job", out), out
    leftover = subprocess.run(["squeue", "-h", "-t", "PD,R", "-o", "%j"], capture_output=True, text=True, timeout=30).stdout
    assert "js-bench-" not in leftover  # destroy cancelled every job
