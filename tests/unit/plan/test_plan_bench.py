"""benchmarks/plan_bench.py at a reduced size: it completes and prints its figures for each command
and size, and the growth line. Times are printed, never asserted."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_plan_bench_runs_at_a_reduced_size(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}  # no engine: status does not wait on one
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "plan_bench.py"), "--sizes", "20,60",
                          "--keep", str(tmp_path)], capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    assert re.search(r"^ +20 plan new +[\d.]+ s \(cpu +[\d.]+ s\)  \(Plan: 20 to add, 0 to change, 0 to destroy\.\)$", out, re.M), out
    assert re.search(r"^ +60 plan no-change +[\d.]+ s \(cpu +[\d.]+ s\)  \(No changes\..*; 60 in state\)$", out, re.M), out
    assert re.search(r"^ +60 state list +[\d.]+ s \(cpu +[\d.]+ s\)  \(60 lines\)$", out, re.M), out
    assert re.search(r"^ +60 status +[\d.]+ s \(cpu +[\d.]+ s\)  \(6\d lines; no engine", out, re.M), out
    for name in ("plan new", "plan no-change", "state list", "status"):
        assert re.search(rf"^{name} +[\d.]+ +[\d.]+ +[\d.]+ s +[\d.]+x for 3\.0x the jobs \((within|OVER)\)$",
                         out, re.M), out
        assert re.search(rf"^{name} +[\d.]+ +[\d.]+ +[\d.]+x$", out, re.M), out  # the CPU seconds
    assert re.search(r"^load average \(1 min\) at the end: [\d.]+", out, re.M), out
