"""Bit-exact resume with 4 workers: preempted (SIGUSR1 -> exit 75) and resumed equals uninterrupted.

With more than two ranks the ring allreduce's order of addition depends on DDP's gradient bucket
layout; jsruntime pins that layout before the first step (strategy._pin_buckets), so a restarted
job reduces every step exactly as the uninterrupted one did.
"""

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

WORKERS = 4
STEPS = 60
COMMON = {"JETSTREAM_SAVE_FREQUENCY": "1000steps", "JETSTREAM_CHECKPOINT_MODE": "thread"}


def _cmd(out) -> list[str]:
    return [sys.executable, "-m", "jsruntime.launch", "--standalone", f"--nproc-per-node={WORKERS}",
            str(h.QUICKSTART), "--steps", str(STEPS), "--output-dir", str(out)]


def test_four_workers_preempted_and_resumed_bitwise(tmp_path):
    ref_dir, run_dir = tmp_path / "ref", tmp_path / "run"
    ref = h.run(_cmd(ref_dir), h.job_env(ref_dir / "ckpt", **COMMON), tmp_path, "ref", timeout=120)

    env = h.job_env(run_dir / "ckpt", **COMMON)
    job = h.start(_cmd(run_dir), env, tmp_path, "preempted")
    try:
        job.wait_for(lambda r: r["jetstream"] == "metrics" and r["step"] >= 3, timeout=90)
        os.kill(job.proc.pid, signal.SIGUSR1)
        rc = job.finish(timeout=60)
    finally:
        if job.proc.poll() is None:
            job.kill()
    assert rc == 75, job.tail()
    saved = [r["step"] for r in job.records("event") if r["event"] == "preempt"]
    assert saved and 3 <= saved[0] < STEPS, job.tail()

    resumed = h.run(_cmd(run_dir), env, tmp_path, "resumed", timeout=120)
    restore = [r for r in resumed.records("event") if r["event"] == "restore"]
    assert restore and restore[0]["step"] == saved[0], resumed.tail()

    ref_loss = {r["step"]: r["loss"] for r in ref.records("metrics")}
    assert sorted(ref_loss) == list(range(1, STEPS + 1))
    losses = job.records("metrics") + resumed.records("metrics")
    assert [r["step"] for r in losses] == list(range(1, STEPS + 1))
    differ = [(r["step"], r["loss"], ref_loss[r["step"]]) for r in losses if r["loss"] != ref_loss[r["step"]]]
    assert not differ, f"steps whose loss differs from the uninterrupted run: {differ[:5]}"

    a = h.load_checkpoint(ref_dir / "ckpt" / f"step-{STEPS:08d}", tmp_path)
    b = h.load_checkpoint(run_dir / "ckpt" / f"step-{STEPS:08d}", tmp_path)
    h.assert_same_tensors(a["model"], b["model"])
    assert (run_dir / "final.json").read_text() == (ref_dir / "final.json").read_text()
