"""jsruntime.hf.prepare: the plan mapped onto TrainingArguments, conflicts reported (never silently
overridden), the newest complete checkpoint to resume from, and keep_latest over complete checkpoints."""
from __future__ import annotations

import json
import logging

import pytest

pytest.importorskip("torch", reason="jsruntime tests need torch (pip install torch==2.13.0)")
pytest.importorskip("transformers", reason="jsruntime.hf needs the hf extra (pip install -e '.[hf]')")

from transformers import TrainingArguments  # noqa: E402

import jsruntime.hf as hf  # noqa: E402
from jsruntime import ConfigError, read_env  # noqa: E402

FSDP = {"parallelism": "fsdp", "config": {"mixed_precision": "bf16"},
        "fsdp": {"sharding_strategy": "SHARD_GRAD_OP",
                 "auto_wrap": {"policy": "module_classes", "module_classes": ["LlamaDecoderLayer"]}},
        "batch": {"micro_batch_size": 4, "gradient_accumulation_steps": 2}}


def args(**kw) -> TrainingArguments:
    return TrainingArguments(**{"output_dir": "trainer_output", "report_to": "none", "use_cpu": True, **kw})


def plan(tmp_path, **extra) -> dict:
    return {"JETSTREAM_CHECKPOINT_DIR": str(tmp_path / "ck"), "JETSTREAM_SAVE_FREQUENCY": "50steps",
            "JETSTREAM_KEEP_LATEST": "2", **extra}


def checkpoint(root, step: int, complete: bool = True) -> None:
    d = root / f"checkpoint-{step}"
    d.mkdir(parents=True)
    if complete:
        hf.mark_complete(d, step, 1)


def test_the_plans_directory_frequency_and_strategy_reach_the_arguments(tmp_path):
    env = plan(tmp_path, JETSTREAM_STRATEGY=json.dumps(FSDP), JETSTREAM_LOG_EVERY="5")
    p = hf.prepare(args(), environ=env)
    assert p.output_dir == str(tmp_path / "ck")
    assert (str(getattr(p.save_strategy, "value", p.save_strategy)), p.save_steps) == ("steps", 50)
    assert p.save_total_limit is None  # the callback keeps keep_latest complete checkpoints itself
    assert p.logging_steps == 5 and p.enable_jit_checkpoint is False
    assert p.fsdp and p.fsdp_config["version"] == 2 and p.fsdp_config["reshard_after_forward"] is False
    assert p.fsdp_config["transformer_layer_cls_to_wrap"] == ["LlamaDecoderLayer"]
    assert p.bf16 is True and p.fp16 is False
    assert (p.per_device_train_batch_size, p.gradient_accumulation_steps) == (4, 2)
    assert p.resume_from_checkpoint is None  # a fresh start


def test_a_time_interval_leaves_saving_to_the_callback_and_deepspeed_gets_the_generated_json(tmp_path):
    p = hf.prepare(args(), environ=plan(tmp_path, JETSTREAM_SAVE_FREQUENCY="30m"))
    assert str(getattr(p.save_strategy, "value", p.save_strategy)) == "no"
    ds = {"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": 4}
    planned = hf.planned_arguments(read_env(e := {"JETSTREAM_STRATEGY": json.dumps(
        {"parallelism": "deepspeed", "deepspeed": ds})}), e)
    assert ("deepspeed", ds) in [(x.field, x.value) for x in planned]


def test_without_a_plan_nothing_changes():
    a = args(save_steps=123, output_dir="mine")
    p = hf.prepare(a, environ={})
    assert (p.output_dir, p.save_steps) == ("mine", 123)


def test_what_the_script_set_explicitly_is_a_conflict_reported_with_both_values(tmp_path, caplog):
    a = args(output_dir="mine", save_steps=100)
    with caplog.at_level(logging.WARNING, logger="jsruntime"):
        p = hf.prepare(a, environ=plan(tmp_path))
    assert p.save_steps == 50  # prefer="plan": the plan's value, and said so
    text = caplog.text
    assert "save_steps: the script set 100, the plan says 50 (save_frequency 50steps); using the plan's 50" in text
    assert "output_dir: the script set 'mine'" in text
    kept = hf.prepare(a, prefer="script", environ=plan(tmp_path))
    assert (kept.output_dir, kept.save_steps) == ("mine", 100)
    with pytest.raises(ConfigError, match="save_steps: the script set 100, the plan says 50"):
        hf.prepare(a, prefer="error", environ=plan(tmp_path))
    # a value equal to the plan's, or left at its default, is no conflict
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="jsruntime"):
        hf.prepare(args(output_dir=str(tmp_path / "ck"), save_steps=50), prefer="error", environ=plan(tmp_path))
    assert "conflict" not in caplog.text and "the script set" not in caplog.text


def test_resume_from_the_newest_complete_checkpoint_and_keep_latest(tmp_path):
    root = tmp_path / "ck"
    for step in (10, 20, 30):
        checkpoint(root, step)
    checkpoint(root, 40, complete=False)  # a save a preemption interrupted: never resumed from
    p = hf.prepare(args(), environ=plan(tmp_path))
    assert p.resume_from_checkpoint == str(root / "checkpoint-30")
    assert hf.keep_latest(root, 2) == [10]  # the incomplete newer one stays (it may still be written)
    assert sorted(x.name for x in root.iterdir()) == ["checkpoint-20", "checkpoint-30", "checkpoint-40"]
    checkpoint(root, 50)
    assert hf.keep_latest(root, 1) == [20, 30, 40]  # an incomplete one older than a complete one goes
    assert [s for s, _ in hf.complete_checkpoints(root)] == [50]
