"""The configuration the plan generates for a job's strategy (jsctl.plan.strategy_config): FSDP arguments
fully resolved, the DeepSpeed JSON with batch sizes consistent with the world, and the problems."""
from __future__ import annotations

import json

import pytest

from jsctl.plan.strategy import StrategyAdvice
from jsctl.plan.strategy_config import Inputs, describe, generate

ONE_NODE = Inputs(nodes=1, gpus_per_node=8, micro_batch_size=4)
FOUR_NODES = Inputs(nodes=4, gpus_per_node=8, micro_batch_size=4)


def test_fsdp_full_shard_defaults_are_resolved():
    g = generate("fsdp", {"sharding_strategy": "FULL_SHARD", "mixed_precision": "bf16"}, FOUR_NODES)
    assert not g.errors
    assert g.env["fsdp"] == {
        "sharding_strategy": "FULL_SHARD", "reshard_after_forward": True,
        "mesh": {"shape": [32], "dim_names": ["shard"]},
        "mixed_precision": {"param_dtype": "bf16", "reduce_dtype": "fp32"},
        "cpu_offload": False, "auto_wrap": {"policy": "module_list"}, "activation_checkpointing": False,
    }
    assert g.env["config"] == {"sharding_strategy": "FULL_SHARD", "mixed_precision": "bf16"}  # as before
    assert g.env["batch"] == {"micro_batch_size": 4, "gradient_accumulation_steps": 1, "global_batch_size": 128}


def test_fsdp_shard_grad_op_hybrid_and_the_rest():
    sgo = generate("fsdp", {"sharding_strategy": "SHARD_GRAD_OP", "wrap_modules": ["LlamaDecoderLayer"],
                            "activation_checkpointing": True, "mixed_precision": "fp16", "reduce_dtype": "fp16"},
                   ONE_NODE).env["fsdp"]
    assert sgo["reshard_after_forward"] is False
    assert sgo["auto_wrap"] == {"policy": "module_classes", "module_classes": ["LlamaDecoderLayer"]}
    assert sgo["activation_checkpointing"] is True
    assert sgo["mixed_precision"] == {"param_dtype": "fp16", "reduce_dtype": "fp16"}
    hybrid = generate("fsdp", {"sharding_strategy": "HYBRID_SHARD", "cpu_offload": True}, FOUR_NODES).env["fsdp"]
    assert hybrid["mesh"] == {"shape": [4, 8], "dim_names": ["replicate", "shard"]}  # the node mesh
    assert hybrid["reshard_after_forward"] is True and hybrid["cpu_offload"] is True
    assert hybrid["mixed_precision"] is None  # fp32, as jsruntime has always run without mixed_precision
    size = generate("fsdp", {"wrap_min_params": 100_000_000}, ONE_NODE).env["fsdp"]
    assert size["auto_wrap"] == {"policy": "size", "min_params": 100_000_000}
    both = generate("fsdp", {"wrap_modules": ["Block"], "wrap_min_params": 5}, ONE_NODE)
    assert both.errors and "choose one auto-wrap policy" in both.errors[0]


@pytest.mark.parametrize("stage, offload, expect", [
    (0, {}, {"stage": 0}),
    (1, {"offload_optimizer": True}, {"stage": 1, "offload_optimizer": {"device": "cpu", "pin_memory": True}}),
    (2, {"offload_optimizer": True}, {"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memory": True}}),
    (3, {"offload_optimizer": True, "offload_param": True},
     {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": True},
      "offload_param": {"device": "cpu", "pin_memory": True}}),
])
def test_deepspeed_stages_and_offload(stage, offload, expect):
    g = generate("deepspeed", {"zero_stage": stage, "mixed_precision": "bf16", **offload}, FOUR_NODES)
    assert not g.errors
    ds = g.env["deepspeed"]
    assert ds["zero_optimization"] == expect
    assert ds["bf16"] == {"enabled": True} and ds["fp16"] == {"enabled": False}
    assert (ds["train_micro_batch_size_per_gpu"], ds["gradient_accumulation_steps"], ds["train_batch_size"]) == (4, 1, 128)
    assert "fsdp" not in g.env


@pytest.mark.parametrize("config, words", [
    ({"zero_stage": 2, "offload_param": True}, "offload_param needs ZeRO stage 3"),
    ({"zero_stage": 0, "offload_optimizer": True}, "offload_optimizer needs ZeRO stage 1, 2 or 3"),
])
def test_deepspeed_offload_a_stage_cannot_do_is_an_error(config, words):
    errors = generate("deepspeed", config, ONE_NODE).errors
    assert any(words in e for e in errors), errors


def test_batch_size_is_consistent_with_the_world():
    # micro × accumulation × world = train_batch_size, from the accumulation the job gives
    ds = generate("deepspeed", {"zero_stage": 3, "gradient_accumulation_steps": 8}, FOUR_NODES).env["deepspeed"]
    assert ds["train_batch_size"] == 4 * 8 * 32 == ds["train_micro_batch_size_per_gpu"] * \
        ds["gradient_accumulation_steps"] * 32
    # from a global batch size: the accumulation is derived
    g = generate("deepspeed", {"zero_stage": 3, "global_batch_size": 1024}, FOUR_NODES)
    assert not g.errors and g.env["deepspeed"]["gradient_accumulation_steps"] == 8
    assert g.env["deepspeed"]["train_batch_size"] == 1024
    assert any("derived from global_batch_size 1024" in n for n in g.notes)
    # a global batch size the world does not divide: an error naming the sizes that work
    bad = generate("deepspeed", {"zero_stage": 3, "global_batch_size": 1000}, FOUR_NODES)
    assert "deepspeed" in bad.env and len(bad.errors) == 1
    assert "1000 is not a multiple of micro-batch 4 × 32 GPUs = 128" in bad.errors[0]
    assert "896 (accumulation 7) or 1024 (accumulation 8)" in bad.errors[0]
    # both given and disagreeing
    clash = generate("deepspeed", {"global_batch_size": 1024, "gradient_accumulation_steps": 4}, FOUR_NODES)
    assert clash.errors and "disagree" in clash.errors[0]
    # no micro-batch size: derived from the global batch size, or 1 with a note
    derived = generate("deepspeed", {"global_batch_size": 256}, Inputs(4, 8, None))
    assert derived.env["deepspeed"]["train_micro_batch_size_per_gpu"] == 8 and not derived.errors
    bare = generate("deepspeed", {}, Inputs(1, 2, None))
    assert bare.env["deepspeed"]["train_batch_size"] == 2 and bare.notes


def test_gradient_clipping_and_fp16():
    ds = generate("deepspeed", {"zero_stage": 1, "gradient_clipping": 1, "mixed_precision": "fp16"},
                  ONE_NODE).env["deepspeed"]
    assert ds["gradient_clipping"] == 1.0 and ds["fp16"] == {"enabled": True} and ds["bf16"] == {"enabled": False}
    assert "gradient_clipping" not in generate("deepspeed", {"zero_stage": 1}, ONE_NODE).env["deepspeed"]


def test_the_env_is_json_and_to_env_carries_it():
    advice = StrategyAdvice("deepspeed", (("zero_stage", 3), ("offload_optimizer", True)), None, None, "as configured",
                            inputs=FOUR_NODES)
    env = advice.to_env()
    assert json.loads(json.dumps(env)) == env
    assert env["deepspeed"]["zero_optimization"]["stage"] == 3
    # an advice made without a placement carries the strategy as given, as it always did
    plain = StrategyAdvice("ddp", (), None, None, "as configured")
    assert plain.to_env() == {"parallelism": "ddp", "config": {}}


def test_describe_says_what_runs():
    text = describe(generate("fsdp", {"sharding_strategy": "SHARD_GRAD_OP", "mixed_precision": "bf16",
                                      "wrap_modules": ["Block"], "activation_checkpointing": True}, ONE_NODE).env)
    assert text == ("fsdp SHARD_GRAD_OP (reshard_after_forward false, mesh 8), bf16 params / fp32 reduce, "
                    "wrap each Block, activation checkpointing, batch 4 × 1 accumulation × 8 GPUs = 32")
    text = describe(generate("deepspeed", {"zero_stage": 3, "offload_param": True, "global_batch_size": 256},
                             FOUR_NODES).env)
    assert text == "deepspeed ZeRO-3, offload param → cpu, batch 4 × 2 accumulation × 32 GPUs = 256"
    assert describe({"parallelism": "none", "config": {}}) == ""


def test_the_runtime_reads_the_variable_the_providers_set():
    from jsruntime.env import DEEPSPEED_CONFIG_ENV

    from jsctl.render import launch

    assert DEEPSPEED_CONFIG_ENV == launch.DEEPSPEED_CONFIG_ENV == "JETSTREAM_DEEPSPEED_CONFIG"
