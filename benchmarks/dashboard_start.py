"""How fast `jsctl dashboard` serves: seconds from process start to the first 200 on / (the page) and on
/api/jobs (the first data), against `jsctl --version` (the CLI's own start) measured in the same run.

    python benchmarks/dashboard_start.py [--runs 5]

Target (issue 15): under a second.
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_200(ws: str, path: str = "/") -> float:
    port = free_port()
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "jsctl", "dashboard", "--port", str(port)], cwd=ws,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
                    if r.status == 200:
                        return time.perf_counter() - started
            except OSError:
                if proc.poll() is not None:
                    raise SystemExit("jsctl dashboard exited before serving")
                time.sleep(0.01)
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    runs = ap.parse_args().runs
    with tempfile.TemporaryDirectory() as ws:
        base = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "jsctl", "--version"], cwd=ws, stdout=subprocess.DEVNULL, check=True)
            base.append(time.perf_counter() - t)
        served = [first_200(ws) for _ in range(runs)]
        data = [first_200(ws, "/api/jobs") for _ in range(runs)]
    b, d, j = statistics.median(base), statistics.median(served), statistics.median(data)
    print(f"jsctl --version                               {b:.3f} s  (median of {runs})")
    print(f"jsctl dashboard: start to first 200 on /      {d:.3f} s  (ratio {d / b:.1f}; target < 1 s)")
    print(f"jsctl dashboard: start to first /api/jobs 200 {j:.3f} s  (ratio {j / b:.1f})")


if __name__ == "__main__":
    main()
