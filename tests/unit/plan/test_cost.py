"""Cost: $/hour, run bound, spot rework, plan totals against what runs, the budget gate."""
from __future__ import annotations

from jsctl.config.quantities import parse_frequency
from jsctl.model.spec import Frequency

import dataclasses
import json
import math
import os

import pytest

from jsctl import api
from jsctl.model.spec import JobSpec
from jsctl.plan import cost
from jsctl.plan.cost import Assumptions, estimate, expected_wall_seconds, plan_cost
from jsctl.model.job import Placement
from jsctl.model.cluster import Offer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
H = 3600


@pytest.fixture(scope="module")
def llama() -> JobSpec:
    (spec,) = api.validate([os.path.join(ROOT, "examples", "finetune-llama.yaml")]).specs.values()
    return dataclasses.replace(spec, compute=dataclasses.replace(spec.compute, time_limit_s=48 * H))


def placed(price: float | None = 35.20, nodes: int = 4, capacity: str = "on-demand") -> Placement:
    return Placement("hpc", "slurm", "gpu-a100", nodes, 8, "a100-80gb", 96, 2**41, "infiniband", capacity, price)


def spot(spec: JobSpec, save_frequency: str | None = "1000steps") -> JobSpec:
    every = Frequency(*parse_frequency(save_frequency)) if save_frequency else None
    outputs = tuple(dataclasses.replace(o, save_every=every) if o.name == "checkpoints" else o
                    for o in spec.outputs)
    return dataclasses.replace(spec, compute=dataclasses.replace(spec.compute, capacity="spot"), outputs=outputs)


# --- per job ---------------------------------------------------------------------------------------

def test_on_demand_rate_and_bound_for_time_limit(llama):
    e = estimate("job.llama-7b-sft", llama, placed())
    assert e.price_per_hour == 35.20 and e.bound == 1689.60 and e.expected == 1689.60
    assert (e.duration_s, e.duration_from) == (48 * H, "time_limit")
    assert e.text() == "$35.20/h, at most $1,689.60 for time_limit 48h"
    assert cost.format_assumptions(e) is None


def test_duration_argument_overrides_time_limit(llama):
    e = estimate("job.x", llama, placed(), duration_s=10 * H)
    assert e.bound == 352.0 and e.text() == "$35.20/h, at most $352.00 for --duration 10h"


def test_no_time_limit_means_no_bound(llama):
    spec = dataclasses.replace(llama, compute=dataclasses.replace(llama.compute, time_limit_s=None))
    e = estimate("job.x", spec, placed())
    assert e.bound is None and e.unbounded
    assert e.text() == "$35.20/h, run bound unknown (no time_limit; set compute.time_limit or pass --duration)"


def test_unplaced_or_unpriced_jobs_say_so(llama):
    assert estimate("job.x", llama, None).text() == "price unknown (not placed)"
    assert estimate("job.x", llama, placed(price=None)).text() == \
        "price unknown (no price known for hpc / gpu-a100)"


def test_spot_expected_cost_includes_rework_and_states_its_assumptions(llama):
    e = estimate("job.x", spot(llama), placed(price=16.22, capacity="spot"))
    assert e.preemptible and e.bound == round(16.22 * 48, 2)
    assert e.expected > e.bound and e.worst == e.expected
    assert e.text().startswith("$16.22/h spot, expected $")
    assert "for time_limit 48h of work incl." in e.text() and "of rework after preemption" in e.text()
    assert f"(${e.bound:,.2f} without interruptions)" in e.text()
    line = cost.format_assumptions(e)
    assert line == ("assumes 0.02 interruptions per node-hour and 10m per restart; "
                    "checkpoint every 1000 steps ≈ 16m40s (assumed 1 s/step)")


def test_checkpoint_interval_in_time_needs_no_step_assumption(llama):
    e = estimate("job.x", spot(llama, "30m"), placed(price=16.22, capacity="spot"))
    assert e.checkpoint == "checkpoint every 30m"


def test_rarer_checkpoints_and_more_nodes_cost_more_rework(llama):
    p = placed(price=16.22, capacity="spot")
    often = estimate("j", spot(llama, "10m"), p).expected
    rarely = estimate("j", spot(llama, "4h"), p).expected
    never = estimate("j", spot(llama, None), p)
    assert often < rarely < never.expected
    assert "no checkpoint policy: an interruption restarts from the beginning" in never.assumptions
    more_nodes = estimate("j", spot(llama, "4h"), placed(price=16.22, nodes=16, capacity="spot")).expected
    assert more_nodes > rarely


def test_assumptions_are_parameters(llama):
    p = placed(price=10.0, capacity="spot")
    calm = estimate("j", spot(llama), p, assumptions=Assumptions(interruptions_per_node_hour=0.0))
    assert calm.expected == calm.bound
    slow_steps = estimate("j", spot(llama), p, assumptions=Assumptions(step_seconds=2.0))
    assert "(assumed 2 s/step)" in slow_steps.checkpoint and "33m20s" in slow_steps.checkpoint


def test_backfill_is_preemptible_too(llama):
    spec = dataclasses.replace(llama, compute=dataclasses.replace(llama.compute, capacity="backfill"))
    e = estimate("j", spec, placed(price=35.2, capacity="backfill"))
    assert e.preemptible and e.expected > e.bound


def test_interruptions_outpacing_progress_are_flagged(llama):
    e = estimate("j", spot(llama, None), placed(price=1.0, nodes=64, capacity="spot"))
    assert e.expected is None and e.note == "interruptions would outpace progress: checkpoint more often"
    assert "checkpoint more often" in e.text()


def test_expected_wall_time_model():
    assert expected_wall_seconds(10 * H, 1800, 0.0, 600) == 10 * H
    lam, interval, restart = 0.01, 1800.0, 600.0
    wall = expected_wall_seconds(10 * H, interval, lam, restart)
    first_order = 10 * H * (1 + lam / H * (interval / 2 + restart))  # W(1 + λ(I/2 + R)) for small λI
    assert wall == pytest.approx(first_order, rel=1e-3)
    exact = (10 * H / interval) * (H / lam + restart) * math.expm1(lam * interval / H)
    assert wall == pytest.approx(exact)


# --- per plan --------------------------------------------------------------------------------------

def test_plan_totals_and_change_against_what_runs(llama):
    a = estimate("job.a", llama, placed(35.20))
    b = estimate("job.b", llama, placed(10.0, nodes=1))
    pc = plan_cost([a, b], prior={"job.a": 35.20, "job.gone": 5.0})
    assert pc.per_hour == pytest.approx(45.20) and pc.prior_per_hour == pytest.approx(40.20)
    assert pc.delta_per_hour == pytest.approx(5.0)
    assert pc.bound == pytest.approx(1689.60 + 480.0)
    assert pc.estimates[0].prior_price_per_hour == 35.20 and pc.estimates[0].delta_per_hour == 0
    assert cost.format_summary(pc) == "Estimated: $45.20/h, +$5.00/h from $40.20/h now (run bound $2,169.60)"


def test_plan_summary_for_new_jobs_matches_the_ux_sketch(llama):
    pc = plan_cost([estimate("job.llama-7b-sft", llama, placed())])
    assert cost.format_summary(pc) == "Estimated: +$35.20/h (run bound $1,689.60)"
    assert pc.within_budget and cost.format_budget(pc) is None


def test_summary_names_unbounded_and_unpriced_jobs(llama):
    open_ended = dataclasses.replace(llama, compute=dataclasses.replace(llama.compute, time_limit_s=None))
    pc = plan_cost([estimate("job.a", open_ended, placed()), estimate("job.b", llama, placed(None))])
    assert pc.unbounded == ("job.a",) and pc.unpriced == ("job.b",)
    assert cost.format_summary(pc) == ("Estimated: +$35.20/h (run bound unknown: no time_limit for job.a; "
                                       "no price: job.b)")


def test_summary_without_time_limit_never_reads_as_a_zero_bound(llama):
    """Issue 10: "run bound $0.00; unbounded: …" read as if the run were free."""
    open_ended = dataclasses.replace(llama, compute=dataclasses.replace(llama.compute, time_limit_s=None))
    alone = cost.format_summary(plan_cost([estimate("job.a", open_ended, placed())]))
    assert "$0.00" not in alone and "run bound unknown: no time_limit for job.a" in alone
    mixed = plan_cost([estimate("job.a", open_ended, placed()), estimate("job.b", llama, placed())])
    assert "run bound at least $1,689.60: no time_limit for job.a" in cost.format_summary(mixed)


def test_without_time_limit_the_offers_max_time_is_what_the_engine_may_apply(llama):
    open_ended = dataclasses.replace(llama, compute=dataclasses.replace(llama.compute, time_limit_s=None))
    partition = Offer("hpc", "slurm", "gpu-a100", "a100-80gb", 8, 16, 96, 2**41, max_time_s=2 * H,
                      gpu_hour_price=1.1)
    e = estimate("job.a", open_ended, placed(), offer=partition)
    assert e.bound is None and e.unbounded and e.engine_time_limit_s == 2 * H
    assert e.text() == ("$35.20/h, run bound unknown (no time_limit; the engine may apply the pool's default or "
                        "maximum time limit, at most 2h: $70.40; set compute.time_limit or pass --duration)")
    assert "hpc / gpu-a100 may apply its default or maximum time limit" in e.note
    assert e.to_dict()["engine_time_limit_s"] == 2 * H
    summary = cost.format_summary(plan_cost([e]))
    assert "run bound unknown" in summary and "at most $70.40 if the engine applies" in summary
    no_max = dataclasses.replace(partition, max_time_s=None)
    assert estimate("job.a", open_ended, placed(), offer=no_max).engine_time_limit_s is None
    assert estimate("job.a", llama, placed(), offer=partition).engine_time_limit_s is None  # it has a limit


def test_duration_beyond_time_limit_is_capped_and_says_so(llama):
    e = estimate("job.x", llama, placed(), duration_s=72 * H)
    assert e.duration_s == 48 * H and e.duration_from == "time_limit" and e.bound == 1689.60
    assert e.duration_capped_s == 72 * H
    assert e.text() == ("$35.20/h, at most $1,689.60 for time_limit 48h "
                        "(not --duration 72h: the job stops at its time_limit)")
    shorter = estimate("job.x", llama, placed(), duration_s=10 * H)
    assert shorter.duration_capped_s is None and shorter.duration_from == "--duration"


def test_cpu_only_job_on_gpu_nodes_at_unknown_price_is_a_warning(llama):
    cpu_job = dataclasses.replace(llama, compute=dataclasses.replace(llama.compute, gpu=None))
    gpu_pool = Offer("hpc", "slurm", "gpu-a100", "a100-80gb", 8, 16, 96, 2**41, gpu_hour_price=1.1)
    where = Placement("hpc", "slurm", "gpu-a100", 1, 0, None, 4, None, None, "on-demand", None)
    e = estimate("job.prep", cpu_job, where, offer=gpu_pool)
    assert e.price_per_hour is None and "CPU-only" in e.note
    assert e.warning.startswith("job.prep uses no GPU but is placed on hpc / gpu-a100, a pool of 8-GPU nodes")
    assert plan_cost([e]).warnings == (e.warning,)
    cpu_pool = dataclasses.replace(gpu_pool, gpu_type=None, gpus_per_node=0)
    assert estimate("job.prep", cpu_job, where, offer=cpu_pool).warning is None
    assert estimate("job.prep", llama, placed(None), offer=gpu_pool).warning is None  # a GPU job: no warning


def test_budget_names_the_jobs_over_it(llama):
    big = estimate("job.big", llama, placed(35.20))
    small = estimate("job.small", llama, placed(1.0, nodes=1))
    pc = plan_cost([big, small], budget=500)
    assert not pc.within_budget and pc.over_budget == ("job.big",)
    assert pc.budget_messages == ("job.big: at most $1,689.60, over the budget of $500.00",)
    assert cost.format_budget(pc) == ("Error: the plan is over the budget of $500.00 (1 job: job.big)\n"
                                      "  job.big: at most $1,689.60, over the budget of $500.00")


def test_budget_on_the_plan_total_names_every_contributing_job(llama):
    a = estimate("job.a", llama, placed(5.0, nodes=1))  # $240
    b = estimate("job.b", llama, placed(6.0, nodes=1))  # $288
    pc = plan_cost([a, b], budget=500)
    assert pc.over_budget == ("job.b", "job.a")
    assert pc.budget_messages == ("the plan's run bound $528.00 is over the budget of $500.00: "
                                  "job.b $288.00, job.a $240.00",)
    assert plan_cost([a, b], budget=600).within_budget


def test_budget_fails_a_job_without_a_bound(llama):
    open_ended = dataclasses.replace(llama, compute=dataclasses.replace(llama.compute, time_limit_s=None))
    pc = plan_cost([estimate("job.a", open_ended, placed())], budget=10_000)
    assert pc.over_budget == ("job.a",) and "no time_limit" in pc.budget_messages[0]
    assert plan_cost([estimate("job.a", open_ended, placed(), duration_s=H)], budget=10_000).within_budget


def test_budget_uses_the_expected_spot_cost(llama):
    e = estimate("job.s", spot(llama), placed(price=16.22, capacity="spot"))
    pc = plan_cost([e], budget=(e.bound + e.expected) / 2)  # over only once rework is counted
    assert pc.over_budget == ("job.s",) and pc.budget_messages[0].startswith("job.s: expected $")


def test_json_carries_everything(llama):
    pc = plan_cost([estimate("job.a", spot(llama), placed(16.22, capacity="spot"))], prior={"job.a": 1.0},
                   budget=100)
    data = json.loads(json.dumps(pc.to_dict()))
    job = data["jobs"][0]
    assert job["capacity"] == "spot" and job["assumptions"] and job["checkpoint"]
    assert data["budget"] == 100 and data["within_budget"] is False and data["over_budget"] == ["job.a"]
    assert data["delta_per_hour"] == pytest.approx(15.22)


def test_money_formats():
    assert cost.money(1689.6) == "$1,689.60" and cost.money(-5) == "-$5.00"
    assert cost.signed(35.2) == "+$35.20" and cost.signed(-2) == "-$2.00"
    assert cost.span(48 * H) == "48h" and cost.span(5400) == "1h30m"
