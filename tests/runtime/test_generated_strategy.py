"""The FSDP configuration the plan generates (jsctl.plan.strategy_config) is what jsruntime applies:
auto-wrap per block (by class or by size), activation checkpointing on the blocks, SHARD_GRAD_OP (no
resharding after forward), mixed precision; DDP checkpoints the named blocks. (A DeepSpeed job's config
file: tests/integration/local/test_deepspeed_config.py.)"""

from __future__ import annotations

import json

import pytest

from jsctl.plan.strategy_config import Inputs, generate

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="jsruntime tests need torch (pip install torch==2.13.0)")

BLOCKS = ["blocks.0", "blocks.1", "blocks.2"]


def _strategy(**config) -> str:
    generated = generate("fsdp", config, Inputs(nodes=1, gpus_per_node=2, micro_batch_size=16))
    assert not generated.errors
    return json.dumps(generated.env)


@needs_torch
def test_generated_fsdp_config_is_applied_and_trains(tmp_path):
    import jsrt_helpers as h

    config = {"sharding_strategy": "SHARD_GRAD_OP", "wrap_modules": ["Block"], "activation_checkpointing": True}
    strategy = _strategy(**config)
    fsdp = json.loads(strategy)["fsdp"]
    assert fsdp["auto_wrap"] == {"policy": "module_classes", "module_classes": ["Block"]}
    assert fsdp["reshard_after_forward"] is False and fsdp["activation_checkpointing"] is True

    env = h.job_env(tmp_path / "ckpt", JETSTREAM_STRATEGY=strategy, JETSTREAM_SAVE_FREQUENCY="3steps")
    job = h.run(h.torchrun(2, h.TRAINER, "--model", "blocks", "--batch-size", "16", "--steps", "6"),
                env, tmp_path, "ac")
    wrap = [r for r in job.records("event") if r["event"] == "wrap"]
    assert len(wrap) == 1, job.tail()
    wrap = wrap[0]
    assert wrap["fsdp_units"] == ["<root>", *BLOCKS]  # one FSDP unit per Block, then the root
    assert wrap["checkpointed"] == BLOCKS  # activation checkpointing on exactly the wrapped blocks
    assert wrap["reshard_after_forward"] == {b: False for b in BLOCKS}  # SHARD_GRAD_OP
    assert [r["step"] for r in job.records("checkpoint")] == [3, 6]
    losses = [r["loss"] for r in job.records("metrics")]
    assert len(losses) == 6 and all(isinstance(x, float) for x in losses)

    # the same plan without activation checkpointing: same units, nothing recomputed, the same losses
    # (checkpointing recomputes the forward in backward; it changes memory, not the arithmetic)
    env["JETSTREAM_STRATEGY"] = _strategy(**{**config, "activation_checkpointing": False})
    env["JETSTREAM_CHECKPOINT_DIR"] = str(tmp_path / "ckpt-plain")
    plain = h.run(h.torchrun(2, h.TRAINER, "--model", "blocks", "--batch-size", "16", "--steps", "6"),
                  env, tmp_path, "plain")
    plain_wrap = next(r for r in plain.records("event") if r["event"] == "wrap")
    assert plain_wrap["fsdp_units"] == ["<root>", *BLOCKS] and plain_wrap["checkpointed"] == []
    assert [r["loss"] for r in plain.records("metrics")] == losses


@needs_torch
def test_generated_mixed_precision_and_size_policy_are_applied(tmp_path):
    """bf16 params with fp32 reduction, units by size (every Block holds ~2·h² parameters; the
    threshold takes the blocks and leaves the small embedding and head to the root)."""
    import jsrt_helpers as h

    hidden = 64
    block_params = 2 * (hidden * 2 * hidden) + 3 * hidden + 2 * hidden  # fc1, fc2, biases, LayerNorm
    strategy = _strategy(sharding_strategy="FULL_SHARD", mixed_precision="bf16", wrap_min_params=block_params)
    env = h.job_env(tmp_path / "ckpt", JETSTREAM_STRATEGY=strategy)
    job = h.run(h.torchrun(2, h.TRAINER, "--model", "blocks", "--hidden", str(hidden), "--steps", "3"),
                env, tmp_path, "bf16")
    wrap = next(r for r in job.records("event") if r["event"] == "wrap")
    assert wrap["fsdp_units"] == ["<root>", *BLOCKS]
    assert wrap["reshard_after_forward"] == {b: True for b in BLOCKS}
    assert wrap["mixed_precision"] == {b: ["bfloat16", "float32"] for b in BLOCKS}


@needs_torch
def test_ddp_with_activation_checkpointing_on_the_named_blocks(tmp_path):
    import jsrt_helpers as h

    generated = generate("ddp", {"wrap_modules": ["Block"], "activation_checkpointing": True}, Inputs(1, 2, 16))
    env = h.job_env(tmp_path / "ckpt", JETSTREAM_STRATEGY=json.dumps(generated.env))
    job = h.run(h.torchrun(2, h.TRAINER, "--model", "blocks", "--batch-size", "16", "--steps", "3"),
                env, tmp_path, "ddp")
    wrap = next(r for r in job.records("event") if r["event"] == "wrap")
    assert wrap["ddp"] is True and wrap["fsdp_units"] == []
    assert wrap["checkpointed"] == [f"module.{b}" for b in BLOCKS]
