"""The tuning rule (docs/tuning.md) on recorded metric lines: no torch, no job."""
from __future__ import annotations

import json

import pytest

from jsctl.errors import CapabilityError, UsageError
from jsctl.metrics import parse_metrics, render_metrics
from jsctl.model.cluster import Cluster
from jsctl.model.status import JobHandle
from jsctl.plan.tuning import label, measure, parse_target, recommend

GIB = 2**30
FSDP = {"parallelism": "fsdp", "config": {"sharding_strategy": "FULL_SHARD", "mixed_precision": "bf16"}}
SGO = {"parallelism": "fsdp", "config": {"sharding_strategy": "SHARD_GRAD_OP"}}
DDP = {"parallelism": "ddp", "config": {}}


def log(step_s: float, comm_s: float | None, peak: float, records: int = 12, kind: str = "rss",
        parallelism: str = "fsdp", before: list[str] | None = None) -> list[str]:
    """A job's log as jsruntime prints it: noise, a start event, a metric line every 10 steps."""
    lines = list(before or []) + ["[jsctl 10:00:00] command: python -m jsruntime.launch ...",
                                  json.dumps({"jetstream": "event", "event": "start", "world_size": 2,
                                              "parallelism": parallelism, "sharding_strategy": "FULL_SHARD"})]
    for i in range(1, records + 1):
        rec = {"jetstream": "metrics", "step": 10 * i, "loss": 2.0 / i, "step_time_s": step_s,
               "peak_mem_bytes": int(peak), "mem_kind": kind}
        if comm_s is not None:
            rec.update(comm_s=comm_s, compute_s=round(step_s - comm_s, 6))
        if i == 1:  # the first record carries start-up: the rule leaves it out
            rec.update(step_time_s=50 * step_s, comm_s=0.0 if comm_s is not None else None)
        lines.append(json.dumps({k: v for k, v in rec.items() if v is not None}))
    return lines


def verdict(lines: list[str], strategy: dict, memory: float | None = 8 * GIB, world: int = 2):
    summary = parse_metrics(lines)
    return recommend(strategy, measure(summary.samples, summary.mem_kind), memory, world)


def test_communication_bound_with_headroom_shards_less_one_rung_at_a_time():
    r = verdict(log(0.020, 0.009, 0.7 * GIB), FSDP)
    assert r.action == "less_sharding" and r.wrong
    assert r.target == {"parallelism": "fsdp", "config": {"sharding_strategy": "SHARD_GRAD_OP", "mixed_precision": "bf16"}}
    assert r.measurements.records == 11 and r.measurements.comm_share == pytest.approx(0.45)
    assert "45% of each step waits on collectives" in r.describe() and "fsdp FULL_SHARD → fsdp SHARD_GRAD_OP" in r.describe()
    r = verdict(log(0.020, 0.009, 0.7 * GIB), SGO)
    assert r.target == {"parallelism": "ddp", "config": {}}
    assert verdict(log(0.020, 0.009, 0.7 * GIB), DDP).action == "keep"  # nothing below DDP


def test_memory_near_the_limit_shards_more():
    r = verdict(log(0.020, 0.009, 7.2 * GIB), DDP)  # 90 % of 8 GiB, even though communication-bound
    assert r.action == "more_sharding" and label(r.target) == "fsdp SHARD_GRAD_OP"
    assert label(verdict(log(0.020, 0.001, 7.2 * GIB), SGO).target) == "fsdp FULL_SHARD"
    at_top = verdict(log(0.020, 0.001, 7.2 * GIB), FSDP)
    assert at_top.wrong and at_top.target is None and "activation checkpointing" in at_top.why
    on_gpu = verdict(log(0.020, None, 75 * GIB, kind="cuda"), FSDP, memory=80 * GIB)
    assert on_gpu.target["config"]["cpu_offload"] is True and label(on_gpu.target).endswith("cpu_offload")


@pytest.mark.parametrize("comm, peak, memory, world, action", [
    (0.004, 0.7 * GIB, 8 * GIB, 2, "keep"),        # 20 % waiting: not communication-bound
    (0.009, 5.0 * GIB, 8 * GIB, 2, "keep"),        # bound, but 62 % of memory: no ample headroom
    (0.009, 0.7 * GIB, None, 2, "keep"),           # bound, memory unknown: never risk running out
    (None, 0.7 * GIB, 8 * GIB, 2, "keep"),         # collectives not timed (CUDA): memory only
    (0.009, 0.7 * GIB, 8 * GIB, 1, "keep"),        # one process
])
def test_otherwise_keep(comm, peak, memory, world, action):
    assert verdict(log(0.020, comm, peak), FSDP, memory, world).action == action


def test_too_few_records_and_an_earlier_attempt_do_not_count():
    assert verdict(log(0.020, 0.009, 0.7 * GIB, records=3), FSDP).action == "unknown"
    # measured under FSDP before a restart under DDP: only the DDP attempt's records count
    lines = log(0.020, 0.009, 0.7 * GIB, parallelism="ddp", records=3, before=log(0.020, 0.009, 0.7 * GIB))
    summary = parse_metrics(lines)
    assert summary.parallelism == "ddp" and len(summary.samples) == 3
    assert verdict(lines, DDP).action == "unknown"


def test_medians_resist_an_outlier_step():
    lines = log(0.020, 0.002, 0.7 * GIB)
    lines[5] = lines[5].replace('"comm_s": 0.002', '"comm_s": 0.019')  # one slow all-reduce
    assert verdict(lines, FSDP).action == "keep"


def test_deepspeed_is_advice_for_the_job_file():
    r = verdict(log(0.020, 0.009, 0.7 * GIB), {"parallelism": "deepspeed", "config": {"zero_stage": 3}})
    assert r.action == "less_sharding" and r.target is None and "zero_stage to 2" in r.why


def test_parse_target():
    assert parse_target("ddp", FSDP) == {"parallelism": "ddp", "config": {"mixed_precision": "bf16"}}
    assert parse_target("fsdp", DDP)["config"] == {"sharding_strategy": "FULL_SHARD"}
    assert parse_target("fsdp:shard_grad_op", DDP)["config"]["sharding_strategy"] == "SHARD_GRAD_OP"
    generated = {**FSDP, "fsdp": {"sharding_strategy": "FULL_SHARD", "reshard_after_forward": True,
                                  "mesh": {"dim_names": ["shard"], "shape": [2]}, "activation_checkpointing": False}}
    assert "fsdp" not in parse_target("ddp", generated)  # the plan's FSDP arguments would win over `config`
    sgo = parse_target("fsdp:SHARD_GRAD_OP", generated)["fsdp"]
    assert sgo["sharding_strategy"] == "SHARD_GRAD_OP" and sgo["reshard_after_forward"] is False
    assert generated["fsdp"]["sharding_strategy"] == "FULL_SHARD"  # not changed in place
    for bad in ("zero3", "fsdp:HALF", "ddp:FULL_SHARD"):
        with pytest.raises(UsageError):
            parse_target(bad, DDP)


def test_metrics_show_the_comm_share():
    out = render_metrics(parse_metrics(log(0.020, 0.009, 0.7 * GIB)), detail=True)
    assert "(45% waiting on collectives)" in out and "comm_s" in out and "compute_s" in out


def test_slurm_cannot_tune_a_running_job(tmp_path):
    from jsctl.providers.slurm.client import SlurmClient

    client = SlurmClient(Cluster("hpc", "slurm", {}), str(tmp_path))
    with pytest.raises(CapabilityError, match="strategy"):
        client.tune(JobHandle("slurm", "hpc", "123"), DDP)
