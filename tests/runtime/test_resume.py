"""Bit-exact resume: kill -9 one worker of the quickstart; torchrun restarts it from the latest checkpoint."""

from __future__ import annotations

import os
import signal

import pytest

try:
    import torch  # noqa: F401
except ImportError:
    pytest.skip("jsruntime tests need torch (pip install torch==2.13.0)", allow_module_level=True)

import jsrt_helpers as h

STEPS = 300


COMMON = dict(JETSTREAM_SAVE_FREQUENCY="50steps", JETSTREAM_KEEP_LATEST="2", JETSTREAM_CHECKPOINT_MODE="thread")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run: its metric lines and its directory."""
    out = tmp_path_factory.mktemp("ref")
    env = h.job_env(out / "ckpt", **COMMON)
    job = h.run(h.torchrun(2, h.QUICKSTART, "--steps", str(STEPS), "--output-dir", str(out)), env, out, "ref", timeout=120)
    return job, out


# The runtime builds its process group on a PrefixStore per restart, so restarts work with
# torchrun's shared rendezvous store (the default) and with TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1.
@pytest.mark.parametrize("disable_shared_store", ["0", "1"])
def test_kill_a_worker_then_resume_bit_exact(tmp_path, reference, disable_shared_store):
    ref, ref_dir = reference
    args = ("--steps", str(STEPS), "--output-dir")
    common = dict(COMMON, TORCH_DISABLE_SHARE_RDZV_TCP_STORE=disable_shared_store)
    env = h.job_env(tmp_path / "killed" / "ckpt", **common)
    job = h.start(h.torchrun(2, h.QUICKSTART, *args, str(tmp_path / "killed"), max_restarts=1), env, tmp_path, "killed")
    try:
        job.wait_for(lambda r: r["jetstream"] == "checkpoint" and r["step"] >= 100, timeout=90)
        workers = h.children(job.proc.pid)
        assert len(workers) == 2, workers
        os.kill(workers[1], signal.SIGKILL)  # kill -9 one worker in the middle of training
        rc = job.finish(timeout=120)
    finally:
        if job.proc.poll() is None:
            job.kill()
    assert rc == 0, job.tail()

    restores = [r for r in job.records("event") if r["event"] == "restore"]
    assert restores and restores[-1]["restart_count"] == 1, job.tail()
    resumed_at = restores[-1]["step"]
    assert 100 <= resumed_at < STEPS

    # every step after the restart has exactly the reference loss
    ref_loss = {r["step"]: r["loss"] for r in ref.records("metrics")}
    cut = next(i for i, line in enumerate(job.lines) if '"restore"' in line and '"restart_count": 1' in line)
    replayed = [r for r in h.parse(job.lines[cut:]) if r["jetstream"] == "metrics"]
    assert [r["step"] for r in replayed] == list(range(resumed_at + 1, STEPS + 1))
    for r in replayed:
        assert r["loss"] == ref_loss[r["step"]], f"step {r['step']}: {r['loss']} != {ref_loss[r['step']]}"

    # final parameters and optimizer state are bitwise identical
    a = h.load_checkpoint(ref_dir / "ckpt" / f"step-{STEPS:08d}", tmp_path)
    b = h.load_checkpoint(tmp_path / "killed" / "ckpt" / f"step-{STEPS:08d}", tmp_path)
    h.assert_same_tensors(a["model"], b["model"])
    assert (tmp_path / "killed" / "final.json").read_text() == (ref_dir / "final.json").read_text()
