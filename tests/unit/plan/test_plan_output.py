"""How a plan reads (issue 10): the run bound without a time_limit, warnings from the estimates, the
markdown's Why column and cost line, the command as shell words, the documents of a failed plan, the
strategy verdict as a JSON field, and the infeasible message on this machine alone."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from jsctl.config import workspace
from jsctl.config.variables import Variables
from jsctl.errors import PlanError
from jsctl.model.state import State
from jsctl.plan import output
from jsctl.plan.model import Plan
from jsctl.plan.planner import PlanInputs, make_plan
from jsctl.plan.resolve import load_sources

INVENTORY = """\
version: jetstream.v1
clusters:
  - name: hpc
    provider: slurm
    access: {mode: local}
    container_runtime: none
    shared_dir: /shared/jsctl
    partitions:
      - name: gpu
        gpu_type: a100-80gb
        gpus_per_node: 8
        nodes: 4
        cpus_per_node: 128
        memory_per_node: 2Ti
        interconnect: infiniband
        max_time: 72h
        gpu_hour_rate: 2.5
"""


def job(name: str, compute: str = "resources: {gpu: {type: a100-80gb, count: 8}}", extra: str = "",
        command: str = '["python", "train.py"]') -> str:
    return (f"version: jetstream.v1\njob: {{name: {name}}}\ncompute:\n  {compute}\n{extra}"
            f"lifecycle: {{command: {command}}}\n")


def make(tmp: Path, files: dict[str, str], inventory: str | None = INVENTORY, **inputs) -> Plan:
    """make_plan on these files (a slurm inventory, or None: the embedded local default)."""
    for name, text in files.items():
        (tmp / name).write_text(textwrap.dedent(text))
    if inventory is not None:
        (tmp / "jsctl.yaml").write_text(inventory)
    ws = workspace.load(str(tmp / "jsctl.yaml") if inventory is not None else None)
    paths = [str(tmp / name) for name in files]
    sources, diags = load_sources(paths, Variables({}))
    assert not [d for d in diags if d.severity == "error"], diags
    return make_plan(PlanInputs(sources, State(), ws, {}, {}, (), False, False, tuple(paths), **inputs))


# --- 1. cost without a time_limit, a CPU job on GPU nodes, --duration beyond time_limit ----------------

def test_no_time_limit_says_the_bound_is_unknown_and_what_the_engine_may_apply(tmp_path):
    plan = make(tmp_path, {"a.yaml": job("a")})  # 8 GPUs × $2.50, no time_limit, partition max 72h
    text = output.render_text(plan)
    summary = text.splitlines()[-1]
    assert "$0.00" not in summary and "run bound unknown: no time_limit for job.a" in summary
    assert "at most $1,440.00 if the engine applies the pools' maximum time limits" in summary
    assert ("run bound unknown (no time_limit; the engine may apply the pool's default or maximum time limit, "
            "at most 72h: $1,440.00; set compute.time_limit or pass --duration)") in text
    est = output.to_json(plan)["cost"]["jobs"][0]
    assert est["bound"] is None and est["engine_time_limit_s"] == 72 * 3600


def test_cpu_only_job_on_a_gpu_partition_at_unknown_price_is_a_warning(tmp_path):
    plan = make(tmp_path, {"prep.yaml": job("prep", "resources: {cpu: {count: 4}}\n  time_limit: 1h")})
    change = plan.change("job.prep")
    assert change.placement.pool == "gpu" and change.cost.price_per_hour is None
    text = output.render_text(plan)
    assert text.count("Warning: job.prep uses no GPU but is placed on hpc / gpu, a pool of 8-GPU nodes") == 1
    assert any("job.prep uses no GPU" in w for w in output.to_json(plan)["warnings"])
    assert "> **Warning:** job.prep uses no GPU" in output.render_markdown(plan)


def test_duration_does_not_price_beyond_the_jobs_time_limit(tmp_path):
    plan = make(tmp_path, {"a.yaml": job("a", "resources: {gpu: {type: a100-80gb, count: 8}}\n  time_limit: 2h")},
                duration_s=10 * 3600)
    e = plan.change("job.a").cost
    assert e.duration_s == 2 * 3600 and e.bound == 40.0 and e.duration_capped_s == 10 * 3600
    assert "at most $40.00 for time_limit 2h (not --duration 10h: the job stops at its time_limit)" \
        in output.render_text(plan)
    assert plan.cost.bound == 40.0


# --- 2. markdown Why and cost; the command as shell words --------------------------------------------

def test_markdown_has_a_why_for_every_row_and_the_cost_total(tmp_path):
    plan = make(tmp_path, {"a.yaml": job("a", "resources: {gpu: {type: a100-80gb, count: 8}}\n  time_limit: 2h")})
    md = output.render_markdown(plan)
    row = next(line for line in md.splitlines() if line.startswith("| `+` | `job.a`"))
    assert row.rstrip().endswith("| 20.00 | new |")
    assert "Estimated: +$20.00/h (run bound $40.00)." in md


def test_markdown_why_names_what_changed_and_what_forces_replacement():
    from jsctl.model.diff import FieldChange
    from jsctl.plan.model import Explanation, ResourceChange

    c = ResourceChange("job.a", "a", "replace", "js-a-1234", 2,
                       why=Explanation(("request.argv forces replacement",), ("request.argv",),
                                       (FieldChange("lifecycle.command", ["a"], ["b"]),)))
    assert output.why_text(c) == "changed: lifecycle.command; request.argv forces replacement"
    gone = ResourceChange("job.b", "b", "delete", "js-b-1234", 1, why=Explanation(("no longer in the configuration",)))
    assert output.why_text(gone) == "no longer in the configuration"
    assert output.why_text(ResourceChange("job.c", "c", "update", "js-c-1", 1)) != ""


def test_text_plan_shows_the_command_as_shell_words(tmp_path):
    plan = make(tmp_path, {"a.yaml": job("a", "resources: {cpu: {count: 1}}",
                                         command='["bash", "-c", "echo hi; sleep 2"]')}, inventory=None)
    text = output.render_text(plan)
    line = next(x for x in text.splitlines() if "command     =" in x)
    assert line.endswith("bash -c 'echo hi; sleep 2'"), line


# --- 3. the documents of a failed plan ---------------------------------------------------------------

def test_over_budget_keeps_the_plan_for_the_json_and_markdown_documents(tmp_path):
    files = {"a.yaml": job("a", "resources: {gpu: {type: a100-80gb, count: 8}}\n  time_limit: 2h")}
    with pytest.raises(PlanError) as caught:
        make(tmp_path, files, max_cost=10.0)
    exc = caught.value
    doc = json.loads(json.dumps(output.failed_json([exc], exc.plan)))
    assert doc["errors"][0]["message"].startswith("the plan is over the budget of $10.00")
    assert doc["errors"][0]["hint"] and doc["cost"]["within_budget"] is False
    assert doc["resource_changes"][0]["address"] == "job.a" and doc["summary"]["add"] == 1
    md = output.render_markdown(exc.plan, [exc])
    assert md.index("**Error:**") < md.index("| `+` | `job.a`") and "over the budget of $10.00" in md
    assert "Budget: $10.00, over it." in md


def test_no_feasible_placement_keeps_the_candidates_for_the_documents(tmp_path):
    files = {"big.yaml": job("big", "resources: {gpu: {type: h100, count: 8}}")}
    with pytest.raises(PlanError) as caught:
        make(tmp_path, files)
    exc = caught.value
    doc = output.failed_json([exc], exc.plan)
    assert "no feasible placement" in doc["errors"][0]["message"]
    rc = doc["resource_changes"][0]
    assert rc["change"]["after"]["placement"] is None and rc["candidates"][0]["reasons"]
    bare = output.failed_json([exc], None, ["big.yaml"])
    assert bare["errors"] and bare["resource_changes"] == [] and bare["files"] == ["big.yaml"]
    assert output.render_markdown(None, [exc]).startswith("### jsctl plan\n\n**Error:**")
    assert output.to_json(make(tmp_path, {"a.yaml": job("a")}))["errors"] == []


# --- 4. the infeasible message on this machine alone -------------------------------------------------

def test_infeasible_on_this_machine_says_what_was_asked_what_local_gpus_are_and_how_to_add_a_cluster(tmp_path):
    files = {"big.yaml": job("big", "resources: {gpu: {type: a100-80gb, count: 32}}")}
    with pytest.raises(PlanError) as caught:
        make(tmp_path, files, inventory=None)
    message = caught.value.message
    assert "it asks for 32 a100-80gb GPUs" in message
    assert "worker processes on this machine's CPU" in message
    assert "under `clusters:` in jsctl.yaml" in message
    assert "this machine has 1 node × 2" not in message and "local" in message


def test_infeasible_on_a_real_cluster_gives_no_local_advice(tmp_path):
    with pytest.raises(PlanError) as caught:
        make(tmp_path, {"big.yaml": job("big", "resources: {gpu: {type: a100-80gb, count: 64}}")})
    message = caught.value.message
    assert "it asks for 64 a100-80gb GPUs" in message and "needs 8 nodes × 8 GPUs, gpu has 4 nodes × 8" in message
    assert "worker processes" not in message


# --- 5. the strategy verdict as a field --------------------------------------------------------------

def test_strategy_verdict_is_a_json_field(tmp_path):
    extra = "model: {parameters: 70B}\nstrategy: {parallelism: ddp}\n"
    with pytest.raises(PlanError) as caught:  # a named strategy that cannot fit fails the plan (the advisor)
        make(tmp_path, {"a.yaml": job("a", extra=extra), "b.yaml": job("b", extra="model: {parameters: 7B}\n"
                                                                          "strategy: {parallelism: auto}\n")})
    assert "job.a: strategy ddp does not fit" in caught.value.message
    plan = caught.value.plan  # what could be planned comes with the error
    doc = output.to_json(plan)
    advice = {rc["address"]: rc["change"]["after"]["strategy_advice"] for rc in doc["resource_changes"]}
    a, b = advice["job.a"], advice["job.b"]
    assert a["parallelism"] == "ddp" and a["fits"] is False and "DOES NOT FIT" in a["text"]
    assert a["memory_per_gpu_bytes"] == a["memory"]["total_bytes"] and a["gpu_memory_bytes"] == 80 * 2**30
    states = sum(t["bytes"] for t in a["memory"]["terms"] if t["name"] in ("weights", "gradients", "optimizer state"))
    assert states == 70e9 * 16 and a["memory"]["lower_bound"] is True  # no sequence length: activations unknown
    assert a["why"] == "as configured"
    assert b["parallelism"] == "fsdp" and b["fits"] is True
    assert "DOES NOT FIT" in output.render_text(plan)
