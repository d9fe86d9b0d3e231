"""Launch training processes for the runtime tests, read their metric lines, inspect checkpoints."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart" / "train.py"
TRAINER = Path(__file__).resolve().parent / "trainer.py"
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]
SIGNALS = "--signals-to-handle=SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1"


def job_env(ckpt_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JETSTREAM_", "JSRUNTIME_"))}
    env.update(
        JETSTREAM_CHECKPOINT_DIR=str(ckpt_dir),
        OMP_NUM_THREADS="1",
        PYTHONUNBUFFERED="1",
        JOB_ID="test-job",
    )
    env.update(extra)
    return env


def torchrun(nproc: int, script: Path, *args: str, max_restarts: int = 0, signals: bool = False) -> list[str]:
    cmd = TORCHRUN + ["--standalone", f"--nproc-per-node={nproc}", f"--max-restarts={max_restarts}"]
    if signals:
        cmd.append(SIGNALS)
    return cmd + [str(script), *args]


def single(script: Path, *args: str) -> list[str]:
    return [sys.executable, str(script), *args]


@dataclass
class Job:
    """A running command with its stdout lines collected by a thread."""

    proc: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    _q: queue.Queue[str | None] = field(default_factory=queue.Queue)
    stderr_path: Path | None = None

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._q.put(line)
        self._q.put(None)

    def records(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [r for r in parse(self.lines) if kind is None or r["jetstream"] == kind]

    def wait_for(self, pred: Callable[[dict[str, Any]], bool], timeout: float) -> dict[str, Any]:
        """Block until a metric record satisfying ``pred`` arrives; return it."""
        deadline = time.monotonic() + timeout
        for rec in parse(self.lines):
            if pred(rec):
                return rec
        while time.monotonic() < deadline:
            try:
                line = self._q.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                raise AssertionError(f"process ended before the awaited record\n{self.tail()}")
            self.lines.append(line)
            for rec in parse([line]):
                if pred(rec):
                    return rec
        raise AssertionError(f"timed out waiting for a record\n{self.tail()}")

    def finish(self, timeout: float) -> int:
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"timed out after {timeout}s\n{self.tail()}") from None
        while True:
            line = self._q.get(timeout=10)
            if line is None:
                break
            self.lines.append(line)
        return rc

    def kill(self) -> None:
        """SIGKILL this job's process and all its descendants (torchrun puts workers in new sessions)."""
        for pid in [self.proc.pid, *descendants(self.proc.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=30)

    def tail(self) -> str:
        err = self.stderr_path.read_text()[-4000:] if self.stderr_path and self.stderr_path.exists() else ""
        return "stdout:\n" + "".join(self.lines[-30:]) + "\nstderr:\n" + err


def start(cmd: list[str], env: dict[str, str], log_dir: Path, name: str) -> Job:
    log_dir.mkdir(parents=True, exist_ok=True)
    err = log_dir / f"{name}.stderr"
    proc = subprocess.Popen(
        cmd, env=env, cwd=str(ROOT), stdout=subprocess.PIPE, stderr=open(err, "w"),
        text=True, start_new_session=True,
    )
    job = Job(proc, stderr_path=err)
    threading.Thread(target=job._pump, daemon=True).start()
    return job


def run(cmd: list[str], env: dict[str, str], log_dir: Path, name: str, timeout: float = 90) -> Job:
    job = start(cmd, env, log_dir, name)
    rc = job.finish(timeout)
    assert rc == 0, f"{name} exited {rc}\n{job.tail()}"
    return job


def parse(lines: list[str]) -> list[dict[str, Any]]:
    out = []
    for line in lines:
        line = line.strip()
        if line.startswith("{"):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict) and "jetstream" in rec:
                out.append(rec)
    return out


def children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            kids.extend(int(t) for t in (task / "children").read_text().split())
    except OSError:
        pass
    return kids


def descendants(pid: int) -> list[int]:
    out: list[int] = []
    for kid in children(pid):
        out.append(kid)
        out.extend(descendants(kid))
    return out


def load_checkpoint(step_dir: Path, scratch: Path) -> dict[str, Any]:
    """Read a DCP checkpoint in this (non-distributed) process."""
    import torch
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    out = scratch / f"{step_dir.name}-{time.monotonic_ns()}.pt"
    dcp_to_torch_save(str(step_dir), str(out))
    return torch.load(out, weights_only=False)


def assert_same_tensors(a: dict[str, Any], b: dict[str, Any]) -> None:
    import torch

    assert sorted(a) == sorted(b)
    for key in a:
        assert torch.equal(a[key], b[key]), f"{key} differs"
