"""Environment parsing and strategy checks (fast, in process) plus FSDP2 variants under torchrun."""

from __future__ import annotations

import json

import pytest
from jsruntime.env import (
    ConfigError,
    DistEnv,
    StrategyConfig,
    parse_frequency,
    read_env,
)

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="jsruntime tests need torch (pip install torch==2.13.0)")


def test_frequency():
    assert parse_frequency("1000steps") == (1000, None)
    assert parse_frequency("1 step") == (1, None)
    assert parse_frequency("30m") == (None, 1800)
    assert parse_frequency("90s") == (None, 90)
    assert parse_frequency("2h") == (None, 7200)
    for bad in ("often", "0steps", "10", "5d"):
        with pytest.raises(ConfigError):
            parse_frequency(bad)


def test_defaults_single_process():
    env = read_env({})
    assert env.dist.world_size == 1 and not env.dist.launched
    assert env.strategy.parallelism == "none" and not env.strategy.explicit
    assert not env.checkpoint.enabled and env.log_every == 1


def test_torchrun_environment():
    env = read_env({
        "RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
        "TORCHELASTIC_RESTART_COUNT": "3", "TORCHELASTIC_USE_AGENT_STORE": "True", "JOB_ID": "j1",
        "JETSTREAM_CHECKPOINT_DIR": "/c", "JETSTREAM_SAVE_FREQUENCY": "30m", "JETSTREAM_KEEP_LATEST": "2",
        "JETSTREAM_CHECKPOINT_MODE": "thread",
        "JETSTREAM_STRATEGY": '{"parallelism": "fsdp", "config": {"sharding_strategy": "SHARD_GRAD_OP", '
                              '"cpu_offload": false, "mixed_precision": "bf16"}}',
    })
    assert env.dist == DistEnv(1, 2, 1, 2, "127.0.0.1", 29500, 3, True)
    assert env.strategy == StrategyConfig("fsdp", "SHARD_GRAD_OP", False, "bf16", explicit=True)
    assert (env.checkpoint.directory, env.checkpoint.every_seconds, env.checkpoint.keep_latest) == ("/c", 1800, 2)
    assert env.checkpoint.mode == "thread" and env.job_id == "j1"
    assert read_env({"WORLD_SIZE": "2", "RANK": "0"}).strategy.parallelism == "ddp"


@pytest.mark.parametrize("bad", [
    {"JETSTREAM_STRATEGY": "{not json"},
    {"JETSTREAM_STRATEGY": '{"parallelism": "megatron"}'},
    {"JETSTREAM_STRATEGY": '{"parallelism": "fsdp", "config": {"sharding_strategy": "ZERO9"}}'},
    {"JETSTREAM_STRATEGY": '{"parallelism": "fsdp", "config": {"cpu_offload": "yes"}}'},
    {"JETSTREAM_CHECKPOINT_MODE": "fork"},
    {"JETSTREAM_KEEP_LATEST": "0"},
    {"RANK": "2", "WORLD_SIZE": "2"},
])
def test_bad_values_are_config_errors(bad):
    with pytest.raises(ConfigError):
        read_env(bad)


@needs_torch
@pytest.mark.parametrize("strategy, dist, words", [
    (StrategyConfig("fsdp", cpu_offload=True), DistEnv(world_size=2, local_world_size=2), "accelerator"),
    (StrategyConfig("ddp", cpu_offload=True), DistEnv(), "FSDP option"),
    (StrategyConfig("none"), DistEnv(world_size=2, local_world_size=2), "diverging"),
    (StrategyConfig("fsdp", "HYBRID_SHARD"), DistEnv(world_size=3, local_world_size=2), "multiple"),
    (StrategyConfig("deepspeed", deepspeed_config="/nonexistent/ds.json"), DistEnv(), "no such file"),
])
def test_impossible_strategies_raise_clear_errors(strategy, dist, words):
    from jsruntime.strategy import StrategyError, check

    with pytest.raises(StrategyError, match=words):
        check(strategy, dist, torch.device("cpu"))


@needs_torch
@pytest.mark.parametrize("config, mode", [
    ('{"parallelism": "fsdp", "config": {"sharding_strategy": "SHARD_GRAD_OP", "mixed_precision": "bf16"}}', "thread"),
    ('{"parallelism": "fsdp", "config": {"sharding_strategy": "HYBRID_SHARD"}}', "sync"),
    ('{"parallelism": "ddp"}', "process"),
])
def test_strategies_and_modes_train_and_checkpoint(tmp_path, config, mode):
    import jsrt_helpers as h

    env = h.job_env(tmp_path / "ckpt", JETSTREAM_STRATEGY=config, JETSTREAM_SAVE_FREQUENCY="3steps",
                    JETSTREAM_CHECKPOINT_MODE=mode)
    job = h.run(h.torchrun(2, h.TRAINER, "--steps", "6"), env, tmp_path, "train")
    assert [(r["step"], r["mode"]) for r in job.records("checkpoint")] == [(3, mode), (6, mode)]
    assert all(isinstance(r["loss"], float) for r in job.records("metrics"))  # finite (NaN would be a string)


def test_generated_fsdp_object_wins_over_config():
    from jsruntime.env import AutoWrap

    raw = {"parallelism": "fsdp", "config": {"sharding_strategy": "FULL_SHARD"},
           "fsdp": {"sharding_strategy": "HYBRID_SHARD", "reshard_after_forward": True,
                    "mesh": {"shape": [2, 4], "dim_names": ["replicate", "shard"]},
                    "mixed_precision": {"param_dtype": "bf16", "reduce_dtype": "bf16"}, "cpu_offload": False,
                    "auto_wrap": {"policy": "size", "min_params": 1000}, "activation_checkpointing": True},
           "batch": {"micro_batch_size": 4, "gradient_accumulation_steps": 2, "global_batch_size": 64}}
    s = read_env({"WORLD_SIZE": "1", "JETSTREAM_STRATEGY": json.dumps(raw)}).strategy
    assert (s.sharding_strategy, s.mixed_precision, s.reduce_dtype, s.mesh_shape) == ("HYBRID_SHARD", "bf16", "bf16", (2, 4))
    assert s.auto_wrap == AutoWrap("size", (), 1000) and s.activation_checkpointing and s.resharding
    assert dict(s.batch) == {"micro_batch_size": 4, "gradient_accumulation_steps": 2, "global_batch_size": 64}
    sgo = read_env({"JETSTREAM_STRATEGY": json.dumps({"parallelism": "fsdp", "config": {"sharding_strategy": "SHARD_GRAD_OP"}})})
    assert sgo.strategy.resharding is False  # without the generated object: from the sharding strategy


@pytest.mark.parametrize("fsdp", [
    {"mesh": {"shape": [0]}},
    {"auto_wrap": {"policy": "every_other"}},
    {"auto_wrap": {"policy": "module_classes", "module_classes": []}},
    {"auto_wrap": {"policy": "size", "min_params": -1}},
    {"mixed_precision": {"param_dtype": "fp8"}},
    {"activation_checkpointing": "yes"},
])
def test_bad_generated_fsdp_objects_are_config_errors(fsdp):
    with pytest.raises(ConfigError, match="fsdp"):
        read_env({"JETSTREAM_STRATEGY": json.dumps({"parallelism": "fsdp", "fsdp": fsdp})})


def test_deepspeed_config_path_and_object(tmp_path):
    ds = {"train_batch_size": 8, "zero_optimization": {"stage": 2}}
    env = read_env({"JETSTREAM_STRATEGY": json.dumps({"parallelism": "deepspeed", "deepspeed": ds}),
                    "JETSTREAM_DEEPSPEED_CONFIG": str(tmp_path / "ds.json")})
    assert env.strategy.deepspeed_config == str(tmp_path / "ds.json")
    assert json.loads(env.strategy.deepspeed_json) == ds


@needs_torch
def test_deepspeed_plan_passes_the_check_and_wrap_points_to_deepspeed(tmp_path):
    from jsruntime.strategy import StrategyError, check, wrap

    path = tmp_path / "ds.json"
    path.write_text("{}")
    strategy = StrategyConfig("deepspeed", cpu_offload=True, deepspeed_config=str(path))
    check(strategy, DistEnv(world_size=2, local_world_size=2), torch.device("cpu"))  # no error: the program owns it
    with pytest.raises(StrategyError, match="deepspeed.initialize"):
        wrap(torch.nn.Linear(2, 2), strategy, DistEnv(), torch.device("cpu"))


@needs_torch
def test_auto_wrap_policies_pick_units():
    from jsruntime.env import AutoWrap
    from jsruntime.strategy import StrategyError, wrap_units
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    model = nn.Sequential(nn.Linear(8, 2), nn.ModuleList([Block(), Block()]))
    assert wrap_units(model, AutoWrap("module_classes", ("Block",))) == [model[1][0], model[1][1]]
    assert wrap_units(model, AutoWrap()) == [model[1][0], model[1][1]]
    # by size: each Block holds 144 parameters; the ModuleList then has none left, the head 18
    assert wrap_units(model, AutoWrap("size", min_params=100)) == [model[1][0], model[1][1]]
    assert wrap_units(model, AutoWrap("size", min_params=60)) == [model[1][0].a, model[1][0].b,
                                                                  model[1][1].a, model[1][1].b]
    with pytest.raises(StrategyError, match="LlamaDecoderLayer.*Block"):
        wrap_units(model, AutoWrap("module_classes", ("LlamaDecoderLayer",)))
