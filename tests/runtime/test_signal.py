"""Preemption: SIGUSR1/SIGTERM -> finish the step, checkpoint synchronously, exit 75."""

from __future__ import annotations

import os
import signal
import sys

import pytest

try:
    import torch  # noqa: F401
except ImportError:
    pytest.skip("jsruntime tests need torch (pip install torch==2.13.0)", allow_module_level=True)

import jsrt_helpers as h
import jsruntime
from jsruntime import checkpoint_dir as cdir
from jsruntime.launch import torchrun_command


def _preempted(job: h.Job, sent_after_step: int, ckpt) -> int:
    preempt = [r for r in job.records("event") if r["event"] == "preempt"]
    assert preempt, job.tail()
    step = preempt[0]["step"]
    assert sent_after_step <= step <= sent_after_step + 2, "stopped within one step of the signal"
    saved = [r for r in job.records("checkpoint") if r["step"] == step]
    assert saved and saved[0]["mode"] == "sync"
    assert cdir.latest_complete(ckpt)[0] == step
    return step


@pytest.mark.parametrize("shape", ["torchrun", "shell"])
@pytest.mark.parametrize("targets", ["launcher", "every process"])
def test_sigusr1_checkpoints_and_exits_75(tmp_path, targets, shape):
    """SIGUSR1 to the launcher (Kubernetes-like), or to every process at once (like Slurm's
    ``scancel --signal=USR1``: torchrun also gets it directly and aborts its shutdown). The launcher
    runs torchrun, or (``--exec``) a shell that forks torchrun and dies of the signal itself."""
    ckpt = tmp_path / "ckpt"
    env = h.job_env(ckpt, JETSTREAM_SAVE_FREQUENCY="1000steps", JETSTREAM_CHECKPOINT_MODE="thread")
    args = ["--standalone", "--nproc-per-node=2", str(h.TRAINER), "--steps", "2000", "--sleep", "0.05"]
    cmd = [sys.executable, "-m", "jsruntime.launch", *args]
    if shape == "shell":
        torchrun = " ".join([sys.executable, "-m", "torch.distributed.run", *args])
        cmd = [sys.executable, "-m", "jsruntime.launch", "--exec", "bash", "-c", f"{torchrun}; echo not reached"]
    job = h.start(cmd, env, tmp_path, "usr1")
    try:
        seen = job.wait_for(lambda r: r["jetstream"] == "metrics" and r["step"] >= 10, timeout=60)["step"]
        pids = [job.proc.pid] + (h.descendants(job.proc.pid) if targets != "launcher" else [])
        for pid in pids:
            try:
                os.kill(pid, signal.SIGUSR1)
            except ProcessLookupError:  # a short-lived child (the shell's) ended since it was listed
                pass
        rc = job.finish(timeout=60)
    finally:
        if job.proc.poll() is None:
            job.kill()
    assert rc == jsruntime.REQUEUE_EXIT_CODE == 75, job.tail()
    step = _preempted(job, seen, ckpt)
    assert step < 2000


def test_sigterm_single_process_exits_75_and_resumes(tmp_path):
    ckpt = tmp_path / "ckpt"
    env = h.job_env(ckpt, JETSTREAM_SAVE_FREQUENCY="1000steps")
    job = h.start(h.single(h.TRAINER, "--steps", "2000", "--sleep", "0.02"), env, tmp_path, "term")
    try:
        seen = job.wait_for(lambda r: r["jetstream"] == "metrics" and r["step"] >= 5, timeout=60)["step"]
        job.proc.send_signal(signal.SIGTERM)
        rc = job.finish(timeout=60)
    finally:
        if job.proc.poll() is None:
            job.kill()
    assert rc == 75, job.tail()
    step = _preempted(job, seen, ckpt)
    again = h.run(h.single(h.TRAINER, "--steps", str(step + 2)), env, tmp_path, "again")
    assert [r["step"] for r in again.records("event") if r["event"] == "restore"] == [step]


def test_launcher_adds_signal_flag_once():
    cmd = torchrun_command(["--nproc-per-node=2", "train.py"], python="py")
    assert cmd == ["py", "-m", "torch.distributed.run", "--signals-to-handle=SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1",
                   "--nproc-per-node=2", "train.py"]
    cmd = torchrun_command(["--signals-to-handle=SIGTERM", "train.py"], python="py")
    assert cmd.count("--signals-to-handle=SIGTERM") == 1 and len(cmd) == 5
