"""Make a Plan: a pure function of sources, state, workspace, probed facts and live statuses."""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

from jsctl.config.diagnostics import Diagnostic, did_you_mean, error
from jsctl.config.workspace import Workspace
from jsctl.errors import ConfigError, JsctlError, PlanError, UsageError
from jsctl.model.diff import field_changes
from jsctl.model.address import Address, job_id
from jsctl.plan.model import Explanation, Plan, ResourceChange
from jsctl.plan import cost
from jsctl.plan.catalog import Catalog, builtin
from jsctl.plan.placement import PlacementResult, infeasible_message, place
from jsctl.plan.resolve import JobSource, Sources, output_paths, resolve_job
from jsctl.plan.strategy import StrategyAdvice, advise
from jsctl.plan import advisor, memory
from jsctl.plan.drift import carried_checkpoint, finished, keep_checkpoint_path, resume_text, resumed_checkpoint, unexpected
from jsctl.providers import registry
from jsctl.render import launch
from jsctl.model.cluster import Facts, Offer
from jsctl.model import gcpause
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.job import JobContext
from jsctl.model.runtime_names import RuntimeNames
from jsctl.model.spec import JobSpec
from jsctl.model.status import LiveStatus
from jsctl.model.state import State, StateRecord


@dataclass(frozen=True)
class PlanInputs:
    sources: Sources
    state: State
    workspace: Workspace
    facts: Mapping[str, Facts] = field(default_factory=dict)  # by cluster
    live: Mapping[str, LiveStatus] = field(default_factory=dict)  # by address
    targets: tuple[str, ...] = ()
    destroy: bool = False
    state_exists: bool = False
    files: tuple[str, ...] = ()
    catalog: Catalog | None = None
    duration_s: int | None = None  # --duration: price the run for this long instead of time_limit
    max_cost: float | None = None  # --max-cost, else the workspace's budget
    checkpoints: Mapping[str, int | str | None] = field(default_factory=dict)  # drift: address -> newest step


def offers_for(workspace: Workspace, facts: Mapping[str, Facts], catalog: Catalog | None) -> list[Offer]:
    """Every cluster's offers, from its provider; the catalog is input to all (clouds price from it)."""
    catalog = catalog or builtin()
    return [o for cluster in workspace.clusters
            for o in registry.get(cluster.provider).offers(cluster, facts.get(cluster.name), catalog)]


_RUNTIME_NAMES: list = [(), None]  # the providers last asked, and their union (asked once per job)


def runtime_names() -> RuntimeNames:
    """Names the installed providers' engines set when a job runs: `${NAME}` waits for run time."""
    providers = tuple(registry.loadable())
    last, names = _RUNTIME_NAMES
    if names is None or len(last) != len(providers) or any(a is not b for a, b in zip(last, providers)):
        names = RuntimeNames.union(provider.runtime_names() for provider in providers)
        _RUNTIME_NAMES[:] = [providers, names]
    return names


def _in_scope(address: str, targets: Sequence[str]) -> bool:
    return not targets or any(Address.parse(address).selected_by(t) for t in targets)


def check_targets(targets: Sequence[str], addresses: Sequence[str]) -> None:
    """Every `--target` must pick something: an address (of the files or of state), a job's bare
    name, or `workflow.W`. One that picks nothing is an error naming what exists."""
    parsed = [Address.parse(a) for a in dict.fromkeys(addresses)]
    missing = [t for t in targets if not any(a.selected_by(t) for a in parsed)]
    if not missing:
        return
    known = [str(a) for a in parsed]
    choices = known + [a.name for a in parsed] + [f"workflow.{a.workflow}" for a in parsed if a.workflow]
    lines = [f"--target {t} matches no job{did_you_mean(t, choices)}" for t in missing]
    raise UsageError("\n".join(lines),
                     hint=("addresses: " + ", ".join(sorted(known)) + " (a job's bare name works too)") if known
                     else "the files given have no jobs, and state has none")


def make_plan(inp: PlanInputs) -> Plan:
    with gcpause.paused():  # thousands of jobs: the collector would only walk them
        return _make_plan(inp)


def _make_plan(inp: PlanInputs) -> Plan:
    state = inp.state
    if inp.targets:
        check_targets(inp.targets, [s.address for s in inp.sources.jobs] + list(state.records()))
    changes: list[ResourceChange] = []
    diags: list[Diagnostic] = []
    infeasible: list[str] = []
    advisories: list[tuple[str, str]] = []  # ("error" | "warning", text): the strategy advisor on named strategies
    offers = offers_for(inp.workspace, inp.facts, inp.catalog)
    checked = [replace(d, file=d.file or inp.workspace.file or "jsctl.yaml") for c in inp.workspace.clusters
               for d in registry.get(c.provider).check_cluster(c, inp.catalog or builtin())]
    if any(d.severity == "error" for d in checked):
        raise ConfigError([d for d in checked if d.severity == "error"])
    upstream: dict[str, dict[str, str]] = {}
    ids: dict[str, str] = {}
    wanted = {s.address for s in inp.sources.jobs}
    names = runtime_names()  # once for the plan, not per job
    for source in inp.sources.jobs:
        prior = state.record(source.address)
        if inp.destroy:
            continue
        if not _in_scope(source.address, inp.targets):
            if prior:
                upstream[source.address] = dict(prior.outputs)
            continue
        change = _plan_job(source, prior, state, inp, offers, upstream, diags, advisories, names)
        if change is None:
            continue
        if change.placement is None and change.action != "delete":
            infeasible.append(_infeasible_text(change))
        ids[source.address] = change.job_id or ""
        upstream[source.address] = change.outputs
        changes.append(change)
    if diags:
        raise ConfigError(diags)
    for address in sorted(state.resources):  # typed only when it goes: most of a large state stays
        if (address not in wanted or inp.destroy) and _in_scope(address, inp.targets):
            record = state.record(address)
            assert record is not None
            why = Explanation(("no longer in the configuration",) if not inp.destroy else ("destroy",),
                              drift=_drift(record, inp.live.get(address)))
            changes.append(ResourceChange(address, record.name, "delete", record.job_id, record.generation,
                                          record.provider, record.cluster, before=record.to_dict(), why=why))
    budget = inp.max_cost if inp.max_cost is not None else inp.workspace.budget
    totals = cost.plan_cost([c.cost for c in changes if c.cost and c.action != "delete"],
                            {c.address: _prior_price(c) for c in changes
                             if c.action in ("update", "replace", "delete") and _prior_price(c) is not None},
                            budget)
    the_plan = Plan(tuple(changes), state.serial, state.lineage, inp.state_exists, inp.files,
                    inp.workspace.file, inp.destroy, warnings=tuple(d.message for d in checked)
                    + tuple(text for kind, text in advisories if kind == "warning"), cost=totals)
    problem = None
    if infeasible:
        problem = PlanError("no feasible placement:\n" + "\n".join(infeasible),
                            hint="change compute.resources or compute.target, or add a cluster to jsctl.yaml")
    elif any(kind == "error" for kind, _ in advisories):
        problem = PlanError("\n".join(text for kind, text in advisories if kind == "error"),
                            hint="change strategy (or parallelism: auto), model.micro_batch_size or compute.resources")
    elif budget is not None and not totals.within_budget:
        problem = PlanError(cost.format_budget(totals).removeprefix("Error: "),
                            hint="raise --max-cost or budget:, shorten time_limit, or choose cheaper resources")
    if problem is not None:
        problem.plan = the_plan  # what could be planned, for the documents CI posts with the error
        raise problem
    return the_plan


def _prior_price(c: ResourceChange) -> float | None:
    return StateRecord.from_dict(c.before, c.address).cost_basis.price_per_hour if c.before else None


def _infeasible_text(change: ResourceChange) -> str:
    why = None if change.why.candidates else "no cluster of the workspace offers any place to run jobs"
    return infeasible_message(PlacementResult(None, change.why.candidates, why), change.address)


def _drift(record: StateRecord, live: LiveStatus | None) -> str | None:
    """A job stopped or lost behind jsctl's back (not one that failed on its own, or `jsctl stop`):
    the compared fields are jsctl.plan.drift.COMPARED; fields that change by themselves never count."""
    found = unexpected(record, live)
    return found.text() if found else None


@dataclass(frozen=True)
class Built:
    """One job resolved, placed, sized and rendered (placement may have failed: then only candidates)."""

    spec: JobSpec
    result: PlacementResult
    ctx: JobContext | None = None
    artifact: RenderedArtifact | None = None
    advice: StrategyAdvice | None = None
    review: advisor.Review | None = None  # the advisor on a strategy the job names: an error, warnings
    warnings: tuple[str, ...] = ()  # the provider's (validate) about this job


def _plan_job(source: JobSource, prior: StateRecord | None, state: State, inp: PlanInputs, offers: list[Offer],
              upstream: dict[str, dict[str, str]], diags: list[Diagnostic],
              advisories: list[tuple[str, str]] | None = None,
              names: RuntimeNames | None = None) -> ResourceChange | None:
    generation = state.next_generation(source.address)
    built = _build(source, generation, offers, inp, upstream, diags, names=names)
    if built is None:
        return None
    carried = carried_checkpoint(prior, built.spec) if prior else None  # --- drift: kept by a recovery
    if carried is not None:
        built = _build(source, generation, offers, inp, upstream, diags, carried, names)
        if built is None:
            return None
    live = inp.live.get(source.address)
    action, reasons, drift, forces = "create", (), None, ()
    if prior:
        drift = _drift(prior, live)
        phase = live.phase if live else prior.status.phase
        if finished(prior, live):  # --- drift: a finished job stays finished, even once its engine forgot it
            phase = "SUCCEEDED"
        placement = built.result.placement
        keep = None  # --- drift: the checkpoint output a recovery replacement keeps (resumes from it)
        if placement is None:
            action = "replace"
        elif phase in ("FAILED", "CANCELLED", "UNKNOWN"):
            action = "replace"
            keep = resumed_checkpoint(prior, built.spec) if prior.spec == built.spec.document else None
            reasons = (f"job is {phase}" + (f" ({live.reason})" if live and live.reason else "") + "; it runs again"
                       + resume_text(keep, inp.checkpoints.get(source.address, "unseen")),)
        elif prior.cluster != placement.cluster:
            action, reasons = "replace", (f"placement moves from {prior.cluster} to {placement.cluster}",)
        else:
            assert built.artifact is not None
            verdict = registry.get(placement.provider).diff(prior.artifact, built.artifact, prior.artifact_digest)
            action, reasons, forces = verdict.action, verdict.reasons, verdict.fields
            if action == "no-op" and prior.spec != built.spec.document:
                action = "update"  # bookkeeping only (labels, ...): what runs stays as it is
        if action == "replace":
            built = _build(source, generation + 1, offers, inp, upstream, diags, keep, names)
            if built is None:
                return None
    spec, p, ctx, advice = built.spec, built.result.placement, built.ctx, built.advice
    if advisories is not None:
        advisories.extend(("warning", f"{source.address}: {w}") for w in built.warnings)
    if built.review is not None and advisories is not None:
        advisories.extend(("warning", w) for w in built.review.warnings)
        if built.review.error:
            advisories.append(("error", built.review.error))
    chosen = built.result.chosen
    estimate = cost.estimate(source.address, spec, p, inp.duration_s,
                             prior_price_per_hour=prior.cost_basis.price_per_hour if prior else None,
                             offer=chosen.offer if chosen else None)
    why = Explanation(tuple(reasons), tuple(forces),
                      tuple(field_changes(dict(prior.spec or {}), spec.document)) if prior else (),
                      built.result.candidates, advice.describe() if advice else "",
                      launch.command(ctx) if ctx else (), drift,
                      strategy_advice=advice.to_dict() if advice else None)
    return ResourceChange(
        address=source.address, name=source.name, action=action,
        job_id=ctx.job_id if ctx else job_id(source.name, source.address, generation),
        generation=ctx.generation if ctx else generation, provider=p.provider if p else None,
        cluster=p.cluster if p else None, placement=p, artifact=built.artifact, spec=spec.document, file=spec.file,
        before=prior.to_dict() if prior else None, depends_on=source.depends_on,
        dependencies_enforced=bool(p and registry.get(p.provider).capabilities().dependencies),
        strategy=advice.to_env() if advice else {}, outputs=output_paths(spec), cost=estimate, why=why)


def _build(source: JobSource, generation: int, offers: list[Offer], inp: PlanInputs,
           upstream: dict[str, dict[str, str]], diags: list[Diagnostic],
           keep: tuple[str, str] | None = None, names: RuntimeNames | None = None) -> Built | None:
    spec, ds = resolve_job(source, generation, upstream, names if names is not None else runtime_names())
    diags.extend(d for d in ds if d.severity == "error")
    if spec is None:
        return None
    if keep is not None:  # --- drift: a recovery replacement writes and restores the same checkpoints
        spec = keep_checkpoint_path(spec, *keep)
    target_cluster = (spec.compute.target or "").partition("/")[0]  # `cluster` or `cluster/pool`
    if target_cluster and not inp.workspace.cluster(target_cluster):
        p = source.doc.where(("compute", "target"))
        names = [c.name for c in inp.workspace.clusters]
        diags.append(error("P001", f"compute.target '{spec.compute.target}' is not a cluster of this workspace"
                           f"{did_you_mean(target_cluster, names)}", source.doc.path, p.line, p.col,
                           hint="clusters: " + ", ".join(names)))
        return None
    shape = memory.model_shape(spec, os.path.dirname(os.path.abspath(spec.file)))
    result = place(spec, offers, inp.workspace.prefer, shape)
    if result.placement is None:
        return Built(spec, result)
    advice = advise(spec, result.placement, result.chosen.offer if result.chosen else None)
    review = _review(source.address, spec, shape, result)
    generated = advice.generated()
    if generated.errors:  # the FSDP/DeepSpeed configuration cannot be generated as the job asks
        at = source.doc.where(("strategy", "config"))
        diags.extend(error("P005", f"{source.address}: {msg}", source.doc.path, at.line, at.col) for msg in generated.errors)
        return None
    cluster = inp.workspace.cluster(result.placement.cluster)
    ctx = JobContext(source.address, job_id(source.name, source.address, generation), generation, spec,
                     result.placement, source.depends_on, advice.to_env(),
                     os.path.dirname(os.path.abspath(spec.file)), cluster,
                     registry.get(result.placement.provider).runtime_names())
    provider = registry.get(result.placement.provider)
    facts = inp.facts.get(cluster.name) if cluster else None
    problems = provider.validate(ctx, facts)
    diags.extend(d for d in problems if d.severity == "error")
    if any(d.severity == "error" for d in problems):
        return None
    try:
        artifact = provider.render(ctx, facts)
    except JsctlError as exc:
        diags.append(error("P002", f"{result.placement.provider}: cannot render {source.address}: {exc.message}",
                           spec.file, hint=exc.hint))
        return None
    return Built(spec, result, ctx, artifact, advice, review,
                 tuple(d.message for d in problems if d.severity == "warning"))


def _review(address: str, spec: JobSpec, shape: memory.ModelShape | None, result: PlacementResult) -> advisor.Review:
    """The advisor on the strategy the job names (not `auto`), on the chosen placement; the other
    candidates whose only miss is the GPU (type or memory) are where a larger GPU could come from."""
    chosen, p = result.chosen, result.placement
    if p is None or chosen is None or spec.strategy.parallelism == "auto":
        return advisor.Review(None)

    def gpu_only(reason: str) -> bool:
        return reason.startswith("gpu type ") or "per GPU even with" in reason

    elsewhere = [advisor.Elsewhere(c.offer.cluster, c.offer.pool, c.offer.gpu_type, c.nodes, c.gpus_per_node,
                                   c.offer.memory_per_node or None)
                 for c in result.candidates[1:]
                 if c.offer.gpu_type not in (None, "*") and 0 < c.gpus_per_node <= c.offer.gpus_per_node
                 and all(gpu_only(r) for r in c.reasons)]
    return advisor.review(address, shape, spec.strategy.parallelism, dict(spec.strategy.config), p,
                          advisor.precision(spec), elsewhere, chosen.offer.max_nodes, chosen.offer.nvlink,
                          chosen.offer.memory_per_node or None)
