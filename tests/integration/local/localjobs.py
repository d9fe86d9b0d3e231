"""Helpers for tests that drive the real CLI against the local provider."""
import json
import os
import subprocess
import sys
import time


def job_yaml(name: str, command: list, extra: str = "") -> str:
    return (f"version: jetstream.v1\njob:\n  name: {name}\nlifecycle:\n  command: {json.dumps(command)}\n" + extra)


def run_cli(*args: str, timeout: float = 120, env: dict | None = None, input: str | None = None):
    """The real console entry point in a subprocess: exit code, stdout, stderr."""
    proc = subprocess.run([sys.executable, "-m", "jsctl.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, input=input)
    return proc.returncode, proc.stdout, proc.stderr


def wait_phase(job: str, phases: tuple = ("SUCCEEDED", "FAILED", "CANCELLED"), timeout: float = 90) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        code, out, err = run_cli("status", job, "--json")
        assert code == 0, err
        row = json.loads(out)["jobs"][0]
        if row["phase"] in phases:
            return row
        time.sleep(0.3)
    raise AssertionError(f"{job} did not reach {phases} in {timeout}s: {row}")
