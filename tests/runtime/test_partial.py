"""No partial checkpoint: kill -9 during a save; the next run restores the previous complete one."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

try:
    import torch
except ImportError:
    pytest.skip("jsruntime tests need torch (pip install torch==2.13.0)", allow_module_level=True)

import jsrt_helpers as h
from jsruntime import checkpoint_dir as cdir


class DirWatcher(threading.Thread):
    """Samples the checkpoint directory; kills the job once a save is half written."""

    def __init__(self, root: Path, job: h.Job) -> None:
        super().__init__(daemon=True)
        self.root, self.job = root, job
        self.stop = threading.Event()
        self.killed_during: str | None = None
        self.complete_counts: list[int] = []

    def run(self) -> None:
        while not self.stop.is_set() and self.job.proc.poll() is None:
            complete = cdir.complete_checkpoints(self.root)
            self.complete_counts.append(len(complete))
            partial = [p for p in self.root.glob(cdir.TMP_PREFIX + "*") if any(p.glob("*.distcp"))]
            if complete and partial:
                self.job.kill()  # SIGKILL launcher and workers while shards are being written
                self.killed_during = partial[0].name
                return
            time.sleep(0.002)


def test_kill_during_save_leaves_previous_checkpoint(tmp_path):
    ckpt = tmp_path / "ckpt"
    env = h.job_env(ckpt, JETSTREAM_SAVE_FREQUENCY="2steps", JETSTREAM_KEEP_LATEST="1", JETSTREAM_CHECKPOINT_MODE="sync")
    cmd = h.torchrun(2, h.TRAINER, "--steps", "40", "--hidden", "2048")
    for attempt in range(3):
        job = h.start(cmd, env, tmp_path, f"killed{attempt}")
        watcher = DirWatcher(ckpt, job)
        watcher.start()
        try:
            job.finish(timeout=120)
        finally:
            watcher.stop.set()
            watcher.join(timeout=10)
            if job.proc.poll() is None:
                job.kill()
        # retention (keep_latest=1) never left zero complete checkpoints once one existed
        first = next((i for i, n in enumerate(watcher.complete_counts) if n), None)
        assert first is not None, job.tail()
        assert min(watcher.complete_counts[first:]) >= 1
        leftovers = sorted(p.name for p in ckpt.glob(cdir.TMP_PREFIX + "*"))
        if watcher.killed_during and leftovers:
            break
    else:
        pytest.fail("could not kill the job in the middle of a save in 3 attempts")

    complete = cdir.complete_checkpoints(ckpt)
    assert len(complete) == 1  # keep_latest=1
    good_step = complete[-1][0]
    partial_step = int(leftovers[0][len(cdir.TMP_PREFIX):].split("-")[0])
    assert partial_step > good_step

    rerun = h.run(h.single(h.TRAINER, "--steps", str(good_step), "--hidden", "2048", "--dump", str(tmp_path / "d.pt")),
                  env, tmp_path, "rerun")
    restore = [r for r in rerun.records("event") if r["event"] == "restore"][0]
    assert restore["step"] == good_step
    assert torch.load(tmp_path / "d.pt")["step"] == good_step
    assert not list(ckpt.glob(cdir.TMP_PREFIX + "*")), "the partial save was cleaned up"
