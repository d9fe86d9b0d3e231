"""Resharded resume: a checkpoint written by 2 workers loads into 1 process, and back into 2."""

from __future__ import annotations

import pytest

try:
    import torch
except ImportError:
    pytest.skip("jsruntime tests need torch (pip install torch==2.13.0)", allow_module_level=True)

import jsrt_helpers as h

FSDP = '{"parallelism": "fsdp", "config": {"sharding_strategy": "FULL_SHARD"}}'
DDP = '{"parallelism": "ddp"}'


def test_two_to_one_to_two(tmp_path):
    ckpt = tmp_path / "ckpt"
    sync = {"JETSTREAM_SAVE_FREQUENCY": "1000steps", "JETSTREAM_CHECKPOINT_MODE": "sync"}

    # 2 workers, FSDP2 FULL_SHARD: train 20 steps, final checkpoint at step 20
    h.run(h.torchrun(2, h.TRAINER, "--steps", "20"), h.job_env(ckpt, JETSTREAM_STRATEGY=FSDP, **sync), tmp_path, "fsdp2")
    saved20 = h.load_checkpoint(ckpt / "step-00000020", tmp_path)

    # 1 process without torchrun: resumes at step 20 with the same parameters, trains to 30
    one = h.run(
        h.single(h.TRAINER, "--steps", "30", "--dump", str(tmp_path / "one.pt")), h.job_env(ckpt, **sync), tmp_path, "one"
    )
    restore = [r for r in one.records("event") if r["event"] == "restore"][0]
    assert restore["step"] == 20 and restore["saved_world_size"] == 2 and restore["world_size"] == 1
    dumped = torch.load(tmp_path / "one.pt")
    assert dumped["step"] == 20
    h.assert_same_tensors(dumped["model"], saved20["model"])
    saved30 = h.load_checkpoint(ckpt / "step-00000030", tmp_path)
    assert saved30["optim"]["state"], "optimizer state is saved"

    # 2 workers, DDP: resume at step 30 with the parameters the single process saved
    two = h.run(
        h.torchrun(2, h.TRAINER, "--steps", "30", "--dump", str(tmp_path / "two.pt")),
        h.job_env(ckpt, JETSTREAM_STRATEGY=DDP, **sync), tmp_path, "ddp2",
    )
    restore = [r for r in two.records("event") if r["event"] == "restore"][0]
    assert restore["step"] == 30 and restore["saved_world_size"] == 1 and restore["world_size"] == 2
    dumped = torch.load(tmp_path / "two.pt")
    assert dumped["step"] == 30
    h.assert_same_tensors(dumped["model"], saved30["model"])
