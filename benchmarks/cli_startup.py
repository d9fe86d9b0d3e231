"""How fast the CLI answers: median wall time of common commands against a bare interpreter.

    python benchmarks/cli_startup.py [--runs 9]

Prints seconds and the ratio to `python -c pass` measured in the same run. Targets: `--help`
within 0.25 s over the interpreter, validate/plan on one file within 0.6 s over it.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")


def median_time(argv: list[str], runs: int, cwd: str) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    runs = ap.parse_args().runs
    jsctl = [sys.executable, "-m", "jsctl"]
    with tempfile.TemporaryDirectory() as ws:
        base = median_time([sys.executable, "-c", "pass"], runs, ws)
        cases = {
            "jsctl --help": jsctl + ["--help"],
            "jsctl validate finetune-llama.yaml": jsctl + ["validate", os.path.join(EXAMPLES, "finetune-llama.yaml")],
            "jsctl validate pipeline.yaml (workflow)": jsctl + ["validate", os.path.join(EXAMPLES, "pipeline.yaml")],
            "jsctl plan -f quickstart.yaml": jsctl + ["plan", "-f", os.path.join(EXAMPLES, "quickstart.yaml")],
        }
        print(f"{'command':<42} {'median s':>9} {'over python':>12} {'ratio':>6}")
        print(f"{'python -c pass':<42} {base:>9.3f} {0:>12.3f} {1:>6.1f}")
        for name, argv in cases.items():
            t = median_time(argv, runs, ws)
            print(f"{name:<42} {t:>9.3f} {t - base:>12.3f} {t / base:>6.1f}")


if __name__ == "__main__":
    main()
