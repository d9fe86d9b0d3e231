"""Cost: $/hour per job, the bound for a whole run, spot rework, plan totals and the budget gate.

Pure functions of placements and specs. The numbers:
  * $/hour      the placement's price for the whole allocation (placement.price).
  * run bound   duration × $/hour, where duration is `--duration` when given, else `time_limit`.
                Without either the cost has no bound, and a budget check fails for that job.
  * spot and backfill (preemptible) also get an *expected* cost including rework: each
    interruption repeats the work since the last checkpoint and pays a restart. With interruptions
    arriving at rate λ (per node-hour, × nodes for the job), a checkpoint every I and a restart of
    R, the expected wall time for W of work is (W / I) · (1/λ + R) · (e^{λI} − 1), the classic
    checkpoint/restart model; without checkpoints I = W. The rate, R and, for a save frequency in
    steps, the step time are assumptions, stated in the output and overridable.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

from jsctl.config.quantities import format_duration
from jsctl.model.cluster import Offer
from jsctl.model.spec import JobSpec
from jsctl.model.job import Placement

PREEMPTIBLE = ("spot", "backfill")


@dataclass(frozen=True)
class Assumptions:
    """What the spot estimate cannot know; printed with every preemptible estimate."""

    interruptions_per_node_hour: float = 0.02  # about one per node every two days
    restart_s: int = 600  # requeue, reschedule, reload the checkpoint
    step_seconds: float = 1.0  # for save_frequency given in steps

    def describe(self) -> str:
        return (f"assumes {self.interruptions_per_node_hour:g} interruptions per node-hour and "
                f"{format_duration(self.restart_s)} per restart")


@dataclass(frozen=True)
class CostEstimate:
    address: str
    price_per_hour: float | None  # None = no price known for the placement
    capacity: str
    nodes: int
    duration_s: int | None  # run length used for the bound
    duration_from: str  # "time_limit", "--duration" or "" (none)
    bound: float | None  # duration × $/h (no interruptions)
    expected: float | None  # preemptible: with rework; on-demand: the bound
    expected_hours: float | None  # wall-clock hours behind `expected`
    checkpoint: str | None = None  # "every 1000 steps ≈ 16m40s (assumed 1 s/step)"
    assumptions: str | None = None  # stated for preemptible capacity
    prior_price_per_hour: float | None = None  # what runs at this address now
    note: str | None = None  # why a number is missing
    engine_time_limit_s: int | None = None  # no time_limit: the offer's max time, which the engine may apply
    duration_capped_s: int | None = None  # a --duration longer than time_limit, priced for time_limit instead
    warning: str | None = None  # worth a warning in the plan (a CPU-only job on GPU nodes at no known price)

    @property
    def preemptible(self) -> bool:
        return self.capacity in PREEMPTIBLE

    @property
    def worst(self) -> float | None:
        """The larger of bound and expected: what a budget is checked against."""
        vals = [v for v in (self.bound, self.expected) if v is not None]
        return max(vals) if vals else None

    @property
    def unbounded(self) -> bool:
        return self.price_per_hour is not None and self.price_per_hour > 0 and self.worst is None

    @property
    def delta_per_hour(self) -> float:
        return (self.price_per_hour or 0.0) - (self.prior_price_per_hour or 0.0)

    def text(self) -> str:
        return format_estimate(self)

    def to_dict(self) -> dict[str, Any]:
        return {"address": self.address, "price_per_hour": self.price_per_hour, "capacity": self.capacity,
                "nodes": self.nodes, "duration_s": self.duration_s, "duration_from": self.duration_from or None,
                "bound": self.bound, "expected": self.expected, "expected_hours": self.expected_hours,
                "checkpoint": self.checkpoint, "assumptions": self.assumptions,
                "prior_price_per_hour": self.prior_price_per_hour, "delta_per_hour": round(self.delta_per_hour, 4),
                "note": self.note, "engine_time_limit_s": self.engine_time_limit_s,
                "duration_capped_s": self.duration_capped_s, "warning": self.warning}


def money(x: float) -> str:
    """`$1,689.60`; negative amounts as `-$5.00`."""
    return f"{'-' if x < 0 else ''}${abs(x):,.2f}"


def signed(x: float) -> str:
    return ("+" if x >= 0 else "-") + money(abs(x))


def span(seconds: float) -> str:
    """`48h` for whole hours (as people write time limits), else `1d2h30m`-style."""
    seconds = round(seconds)
    return f"{seconds // 3600}h" if seconds >= 3600 and seconds % 3600 == 0 else format_duration(seconds)


def checkpoint_interval(spec: JobSpec, step_seconds: float = 1.0) -> tuple[float | None, str | None]:
    """Seconds between checkpoints and how that was read, or (None, None) without a save policy."""
    out = spec.checkpoint_output
    if out is None or not out.save_every:
        return None, None
    unit, n = out.save_every.unit, out.save_every.n
    if unit == "steps":
        secs = n * step_seconds
        return secs, (f"checkpoint every {n} steps ≈ {format_duration(round(secs))} "
                      f"(assumed {step_seconds:g} s/step)")
    return float(n), f"checkpoint every {format_duration(n)}"


def expected_wall_seconds(work_s: float, interval_s: float | None, rate_per_hour: float,
                          restart_s: float) -> float | None:
    """Expected wall time for `work_s` of work under Poisson interruptions (None: practically never ends)."""
    if work_s <= 0:
        return 0.0
    lam = rate_per_hour / 3600.0
    if lam <= 0:
        return float(work_s)
    interval = min(interval_s or work_s, work_s)
    x = lam * interval
    if x > 50:
        return None
    wall = (work_s / interval) * (1.0 / lam + restart_s) * math.expm1(x)
    return wall if wall < 1000 * work_s else None


def estimate(address: str, spec: JobSpec, placement: Placement | None, duration_s: int | None = None,
             assumptions: Assumptions = Assumptions(), prior_price_per_hour: float | None = None,
             offer: Offer | None = None) -> CostEstimate:
    """The cost of one job: $/hour, the run bound, and for spot/backfill the expected cost with rework.

    `offer` is the one the placement chose: its max time is what the engine may apply to a job
    without a time_limit, and its GPUs say whether a CPU-only job holds GPU nodes.
    `--duration` never prices a run beyond the job's own time_limit: the engine stops it there.
    """
    capacity = spec.compute.capacity
    nodes = placement.nodes if placement else 0
    rate = placement.price_per_hour if placement else None
    limit = spec.compute.time_limit_s
    capped = None
    if duration_s and limit and duration_s > limit:
        dur, src, capped = limit, "time_limit", duration_s
    else:
        dur, src = (duration_s, "--duration") if duration_s else (limit, "time_limit")
    if not dur:
        dur, src = None, ""
    engine_limit = offer.max_time_s if offer is not None and dur is None else None
    note = None
    warning = None
    if placement is None:
        note = "not placed"
    elif rate is None:
        note = f"no price known for {placement.cluster} / {placement.pool}"
        if spec.compute.gpu is None and offer is not None and offer.gpu_type and offer.gpus_per_node:
            note = (f"no price known for a CPU-only job on {placement.cluster} / {placement.pool}: its nodes "
                    f"have {offer.gpus_per_node} {offer.gpu_type} GPUs each, priced by the GPU-hour")
            warning = (f"{address} uses no GPU but is placed on {placement.cluster} / {placement.pool}, a pool of "
                       f"{offer.gpus_per_node}-GPU nodes, at an unknown price: it may hold GPU nodes it does not "
                       "use (give the pool a node-hour price, or set compute.target to a CPU pool)")
    elif dur is None and rate > 0:
        note = "no time_limit: the run's cost bound is unknown (set compute.time_limit or pass --duration)"
        if engine_limit:
            note += (f"; {placement.cluster} / {placement.pool} may apply its default or maximum time limit "
                     f"(at most {span(engine_limit)}: {money(rate * engine_limit / 3600.0)})")
    bound = round(rate * dur / 3600.0, 2) if rate is not None and dur else None
    expected, hours, ckpt, assumed = bound, (dur / 3600.0 if dur else None), None, None
    if capacity in PREEMPTIBLE and placement is not None:
        interval, ckpt = checkpoint_interval(spec, assumptions.step_seconds)
        assumed = assumptions.describe() + ("" if ckpt else "; no checkpoint policy: an interruption restarts "
                                            "from the beginning")
        if dur and rate is not None:
            wall = expected_wall_seconds(dur, interval, assumptions.interruptions_per_node_hour * max(nodes, 1),
                                         assumptions.restart_s)
            if wall is None:
                expected, hours = None, None
                note = "interruptions would outpace progress: checkpoint more often"
            else:
                expected, hours = round(rate * wall / 3600.0, 2), wall / 3600.0
    return CostEstimate(address, rate, capacity, nodes, dur, src, bound, expected, hours, ckpt, assumed,
                        prior_price_per_hour, note, engine_limit, capped, warning)


def format_estimate(e: CostEstimate) -> str:
    """`$35.20/h, at most $1,689.60 for time_limit 48h` (and the spot variant with rework)."""
    if e.price_per_hour is None:
        return f"price unknown ({e.note})" if e.note else "price unknown"
    cap = f" {e.capacity}" if e.capacity != "on-demand" else ""
    head = f"{money(e.price_per_hour)}/h{cap}"
    if e.duration_s is None:
        if not e.price_per_hour:
            return head
        engine = (f"the engine may apply the pool's default or maximum time limit, at most "
                  f"{span(e.engine_time_limit_s)}: {money(e.price_per_hour * e.engine_time_limit_s / 3600.0)}; "
                  if e.engine_time_limit_s else "")
        return f"{head}, run bound unknown (no time_limit; {engine}set compute.time_limit or pass --duration)"
    what = f"{e.duration_from} {span(e.duration_s)}"
    if e.duration_capped_s:
        what += f" (not --duration {span(e.duration_capped_s)}: the job stops at its time_limit)"
    if e.preemptible:
        if e.expected is None:
            return f"{head}, {money(e.bound or 0)} for {what} without interruptions; {e.note}"
        rework = (e.expected_hours or 0) * 3600 - e.duration_s
        return (f"{head}, expected {money(e.expected)} for {what} of work incl. "
                f"{span(max(rework, 0))} of rework after preemption "
                f"({money(e.bound or 0)} without interruptions)")
    return f"{head}, at most {money(e.bound or 0)} for {what}"


def format_assumptions(e: CostEstimate) -> str | None:
    """The line stating a preemptible estimate's assumptions, or None."""
    if not e.preemptible or e.assumptions is None:
        return None
    return "; ".join(x for x in (e.assumptions, e.checkpoint) if x)


@dataclass(frozen=True)
class PlanCost:
    estimates: tuple[CostEstimate, ...]
    per_hour: float  # $/h of everything in the plan (priced jobs)
    bound: float  # Σ worst over jobs that have one
    prior_per_hour: float  # $/h of what runs now at the addresses the caller passed
    unpriced: tuple[str, ...]  # addresses without a price
    unbounded: tuple[str, ...]  # priced addresses without a run bound
    budget: float | None = None
    over_budget: tuple[str, ...] = ()  # addresses named by the budget check
    budget_messages: tuple[str, ...] = ()

    @property
    def delta_per_hour(self) -> float:
        return self.per_hour - self.prior_per_hour

    @property
    def within_budget(self) -> bool:
        return not self.budget_messages

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the estimates found worth a warning (a CPU-only job on GPU nodes at no known price)."""
        return tuple(e.warning for e in self.estimates if e.warning)

    def to_dict(self) -> dict[str, Any]:
        return {"per_hour": round(self.per_hour, 4), "bound": round(self.bound, 2),
                "prior_per_hour": round(self.prior_per_hour, 4), "delta_per_hour": round(self.delta_per_hour, 4),
                "unpriced": list(self.unpriced), "unbounded": list(self.unbounded), "budget": self.budget,
                "within_budget": self.within_budget, "over_budget": list(self.over_budget),
                "budget_messages": list(self.budget_messages), "jobs": [e.to_dict() for e in self.estimates]}


def plan_cost(estimates: Iterable[CostEstimate], prior: Mapping[str, float] | None = None,
              budget: float | None = None) -> PlanCost:
    """Totals, change against what runs now, and the budget check.

    `prior` maps address → the $/h of what runs there now (from state), for every address the plan
    touches, including jobs it destroys (absent from `estimates`, so their $/h goes away).
    `budget` (`--max-cost` or `budget:`) is checked per job (its bound, or expected cost with
    rework, whichever is larger; a priced job without a bound fails) and for the plan's total.
    """
    prior = dict(prior or {})
    ests = tuple(e if e.prior_price_per_hour is not None or e.address not in prior
                 else _with_prior(e, prior[e.address]) for e in estimates)
    per_hour = sum(e.price_per_hour or 0.0 for e in ests)
    bound = sum(e.worst or 0.0 for e in ests)
    unpriced = tuple(e.address for e in ests if e.price_per_hour is None)
    unbounded = tuple(e.address for e in ests if e.unbounded)
    over: list[str] = []
    messages: list[str] = []
    if budget is not None:
        for e in ests:
            if e.unbounded:
                over.append(e.address)
                messages.append(f"{e.address}: {money(e.price_per_hour or 0)}/h with no time_limit, so its cost "
                                f"has no bound under the budget of {money(budget)} (set compute.time_limit or "
                                "pass --duration)")
            elif e.worst is not None and e.worst > budget:
                over.append(e.address)
                what = "expected" if e.preemptible and e.expected is not None and e.expected >= (e.bound or 0) \
                    else "at most"
                messages.append(f"{e.address}: {what} {money(e.worst)}, over the budget of {money(budget)}")
        if not over and bound > budget:
            ranked = sorted((e for e in ests if e.worst), key=lambda e: (-(e.worst or 0), e.address))
            over.extend(e.address for e in ranked)
            messages.append(f"the plan's run bound {money(bound)} is over the budget of {money(budget)}: "
                            + ", ".join(f"{e.address} {money(e.worst or 0)}" for e in ranked))
    return PlanCost(ests, per_hour, bound, sum(prior.values()), unpriced, unbounded, budget, tuple(over),
                    tuple(messages))


def _with_prior(e: CostEstimate, p: float) -> CostEstimate:
    return replace(e, prior_price_per_hour=p)


def format_summary(pc: PlanCost) -> str:
    """`Estimated: +$35.20/h (run bound $1,689.60)` — the cost half of the plan's summary line."""
    if pc.prior_per_hour:
        head = (f"Estimated: {money(pc.per_hour)}/h, {signed(pc.delta_per_hour)}/h from "
                f"{money(pc.prior_per_hour)}/h now")
    else:
        head = f"Estimated: {signed(pc.per_hour)}/h"
    bounded = any(e.worst is not None for e in pc.estimates)
    parts = [f"run bound {money(pc.bound)}"] if bounded else []
    if pc.unbounded:
        parts = [f"run bound {f'at least {money(pc.bound)}' if bounded else 'unknown'}: "
                 f"no time_limit for {', '.join(pc.unbounded)}"]
        open_ended = [e for e in pc.estimates if e.unbounded]
        if all(e.engine_time_limit_s for e in open_ended):
            most = pc.bound + sum((e.price_per_hour or 0) * (e.engine_time_limit_s or 0) / 3600.0 for e in open_ended)
            parts.append(f"at most {money(most)} if the engine applies the pools' maximum time limits")
    if pc.unpriced:
        parts.append(f"no price: {', '.join(pc.unpriced)}")
    return f"{head} ({'; '.join(parts)})" if parts else head


def format_budget(pc: PlanCost) -> str | None:
    """The error the plan prints (exit 1) when over budget, naming the jobs; None when within it."""
    if pc.within_budget:
        return None
    n = len(pc.over_budget)
    lines = [f"Error: the plan is over the budget of {money(pc.budget or 0)} "
             f"({n} job{'s' if n != 1 else ''}: {', '.join(pc.over_budget)})"]
    lines += [f"  {m}" for m in pc.budget_messages]
    return "\n".join(lines)
