"""Sizing: which parallelism, and whether model states fit a GPU."""
from jsctl import api
from jsctl.config.variables import Variables
from jsctl.plan.strategy import GIB, advise, model_state_bytes
from jsctl.model.job import Placement


def spec_for(write, strategy: str, params: str = "7B"):
    path = write("job.yaml", f"version: jetstream.v1\njob: {{name: s}}\nmodel: {{parameters: {params}}}\n"
                 f"strategy: {strategy}\nlifecycle: {{command: [train.py]}}\n")
    r = api.validate([path], Variables({}))
    assert r.ok, r.diagnostics
    return r.specs["job.s"]


def placement(nodes: int, gpus: int, gpu: str = "a100-80gb") -> Placement:
    return Placement("hpc", "slurm", "p", nodes, gpus, gpu, None, None, "infiniband", "on-demand", 1.0)


def test_bytes_per_parameter():
    assert model_state_bytes(1e9, "ddp", {}, 8) == 16e9
    assert model_state_bytes(1e9, "fsdp", {"sharding_strategy": "FULL_SHARD"}, 8) == 2e9
    assert model_state_bytes(1e9, "fsdp", {"sharding_strategy": "SHARD_GRAD_OP"}, 8) == 2e9 + 14e9 / 8
    assert model_state_bytes(1e9, "fsdp", {"cpu_offload": True}, 8) == 4e9 / 8
    assert model_state_bytes(1e9, "deepspeed", {"zero_stage": 1}, 4) == 4e9 + 12e9 / 4


def test_auto_picks_fsdp_when_ddp_does_not_fit(write):
    advice = advise(spec_for(write, "{parallelism: auto}", "7B"), placement(4, 8))
    assert advice.parallelism == "fsdp" and advice.fits
    # the least communication that fits: grads and optimizer sharded, weights whole (advisor order)
    assert "fsdp SHARD_GRAD_OP" in advice.describe() and "fits:" in advice.describe()
    small = advise(spec_for(write, "{parallelism: auto}", "350M"), placement(1, 8))
    assert small.parallelism == "ddp" and small.fits


def test_configured_strategy_that_does_not_fit_says_so(write):
    advice = advise(spec_for(write, "{parallelism: ddp}", "70B"), placement(4, 8))
    assert advice.parallelism == "ddp" and advice.fits is False
    assert "DOES NOT FIT" in advice.describe()
    assert advice.bytes_per_gpu / GIB > 1000
