"""Validate, plan and apply: files against state, and what apply does about the difference."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from jsctl.api.live import Echo, open_workspace, store_for, survey
from jsctl.config.diagnostics import Diagnostic, has_errors
from jsctl.model.spec import JobSpec
from jsctl.config.variables import Variables, collect, unused
from jsctl.plan.resolve import Sources, load_sources, output_paths, resolve_job

if TYPE_CHECKING:
    from jsctl.apply import ApplyResult, OnEvent
    from jsctl.config.workspace import Workspace
    from jsctl.model.state import State
    from jsctl.plan.model import Plan


@dataclass(frozen=True)
class Validation:
    sources: Sources
    specs: dict[str, JobSpec]  # by address
    diagnostics: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


def variables(cli_vars: Iterable[str] = (), var_files: Iterable[str] = ()) -> tuple[Variables, list[Diagnostic]]:
    return collect(cli_vars, var_files)


def validate(paths: Sequence[str], vars: Variables | None = None) -> Validation:
    """Load and check job and workflow files; every job resolved as its first generation."""
    from jsctl.plan.planner import runtime_names

    vars = vars or Variables({})
    names = runtime_names()  # what the installed providers' engines set when a job runs
    sources, diags = load_sources(paths, vars, names, templates=True)
    diags.extend(unused(vars, sources.texts().values(), names))  # -v NAME=... that no file uses
    specs: dict[str, JobSpec] = {}
    upstream: dict[str, dict[str, str]] = {}
    for source in sources.jobs:
        spec, ds = resolve_job(source, 1, upstream, names)
        diags.extend(ds)
        if spec is not None:
            specs[source.address] = spec
            upstream[source.address] = output_paths(spec)
    unique = tuple(dict.fromkeys(diags))
    return Validation(sources, specs, unique)


def plan(paths: Sequence[str], vars: Variables | None = None, ws: Workspace | None = None,
         targets: Sequence[str] = (), destroy: bool = False, echo: Echo | None = None, state: State | None = None,
         duration_s: int | None = None, max_cost: float | None = None, refresh: bool = True,
         probe_timeout_s: float | None = None, refresh_only: bool = False, holding_lock: bool = False) -> Plan:
    """Refresh, then plan: what apply would do for these files against state. Every cluster is
    probed and refreshed at once, each given `probe_timeout_s` (live.probe_timeout()) to answer;
    `refresh=False` asks no cluster: the plan is made from state and the inventory alone.
    `refresh_only`: refresh every job of state (or of `targets`) and plan only to record what
    changed outside jsctl (refresh_only_plan); the files are not read. A job the refresh finds
    SUCCEEDED is remembered in state (an observation: the serial stays), so that it is never run
    again once its engine forgets it; `holding_lock`: the caller holds the state lock (apply)."""

    from jsctl.errors import ConfigError, PlanError
    from jsctl.plan.planner import PlanInputs, make_plan, runtime_names

    ws = ws or open_workspace()
    store = store_for(ws)
    if state is None:
        state = store.read()
        state_exists = store.exists_at_read
    else:
        state_exists = store.exists()
    if refresh_only:
        return refresh_only_plan(ws, state, state_exists, targets, echo, probe_timeout_s, tuple(paths))
    sources, diags = load_sources(paths, vars or Variables({}), runtime_names())
    unused_vars = unused(vars or Variables({}), sources.texts().values(), runtime_names())
    if has_errors(diags):
        exc = ConfigError(diags + unused_vars)
        exc.sources = sources.texts()
        raise exc
    if echo and unused_vars:
        from jsctl.config.diagnostics import format_text

        echo(format_text(unused_vars))
    counts: dict[str, int] = {}
    for raw in state.resources.values():  # the records' JSON: typing 5,000 of them only to count costs
        cluster = raw.get("cluster") or "?"
        counts[cluster] = counts.get(cluster, 0) + 1
    said: list[str] = []  # clusters that did not answer: in the plan's warnings (text, markdown, JSON)
    if refresh:
        live, facts = survey(ws, state, said.append, probe_timeout_s)
        _remember_finished(ws, store, state, live, holding_lock)
        refreshed = "Refreshing state... " + (", ".join(f"{n} job{'s' if n != 1 else ''} on {c}"
                                                        for c, n in sorted(counts.items())) or "no jobs in state")
    else:
        live, facts = {}, {}
        refreshed = ("Not refreshing (--refresh=false): planned from state and the inventory alone; no cluster "
                     "was asked for live job status or its partitions and nodes.")
    try:
        from jsctl.plan import catalog

        result = make_plan(PlanInputs(sources, state, ws, facts, live, tuple(targets), destroy,
                                      state_exists, tuple(paths), catalog.load(ws.catalog),
                                      duration_s, max_cost, checkpoint_steps(sources, state, live)))
    except ConfigError as exc:
        _say(echo, said)
        exc.sources = sources.texts()
        raise
    except PlanError as exc:  # what could be planned rides along, for the documents CI posts (issue 10)
        _say(echo, said)
        if getattr(exc, "plan", None) is not None:
            exc.plan = _finish(exc.plan, facts, refreshed, refresh, said)
        raise
    return _finish(result, facts, refreshed, refresh, said)


def checkpoint_steps(sources: Sources, state: State, live: dict) -> dict[str, int | str | None]:
    """--- drift: for each job a plan may run again (failed, cancelled, vanished), the newest complete
    checkpoint step in the directory its replacement resumes from: None when there is none yet,
    "unseen" when jsctl cannot see that directory from here (another machine's file system)."""
    import os

    from jsctl.plan.drift import UNSEEN, finished, latest_step

    out: dict[str, int | str | None] = {}
    for source in sources.jobs:
        raw, status = state.resources.get(source.address), live.get(source.address)
        if raw is None or (status is None and (raw.get("status") or {}).get("phase") not in ("FAILED", "CANCELLED",
                                                                                             "UNKNOWN")):
            continue  # not in state, or not to run again: no record to type (most of a large state)
        record = state.record(source.address)
        phase = status.phase if status else (record.status.phase if record else None)
        if record is None or phase not in ("FAILED", "CANCELLED", "UNKNOWN") or finished(record, status):
            continue
        outputs = (((record.spec or {}).get("storage") or {}).get("outputs") or [])
        name = next((o.get("name") for o in outputs if isinstance(o, dict) and isinstance(o.get("policy"), dict)
                     and (o["policy"].get("save_frequency") or o["policy"].get("keep_latest"))), None)
        path = record.outputs.get(name) if name else None
        if not path:
            continue
        where = path if os.path.isabs(path) else os.path.join(os.path.dirname(os.path.abspath(source.doc.path)), path)
        out[source.address] = latest_step(where) if os.path.isdir(where) else UNSEEN
    return out


def _remember_finished(ws: Workspace, store, state: State, live: dict, holding_lock: bool) -> None:
    """--- drift: record the jobs the refresh found SUCCEEDED that state does not know finished yet
    (written when the lock is free, or through it when the caller holds it)."""
    import time

    from jsctl.api.live import observe
    from jsctl.errors import StateError

    done = {a: s for a, s in live.items() if s.phase == "SUCCEEDED"
            and (r := state.record(a)) is not None and r.status.phase != "SUCCEEDED"}
    if not done:
        return
    if not holding_lock:
        observe(ws, state, done)
        return
    try:
        current = store.read()
        if any([current.observe(a, s, time.time()) for a, s in done.items()]):
            store.write(current)
    except StateError:
        pass  # only a memory for later plans: the next refresh tries again


def refresh_only_plan(ws: Workspace, state: State, state_exists: bool, targets: Sequence[str] = (),
                      echo: Echo | None = None, probe_timeout_s: float | None = None,
                      files: tuple[str, ...] = ()) -> Plan:
    """`plan --refresh-only`: every job of state refreshed (one batched query per cluster), what
    changed outside jsctl shown, and nothing proposed but recording it in state (no job is
    submitted, updated or cancelled). Like Terraform's refresh-only mode."""
    from jsctl.model.address import Address
    from jsctl.plan.drift import observations
    from jsctl.plan.model import Plan
    from jsctl.plan.planner import check_targets

    if targets:
        check_targets(targets, list(state.records()))
    said: list[str] = []
    live, _ = survey(ws, state, said.append, probe_timeout_s, probe_clusters=False)
    counts: dict[str, int] = {}
    for record in state.records().values():
        counts[record.cluster or "?"] = counts.get(record.cluster or "?", 0) + 1
    refreshed = "Refreshing state (--refresh-only)... " + (", ".join(
        f"{n} job{'s' if n != 1 else ''} on {c}" for c, n in sorted(counts.items())) or "no jobs in state")
    observed = observations(state, live, lambda a: not targets or any(Address.parse(a).selected_by(t)
                                                                       for t in targets))
    return Plan((), state.serial, state.lineage, state_exists, files, ws.file, False,
                warnings=tuple(w.removeprefix("Warning: ") for w in said), refreshed=refreshed,
                refresh_only=True, observed=observed)


def _say(echo: Echo | None, said: list[str]) -> None:
    """No plan to carry them: the clusters that did not answer go to `echo` (stderr)."""
    for line in said:
        if echo:
            echo(line)


def _finish(result: Plan, facts: dict, refreshed: str, refresh: bool, said: Sequence[str] = ()) -> Plan:
    """The plan with its header line, the clusters that did not answer, and the probes' warnings."""
    from dataclasses import replace

    warnings = tuple(w.removeprefix("Warning: ") for w in said)
    warnings += tuple(f"{name}: {w}" for name, f in sorted(facts.items()) for w in f.warnings)
    return replace(result, refreshed=refreshed, warnings=result.warnings + warnings, refresh=refresh)


def check_remote(the_plan: Plan, ws: Workspace) -> Plan:
    """Ask each engine whether it would run the planned jobs (`sbatch --test-only`) and when."""
    from dataclasses import replace

    from jsctl.errors import JsctlError
    from jsctl.providers import registry

    clients = registry.Clients(ws)
    changes = []
    for c in the_plan.changes:
        if c.action in ("create", "replace") and c.artifact and registry.get(c.provider).capabilities().check_remote:
            try:
                c = replace(c, why=replace(c.why, scheduler=clients.get(c.cluster).check(c.artifact)))
            except JsctlError as exc:
                c = replace(c, why=replace(c.why, scheduler=exc.message, refused=True))
        changes.append(c)
    return replace(the_plan, changes=tuple(changes))


def apply(the_plan: Plan, ws: Workspace, on_event: OnEvent | None = None, poll_s: float = 1.0) -> ApplyResult:
    """Carry out a plan; `on_event` hears each step (jsctl.apply's events). The caller holds the state lock."""
    from jsctl.apply import apply as run

    return run(the_plan, ws, store_for(ws), on_event, poll_s)
