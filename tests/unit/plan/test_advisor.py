"""The strategy advisor (issue 12, items 3 and 4): memory fit as a rule of placement, a plan that refuses a
named strategy that cannot fit and says what would, and the recommendation for `parallelism: auto`."""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from jsctl import api
from jsctl.config import workspace
from jsctl.config.variables import Variables
from jsctl.errors import PlanError
from jsctl.model.job import Placement
from jsctl.plan import advisor, memory, output
from jsctl.plan.memory import ModelShape, StrategyOption
from jsctl.plan.placement import candidates_table, place
from jsctl.plan.planner import PlanInputs, make_plan
from jsctl.plan.resolve import load_sources
from jsctl.model.state import State

from tests.unit.plan.test_placement import slurm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
QUICKSTART = os.path.join(ROOT, "examples", "quickstart.yaml")
GIB = 2**30
TIB = 2**40

# A Slurm cluster of 8 × A100-40GB nodes (InfiniBand, 4 nodes; 1152Gi of host memory, as a p4d) and,
# where asked, a partition of H200s.
INVENTORY = """\
version: jetstream.v1
clusters:
  - name: hpc
    provider: slurm
    access: {{mode: local}}
    partitions:
      - name: a100-40
        gpu_type: a100-40gb
        gpus_per_node: 8
        nodes: {nodes}
        cpus_per_node: 128
        memory_per_node: {host}
        interconnect: infiniband
        nvlink: true
        max_time: 72h
        gpu_hour_rate: 1.0
{extra}"""

H200 = """\
      - name: h200
        gpu_type: h200
        gpus_per_node: 8
        nodes: 2
        cpus_per_node: 192
        memory_per_node: 2Ti
        interconnect: infiniband
        nvlink: true
        max_time: 72h
        gpu_hour_rate: 4.0
"""


def job(model: str | None, strategy: str, count: int = 8, gpu: str = "a100-40gb") -> str:
    return (f"version: jetstream.v1\njob: {{name: big}}\n"
            f"compute: {{resources: {{gpu: {{type: {gpu}, count: {count}}}}}}}\n"
            + (f"model: {model}\n" if model else "")
            + f"strategy: {strategy}\nlifecycle: {{command: [python, train.py]}}\n")


def plan(tmp: Path, text: str, nodes: int = 4, host: str = "1152Gi", extra: str = "", inventory: bool = True):
    """make_plan for job.yaml in `tmp` on the inventory above (or, inventory=False, the local default)."""
    (tmp / "job.yaml").write_text(text)
    if inventory:
        (tmp / "jsctl.yaml").write_text(INVENTORY.format(nodes=nodes, host=host, extra=extra))
    ws = workspace.load(str(tmp / "jsctl.yaml") if inventory else None)
    sources, diags = load_sources([str(tmp / "job.yaml")], Variables({}))
    assert not [d for d in diags if d.severity == "error"], diags
    return make_plan(PlanInputs(sources, State(), ws, {}, {}, (), False, False, (str(tmp / "job.yaml"),)))


def spec_of(write, text: str, name: str = "job.yaml"):
    r = api.validate([write(name, text)], Variables({}))
    assert r.ok, r.diagnostics
    (spec,) = r.specs.values()
    return spec


def placement(nodes: int, per_node: int, gpu: str = "a100-80gb", interconnect: str | None = "infiniband",
              emulated: bool = False) -> Placement:
    return Placement("hpc", "slurm", "p", nodes, per_node, gpu, None, None, interconnect, "on-demand", 1.0,
                     emulated=emulated)


# --- the "done when" ----------------------------------------------------------------------

def test_70b_with_ddp_on_8_a100_40gb_is_a_plan_error_that_names_what_would_fit(tmp_path):
    with pytest.raises(PlanError) as caught:
        plan(tmp_path, job("{parameters: 70B}", "{parallelism: ddp}"))
    err = caught.value
    text = err.message
    print(text)
    assert text.startswith("job.big: strategy ddp does not fit: it needs ≥ 1,045 GiB per GPU on "
                           "8 × a100-40gb (40 GiB) (a lower bound: activations, logits not counted).")
    assert "\nWhat would fit:\n" in text
    # 16 B/param × 70B over 32 GPUs is 33 GiB: FULL_SHARD fits on 4 nodes of the partition
    assert "  - more GPUs: gpu.count 32 (4 × 8) with fsdp FULL_SHARD (≥ 34 GiB per GPU)" in text
    assert err.exit_code == 1
    assert err.plan is not None and err.plan.changes[0].placement.pool == "a100-40"  # placed; the strategy fails


def test_what_would_fit_names_another_strategy_offload_and_a_larger_gpu(tmp_path):
    with pytest.raises(PlanError) as caught:
        plan(tmp_path, job("{parameters: 20B}", "{parallelism: ddp}", gpu="a100"), nodes=1, host="2Ti",
             extra=H200)
    text = caught.value.message
    print(text)
    assert text.startswith("job.big: strategy ddp does not fit: it needs ≥ 300 GiB per GPU on 8 × a100-40gb")
    # FULL_SHARD's 20B × 16 B / 8 GPUs = 37 GiB is over the 10% margin of 40 GiB: only offload fits here
    assert "  - another strategy: fsdp FULL_SHARD + offload optimizer + offload params (≥ 1.0 GiB per GPU)" in text
    assert "  - a larger GPU: hpc/h200 (1 × 8 h200, 141 GiB) with fsdp" in text
    assert "more GPUs" not in text  # the partition has one node


def test_named_strategy_offers_checkpointing_and_a_smaller_micro_batch(write, tmp_path):
    config = Path(ROOT, "tests", "data", "hf-configs", "llama-2-7b.json").read_text()
    (tmp_path / "config.json").write_text(config)
    text = job("{config: config.json, sequence_length: 1024, micro_batch_size: 8}",
               "{parallelism: fsdp, config: {sharding_strategy: FULL_SHARD, mixed_precision: bf16}}", count=32)
    with pytest.raises(PlanError) as caught:
        plan(tmp_path, text)
    msg = caught.value.message
    print(msg)
    assert msg.startswith("job.big: strategy fsdp FULL_SHARD does not fit: it needs ")
    assert "lower bound" not in msg.splitlines()[0]  # every term known from config.json
    assert "  - activation checkpointing: fsdp FULL_SHARD + activation checkpointing (" in msg
    assert "  - a smaller micro-batch: model.micro_batch_size " in msg


def test_named_strategy_that_fits_warns_when_one_that_communicates_less_fits_too(tmp_path):
    p = plan(tmp_path, job("{parameters: 1B}", "{parallelism: fsdp, config: {sharding_strategy: FULL_SHARD}}"))
    (warning,) = [w for w in p.warnings if w.startswith("job.big:")]
    assert warning.startswith("job.big: ddp fits 8 × a100-40gb (40 GiB) too (")
    assert "communicates less than the named fsdp FULL_SHARD" in warning


def test_named_strategy_that_is_the_least_communication_says_nothing(tmp_path):
    p = plan(tmp_path, job("{parameters: 1B}", "{parallelism: ddp}"))
    assert not [w for w in p.warnings if w.startswith("job.big:")]


def test_named_strategy_within_the_margin_warns_it_may_run_out_of_memory(tmp_path):
    p = plan(tmp_path, job("{parameters: 2.4B}", "{parallelism: ddp}"))  # 16 B × 2.4B + 1 GiB: 37 of 40 GiB
    (warning,) = [w for w in p.warnings if w.startswith("job.big:")]
    assert warning == "job.big: ddp needs 37 of 40 GiB per GPU, within the 10% margin: it may run out of memory"
    assert f"Warning: {warning}" in output.render_text(p)


def test_auto_says_why_in_one_line_under_the_strategy(tmp_path):
    text = output.render_text(plan(tmp_path, job("{parameters: 13B}", "{parallelism: auto, config: {mixed_precision: bf16}}",
                                                 count=32)))
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "+ strategy    = fsdp SHARD_GRAD_OP" in line)
    assert lines[at + 1].strip().startswith("(fsdp SHARD_GRAD_OP: the least communication that fits a100-40gb "
                                            "(40 GiB) with a 10% margin (")


def test_unknown_model_size_has_no_memory_rule(tmp_path):
    p = plan(tmp_path, job(None, "{parallelism: ddp}"))
    assert p.changes[0].placement.pool == "a100-40" and not p.warnings


def test_auto_on_the_quickstart_picks_ddp(tmp_path):
    text = open(QUICKSTART, encoding="utf-8").read().replace("parallelism: ddp", "parallelism: auto")
    assert "parallelism: auto" in text
    change = plan(tmp_path, text, inventory=False).changes[0]
    assert change.placement.cluster == "local"
    assert change.strategy["parallelism"] == "ddp"
    assert change.why.strategy_advice["why"].startswith("model size unknown: DDP")


def test_auto_with_a_tiny_model_on_the_quickstart_picks_ddp(tmp_path):
    text = open(QUICKSTART, encoding="utf-8").read().replace("parallelism: ddp", "parallelism: auto")
    text = text.replace("recovery:", "model:\n  parameters: 1.2M\nrecovery:")
    change = plan(tmp_path, text, inventory=False).changes[0]
    assert change.strategy["parallelism"] == "ddp"
    assert change.why.strategy_advice["why"] == "GPU memory unknown: DDP, the least communication"


# --- the placement rule ---------------------------------------------------------------------------

def test_a_gpu_too_small_under_every_strategy_is_infeasible_with_the_reason_in_the_table(write):
    spec = spec_of(write, job("{parameters: 70B}", "{parallelism: auto}", count=8, gpu="a100"))
    small = slurm("a100-40", gpu="a100-40gb", nodes=4, memory=1 * TIB)
    large = slurm("a100-80", gpu="a100-80gb", nodes=4, memory=2 * TIB, rate=2.0)
    result = place(spec, [small, large])
    assert result.placement.pool == "a100-80"
    miss = next(c for c in result.candidates if c.offer.pool == "a100-40")
    assert not miss.feasible and miss.shape_ok
    (reason,) = miss.reasons
    assert reason.startswith("needs ≥ 132 GiB per GPU even with fsdp FULL_SHARD; a100-40gb has 40")
    assert "offload would fit it but needs 1,044 GiB of host memory per node; nodes have 1024" in reason
    table = "\n".join(candidates_table(result))
    print(table)
    assert reason.endswith("; 32 GPUs (4 × 8) would fit with fsdp FULL_SHARD")
    assert "a100-40" in table and "needs ≥ 132 GiB per GPU even with fsdp FULL_SHARD" in table


def test_offload_that_the_host_can_hold_keeps_a_candidate_feasible(write):
    spec = spec_of(write, job("{parameters: 70B}", "{parallelism: auto}"))
    result = place(spec, [slurm("a100-40", gpu="a100-40gb", nodes=4, memory=2 * TIB)])
    assert result.feasible


def test_the_rule_counts_the_candidates_own_shape(write):
    """More GPUs shard more: 70B fits 40 GiB GPUs at 32 of them with FULL_SHARD, not at 8."""
    assert advisor.memory_miss(ModelShape(70e9), "a100-40gb", 1, 8, host_memory=1 * TIB)
    assert advisor.memory_miss(ModelShape(70e9), "a100-40gb", 4, 8, host_memory=1 * TIB) is None


def test_emulated_and_unknown_gpus_and_unknown_model_have_no_rule(write):
    spec = spec_of(write, job("{parameters: 70B}", "{parallelism: auto}", gpu="h100"))
    local = dataclasses.replace(slurm("this machine", gpu="*", nodes=1, per_node=64, interconnect="loopback"),
                                emulated=True)
    assert place(spec, [local]).feasible
    tiny = slurm("t4", gpu="no-such-gpu", nodes=1)  # a type the GPU table does not know: no memory to compare
    assert advisor.memory_miss(ModelShape(70e9), tiny.gpu_type, 1, 8) is None
    assert advisor.memory_miss(None, "a100-40gb", 1, 8) is None
    assert advisor.memory_miss(ModelShape(70e9), "no-such-gpu", 1, 8) is None


# --- parallelism: auto ----------------------------------------------------------------------------

@pytest.mark.parametrize("params, nodes, per_node, expected", [
    (125e6, 1, 8, StrategyOption("ddp", "NO_SHARD")),
    (7e9, 4, 8, StrategyOption("fsdp", "SHARD_GRAD_OP")),  # DDP's 112 GB does not fit 80 GiB
    (70e9, 4, 8, StrategyOption("fsdp", "FULL_SHARD")),  # weights alone (140 GB) are too much unsharded
])
def test_auto_is_the_least_communication_that_fits_with_a_margin(params, nodes, per_node, expected):
    rec = advisor.recommend(ModelShape(params), placement(nodes, per_node))
    assert rec.option == expected and rec.fits
    assert rec.estimate.total <= advisor.MARGIN * 80 * GIB
    assert "\n" not in rec.why and rec.why.startswith(expected.label() if params > 1e9 else "ddp")


def test_auto_prefers_hybrid_shard_on_nvlink_nodes_with_a_slow_network():
    shape = ModelShape(70e9)
    slow = advisor.recommend(shape, placement(4, 8, interconnect=None), nvlink=True)
    assert slow.option == StrategyOption("fsdp", "HYBRID_SHARD") or slow.option.sharding == "FULL_SHARD"
    fast = advisor.recommend(shape, placement(4, 8, interconnect="infiniband"), nvlink=True)
    assert fast.option == StrategyOption("fsdp", "FULL_SHARD")
    # a model that HYBRID_SHARD (sharded over a node's 8 GPUs) holds: chosen on the slow network only
    mid = ModelShape(35e9)  # SHARD_GRAD_OP: 2 + 14/32 B/param is too much; HYBRID_SHARD: 16/8 fits
    assert advisor.recommend(mid, placement(4, 8, interconnect="infiniband"), nvlink=True).option.sharding \
        == "FULL_SHARD"
    hybrid = advisor.recommend(mid, placement(4, 8, interconnect=None), nvlink=True)
    assert hybrid.option == StrategyOption("fsdp", "HYBRID_SHARD")
    assert "HYBRID_SHARD shards inside each NVLink node" in hybrid.why
    assert advisor.recommend(mid, placement(4, 8, interconnect=None), nvlink=False).option.sharding == "FULL_SHARD"
    assert advisor.recommend(mid, placement(1, 8, interconnect=None), nvlink=True).option.sharding != "HYBRID_SHARD"


def test_auto_offloads_last_and_only_when_the_host_holds_it():
    shape = ModelShape(70e9)
    rec = advisor.recommend(shape, placement(1, 8, gpu="a100-40gb"), host_memory=2 * TIB)
    assert rec.option.offload_optimizer and rec.fits
    assert not advisor.recommend(shape, placement(1, 8, gpu="a100-40gb"), host_memory=1 * TIB).fits


def test_auto_order_is_least_communication_first_offload_last():
    opts = advisor.order(1, True, "infiniband")
    assert opts[0] == StrategyOption("ddp", "NO_SHARD")
    offload = [i for i, o in enumerate(opts) if o.offload_optimizer or o.offload_params]
    assert offload and min(offload) > max(i for i, o in enumerate(opts) if not (o.offload_optimizer or
                                                                                o.offload_params))
    assert all(o.parallelism in ("ddp", "fsdp") for o in opts)  # what jsruntime applies itself
    assert not any(o.sharding == "HYBRID_SHARD" for o in opts)
    assert [advisor.communication_rank(o) for o in opts if not o.activation_checkpointing][:3] == \
        [(0, 0), (2, 0), (4, 0)]


def test_auto_in_the_plan_writes_the_chosen_option_into_the_strategy(tmp_path):
    p = plan(tmp_path, job("{parameters: 70B}", "{parallelism: auto}", count=32))
    change = p.changes[0]
    assert change.strategy["parallelism"] == "fsdp"
    assert change.strategy["config"]["sharding_strategy"] == "FULL_SHARD"
    assert change.why.strategy_advice["why"].startswith("fsdp FULL_SHARD: the least communication that fits")


def test_config_for_names_each_option():
    assert advisor.config_for(StrategyOption("fsdp", "FULL_SHARD", True, True, True), {"mixed_precision": "bf16"}) \
        == {"mixed_precision": "bf16", "sharding_strategy": "FULL_SHARD", "cpu_offload": True,
            "activation_checkpointing": True}
    assert advisor.config_for(StrategyOption("deepspeed", "SHARD_GRAD_OP", offload_optimizer=True)) == \
        {"zero_stage": 2, "offload_optimizer": True}
    assert advisor.config_for(StrategyOption("ddp", "NO_SHARD"), {"sharding_strategy": "FULL_SHARD"}) == {}
    for o in memory.CANDIDATES:  # what the advisor writes reads back as the same option
        if o.parallelism == "fsdp" and o.offload_optimizer != o.offload_params:
            continue  # FSDP's cpu_offload moves both
        assert memory.option_from(o.parallelism, advisor.config_for(o)) == o
