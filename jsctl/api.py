"""The SDK: every CLI verb is first one of these typed functions."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from jsctl.config.diagnostics import Diagnostic, has_errors
from jsctl.model.spec import JobSpec
from jsctl.config.variables import Variables, collect
from jsctl.plan.resolve import Sources, load_sources, output_paths, resolve_job

if TYPE_CHECKING:
    from jsctl.apply import ApplyResult
    from jsctl.config.workspace import Workspace
    from jsctl.plan.model import Plan
    from jsctl.model.cluster import Facts
    from jsctl.model.status import LiveStatus
    from jsctl.model.state import State
    from jsctl.state.store import StateStore

Echo = Callable[[str], None]


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
    vars = vars or Variables({})
    sources, diags = load_sources(paths, vars)
    specs: dict[str, JobSpec] = {}
    upstream: dict[str, dict[str, str]] = {}
    for source in sources.jobs:
        spec, ds = resolve_job(source, 1, upstream)
        diags.extend(ds)
        if spec is not None:
            specs[source.address] = spec
            upstream[source.address] = output_paths(spec)
    unique = tuple(dict.fromkeys(diags))
    return Validation(sources, specs, unique)


# ---- plan and apply ---------------------------------------------------------------------------------

def open_workspace(path: str | None = None) -> Workspace:
    from jsctl.config import workspace

    return workspace.load(path)


def store_for(ws: Workspace) -> StateStore:
    from jsctl.state.store import StateStore

    return StateStore(ws.state_path)


def refresh(ws: Workspace, state: State, echo: Echo | None = None) -> dict[str, LiveStatus]:
    """Live status of every job in state: one batched query per cluster."""
    from jsctl.apply import Clients
    from jsctl.errors import JsctlError
    from jsctl.model.status import JobHandle

    by_cluster: dict[str, list] = {}
    for address, record in state.resources.items():
        if record.get("handle"):
            handle = JobHandle.parse(record["handle"])
            by_cluster.setdefault(handle.cluster, []).append((address, handle))
    live = {}
    clients = Clients(ws)
    for cluster, items in by_cluster.items():
        try:
            answers = clients.get(cluster).refresh([h for _, h in items])
        except JsctlError as exc:
            if echo:
                echo(f"Warning: could not refresh {cluster}: {exc.message}")
            continue
        for address, handle in items:
            if handle in answers:
                live[address] = answers[handle]
    return live


def observe(ws: Workspace, state: State, live: dict[str, LiveStatus]) -> State:
    """`state` with the observed statuses applied; written to disk too when the lock is free (a
    busy lock just skips the write: the next command observes again)."""
    import time

    from jsctl.apply import status_dict
    from jsctl.errors import StateLockedError

    now = time.time()
    seen = state.copy()
    for address, s in live.items():
        seen.observe(address, status_dict(s), now)
    if not live:
        return seen
    store = store_for(ws)
    try:
        with store.locked("observe", 0.0):
            current = store.read()
            if any([current.observe(a, status_dict(s), now) for a, s in live.items()]):
                store.write(current)
    except StateLockedError:
        pass
    return seen


def probe(ws: Workspace, echo: Echo | None = None) -> dict[str, Facts]:
    from jsctl.apply import Clients
    from jsctl.errors import JsctlError

    from jsctl.plan.offers import cloud_of

    facts = {}
    clients = Clients(ws)
    for cluster in ws.clusters:
        if cloud_of(cluster):
            continue  # priced from the catalog; nothing to ask
        try:
            facts[cluster.name] = clients.get(cluster.name).probe()
        except JsctlError as exc:
            if echo:
                echo(f"Warning: could not probe {cluster.name}: {exc.message}")
    return facts


def plan(paths: Sequence[str], vars: Variables | None = None, ws: Workspace | None = None,
         targets: Sequence[str] = (), destroy: bool = False, echo: Echo | None = None, state: State | None = None,
         duration_s: int | None = None, max_cost: float | None = None) -> Plan:
    """Refresh, then plan: what apply would do for these files against state."""
    import os

    from jsctl.errors import ConfigError
    from jsctl.plan.planner import PlanInputs, make_plan

    ws = ws or open_workspace()
    store = store_for(ws)
    state = state if state is not None else store.read()
    sources, diags = load_sources(paths, vars or Variables({}))
    if has_errors(diags):
        exc = ConfigError(diags)
        exc.sources = sources.texts()
        raise exc
    live = refresh(ws, state, echo)
    facts = probe(ws, echo)
    counts: dict[str, int] = {}
    for record in state.resources.values():
        counts[record.get("cluster", "?")] = counts.get(record.get("cluster", "?"), 0) + 1
    refreshed = "Refreshing state... " + (", ".join(f"{n} job{'s' if n != 1 else ''} on {c}"
                                                    for c, n in sorted(counts.items())) or "no jobs in state")
    try:
        from jsctl.plan import catalog

        result = make_plan(PlanInputs(sources, state, ws, facts, live, tuple(targets), destroy,
                                      os.path.exists(store.path), tuple(paths), catalog.load(ws.catalog),
                                      duration_s, max_cost))
    except ConfigError as exc:
        exc.sources = sources.texts()
        raise
    from dataclasses import replace

    warnings = tuple(f"{name}: {w}" for name, f in sorted(facts.items()) for w in f.warnings)
    return replace(result, refreshed=refreshed, warnings=warnings)


def check_remote(the_plan: Plan, ws: Workspace) -> Plan:
    """Ask each engine whether it would run the planned jobs (`sbatch --test-only`) and when."""
    from dataclasses import replace

    from jsctl.apply import Clients
    from jsctl.errors import JsctlError
    from jsctl.providers import registry

    clients = Clients(ws)
    changes = []
    for c in the_plan.changes:
        if c.action in ("create", "replace") and c.artifact and registry.get(c.provider).capabilities().check_remote:
            try:
                c = replace(c, scheduler=clients.get(c.cluster).check(c.artifact))
            except JsctlError as exc:
                c = replace(c, scheduler=exc.message, refused=True)
        changes.append(c)
    return replace(the_plan, changes=tuple(changes))


def apply(the_plan: Plan, ws: Workspace, echo: Echo, poll_s: float = 1.0) -> ApplyResult:
    from jsctl.apply import apply as run

    return run(the_plan, ws, store_for(ws), echo, poll_s)
