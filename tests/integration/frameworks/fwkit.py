"""Helpers for the framework integration tests (jsruntime.hf, jsruntime.accelerate): the example jobs in
examples/frameworks applied with the real CLI on the local provider, preempted with SIGUSR1 as Slurm's
--signal would, and their jsruntime records read back from `jsctl logs --metrics`."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import logrecords

ROOT = Path(__file__).resolve().parents[3]
FRAMEWORKS = ROOT / "examples" / "frameworks"


def copy_examples(ws: Path) -> Path:
    """examples/frameworks into the workspace (jobs write out/ beside their file)."""
    shutil.copytree(FRAMEWORKS, ws / "frameworks", ignore=shutil.ignore_patterns("out", "__pycache__"))
    return ws / "frameworks"


def renamed(job_file: Path, name: str) -> Path:
    """A copy of `job_file` whose job is called `name` (an uninterrupted reference run beside it)."""
    text = job_file.read_text()
    old = next(line for line in text.splitlines() if line.startswith("  name: "))
    out = job_file.with_name(f"{name}.yaml")
    out.write_text(text.replace(old, f"  name: {name}", 1))
    return out


def cli(*args: str, timeout: float = 120) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "jsctl.cli", *args], capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def row(job: str) -> dict:
    code, out, err = cli("status", job, "--json")
    assert code == 0, err
    return json.loads(out)["jobs"][0]


def wait_phase(job: str, timeout: float, phases: tuple[str, ...] = ("SUCCEEDED", "FAILED", "CANCELLED")) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        r = row(job)
        if r["phase"] in phases:
            return r
        if time.monotonic() > deadline:
            raise AssertionError(f"{job} did not reach {phases} in {timeout:.0f}s: {r}\n{cli('logs', job)[1][-3000:]}")
        time.sleep(0.5)


def checkpoint_root(ws: Path, job: str) -> Path:
    return next(ws.glob(f"**/out/{row(job)['job_id']}")) / "checkpoints"


def preempt_after_first_checkpoint(ws: Path, job: str, pattern: str, timeout: float = 150) -> None:
    """SIGUSR1 to the job's launcher once a complete checkpoint (`pattern`/COMPLETE) exists."""
    job_id = row(job)["job_id"]
    deadline = time.monotonic() + timeout
    while not list(ws.glob(f"**/out/{job_id}/checkpoints/{pattern}/COMPLETE")):
        assert time.monotonic() < deadline, f"no complete checkpoint in {timeout}s:\n{cli('logs', job)[1][-3000:]}"
        assert row(job)["phase"] in ("PENDING", "RUNNING"), cli("logs", job)[1][-3000:]
        time.sleep(0.2)
    status = json.loads((ws / ".jsctl" / "runs" / job_id / "status.json").read_text())
    os.kill(int(status["child_pgid"]), signal.SIGUSR1)  # the launcher: it forwards to torchrun and the workers


def records(job: str) -> list[dict]:
    return logrecords.parse(cli("logs", job, "--metrics")[1])


def events(recs: list[dict], name: str) -> list[dict]:
    return [r for r in recs if r["jetstream"] == "event" and r.get("event") == name]


def losses(recs: list[dict]) -> dict[int, float]:
    """step -> loss; a step replayed after a restore keeps its last value."""
    return {r["step"]: r["loss"] for r in recs if r["jetstream"] == "metrics" and "loss" in r}


def kill_leftovers(ws: Path) -> None:
    """Never leave a job running after a test."""
    for status in ws.glob(".jsctl/runs/*/status.json"):
        try:
            data = json.loads(status.read_text())
        except ValueError:
            continue
        if data.get("child_pgid") and data.get("phase") in ("RUNNING", "PAUSED"):
            try:
                os.killpg(int(data["child_pgid"]), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def final(ws: Path, job: str) -> dict:
    return json.loads(next(ws.glob(f"**/out/{row(job)['job_id']}/results/final.json")).read_text())


def checkpoints(ws: Path, job: str) -> list[str]:
    return sorted(p.name for p in checkpoint_root(ws, job).iterdir() if not p.name.startswith("."))


def preempted_and_plain(ws: Path, job_file: str, job: str, pattern: str, steps: int, min_step_seconds: float,
                        timeout: float = 300) -> tuple[list[dict], list[dict], int]:
    """Apply `job_file` twice (as `job`, and renamed `<job>-plain`), preempt `job` with SIGUSR1 once its first
    complete checkpoint (`pattern`) exists, wait for both to succeed; its records, the plain run's, and the
    step the preemption saved (= the step the requeued run restored)."""
    path = ws / "frameworks" / job_file
    plain = renamed(path, f"{job}-plain")
    code, out, err = cli("apply", "-f", str(path), "-f", str(plain), "--auto-approve", "-v", f"STEPS={steps}",
                         "-v", f"MIN_STEP_SECONDS={min_step_seconds}")  # time for the signal to land mid-run
    assert code == 0, out + err
    preempt_after_first_checkpoint(ws, job, pattern)
    done = wait_phase(job, timeout=timeout)
    log = cli("logs", job)[1]
    assert done["phase"] == "SUCCEEDED", log[-3000:]
    assert "preempted (exit 75)" in log and done["restarts"] >= 1, log[-3000:]
    assert wait_phase(f"{job}-plain", timeout=timeout)["phase"] == "SUCCEEDED", cli("logs", f"{job}-plain")[1][-3000:]
    recs, ref = records(job), records(f"{job}-plain")
    saved = [e["step"] for e in events(recs, "preempt")]
    restored = [e["step"] for e in events(recs, "restore")]
    assert len(saved) == 1 and saved == restored and 0 < saved[0] < steps, (saved, restored)
    assert not events(ref, "restore"), "the reference run was restarted: it is no uninterrupted run"
    return recs, ref, saved[0]
