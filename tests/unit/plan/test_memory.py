"""Memory per GPU with every term (jsctl.plan.memory, issue 12 item 2)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jsctl.plan.memory import CANDIDATES, GIB, ModelShape, StrategyOption, estimate, option_from

P = 1e9
FULL = ModelShape(P, hidden=2048, layers=16, heads=16, vocab=32000, sequence_length=2048, micro_batch_size=2)
STATES = ("weights", "gradients", "optimizer state")


def states(e) -> tuple[float, ...]:
    return tuple(e.term(n).bytes for n in STATES)


@pytest.mark.parametrize("option, expected", [
    (StrategyOption("ddp", "NO_SHARD"), (2 * P, 2 * P, 12 * P)),
    (StrategyOption("deepspeed", "ZERO1"), (2 * P, 2 * P, 12 * P / 16)),
    (StrategyOption("fsdp", "SHARD_GRAD_OP"), (2 * P, 2 * P / 16, 12 * P / 16)),
    (StrategyOption("fsdp", "FULL_SHARD"), (2 * P / 16, 2 * P / 16, 12 * P / 16)),
    (StrategyOption("fsdp", "HYBRID_SHARD"), (2 * P / 8, 2 * P / 8, 12 * P / 8)),  # sharded in a node of 8
    (StrategyOption("deepspeed", "SHARD_GRAD_OP", offload_optimizer=True), (2 * P, 2 * P / 16, 0)),
    (StrategyOption("fsdp", "FULL_SHARD", offload_optimizer=True, offload_params=True), (0, 0, 0)),
])
def test_model_states_partitioned_per_option(option, expected):
    e = estimate(FULL, option, nodes=2, gpus_per_node=8)
    assert states(e) == pytest.approx(expected)
    assert e.total == pytest.approx(sum(t.bytes for t in e.terms)) and not e.lower_bound


def test_fp32_counts_4_4_8_and_doubles_activations():
    ddp = StrategyOption("ddp", "NO_SHARD")
    assert states(estimate(FULL, ddp, 1, 1, "fp32")) == (4 * P, 4 * P, 8 * P)
    assert estimate(FULL, ddp, 1, 1, "fp32").term("activations").bytes == \
        2 * estimate(FULL, ddp, 1, 1, "bf16").term("activations").bytes


def test_activations_follow_korthikanti_with_and_without_checkpointing():
    s, b, h, a, L = 2048, 2, 2048, 16, 16
    per_layer = s * b * h * (34 + 5 * a * s / h)
    plain = estimate(FULL, StrategyOption("fsdp", "FULL_SHARD"), 1, 8)
    ckpt = estimate(FULL, StrategyOption("fsdp", "FULL_SHARD", activation_checkpointing=True), 1, 8)
    assert plain.term("activations").bytes == per_layer * L
    assert ckpt.term("activations").bytes == 2 * s * b * h * L + per_layer
    assert plain.term("logits").bytes == s * b * 32000 * (4 + 4 + 2)
    assert plain.term("cuda context + framework").bytes == 1 * GIB
    assert plain.term("communication buffers").bytes > 0


def test_missing_inputs_make_lower_bounds_that_say_why():
    e = estimate(ModelShape(7e9, source="model.parameters"), StrategyOption("fsdp", "FULL_SHARD"), 4, 8)
    assert e.lower_bound
    act = e.term("activations")
    assert act.lower_bound and act.bytes == 0 and "model.sequence_length" in act.why and "hidden size" in act.why
    assert e.term("communication buffers").lower_bound and not e.term("weights").lower_bound
    partial = estimate(ModelShape(7e9, hidden=4096, layers=32, heads=32, sequence_length=2048),
                       StrategyOption("ddp", "NO_SHARD"), 1, 8)
    assert partial.term("activations").lower_bound and "model.micro_batch_size" in partial.term("activations").why
    assert "hidden size" not in partial.term("activations").why


def test_fits_with_margin_and_to_dict():
    e = estimate(FULL, StrategyOption("ddp", "NO_SHARD"), 1, 8)
    assert e.fits(e.total / 0.9 + 1) and not e.fits(e.total / 0.9 - 1) and e.fits(e.total, margin=1.0)
    d = e.to_dict()
    assert d["option"] == "ddp" and d["total_bytes"] == e.total and d["model"]["layers"] == 16
    assert [t["name"] for t in d["terms"]] == ["weights", "gradients", "optimizer state", "activations", "logits",
                                               "cuda context + framework", "communication buffers"]


def test_option_from_strategy_config():
    assert option_from("ddp", {}) == StrategyOption("ddp", "NO_SHARD")
    assert option_from("fsdp", {}) == StrategyOption("fsdp", "FULL_SHARD")
    assert option_from("fsdp", {"sharding_strategy": "HYBRID_SHARD", "activation_checkpointing": True}) == \
        StrategyOption("fsdp", "HYBRID_SHARD", activation_checkpointing=True)
    assert option_from("fsdp", {"sharding_strategy": "FULL_SHARD", "cpu_offload": True}) == \
        StrategyOption("fsdp", "FULL_SHARD", offload_optimizer=True, offload_params=True)
    assert option_from("deepspeed", {"zero_stage": 1}).sharding == "ZERO1"
    assert option_from("deepspeed", {"zero_stage": 2, "offload_optimizer": True}) == \
        StrategyOption("deepspeed", "SHARD_GRAD_OP", offload_optimizer=True)
    assert option_from("deepspeed", {"zero_stage": 3, "offload_param": True}).offload_params
    assert option_from("deepspeed", {"zero_stage": 2, "offload_param": True}).offload_params is False  # ZeRO-3 only


def test_candidates_start_with_the_cheapest_communication():
    assert [c.sharding for c in CANDIDATES[:5]] == ["NO_SHARD", "ZERO1", "SHARD_GRAD_OP", "FULL_SHARD",
                                                    "HYBRID_SHARD"]
    assert not any(c.offload_optimizer or c.activation_checkpointing for c in CANDIDATES[:5])
    assert CANDIDATES.index(StrategyOption("fsdp", "FULL_SHARD", activation_checkpointing=True)) > 5
    assert len(set(CANDIDATES)) == len(CANDIDATES)
    assert {c.label() for c in CANDIDATES} >= {"ddp", "deepspeed ZeRO-1", "fsdp FULL_SHARD",
                                                "fsdp FULL_SHARD + activation checkpointing"}


INVENTORY = Path(__file__).resolve().parents[2] / "golden" / "slurm" / "jsctl.yaml"  # 4 × 8 a100-80gb


def test_explain_memory_names_every_term_and_the_lower_bounds(write, jsctl):
    path = write("job.yaml", "version: jetstream.v1\njob: {name: s}\nmodel: {parameters: 7B}\n"
                 "compute: {resources: {gpu: {type: a100-80gb, count: 8}}}\n"
                 "strategy: {parallelism: fsdp, config: {sharding_strategy: FULL_SHARD, mixed_precision: bf16}}\n"
                 "lifecycle: {command: [python, train.py]}\n")
    code, out, err = jsctl("plan", "-f", path, "--workspace", str(INVENTORY), "--refresh=false", "--explain-memory")
    assert code == 0, err
    section = out[out.index("Memory per GPU"):]
    assert "job.s: fsdp FULL_SHARD, bf16, 1 × 8 a100-80gb" in section
    assert "7.00B parameters (model.parameters)" in section
    for name in ("weights", "gradients", "optimizer state", "activations", "logits", "cuda context + framework",
                 "communication buffers"):
        assert f"    {name} " in section
    assert ">=    0.00 GiB   unknown model.sequence_length, model.micro_batch_size, hidden size" in section
    assert re.search(r"\n    total +>= +14.04 GiB   of 80 GiB per GPU: fits\n", section) and "a lower bound" in section
    code, out, _ = jsctl("plan", "-f", path, "--workspace", str(INVENTORY), "--refresh=false", "--json")
    mem = json.loads(out)["resource_changes"][0]["change"]["after"]["strategy_advice"]["memory"]
    assert mem["lower_bound"] and mem["model"]["source"] == "model.parameters"
    assert [t["name"] for t in mem["terms"] if t["lower_bound"]] == ["activations", "logits", "communication buffers"]


def test_the_estimate_counts_the_precision_the_job_runs_in():
    """Without mixed_precision jsruntime runs fp32 (the generated fsdp block has no mixed precision),
    so the memory estimate counts fp32 too; with bf16 both say bf16."""
    from jsctl.plan.strategy import precision_of

    assert precision_of({}) == "fp32" and precision_of({"mixed_precision": "bf16"}) == "bf16"
    assert precision_of({"mixed_precision": "fp16"}) == "fp16"
