"""The workspace, its state (and its lock), and what its engines say now: refresh, observe, probe."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from jsctl.config.workspace import Workspace
    from jsctl.model.cluster import Facts
    from jsctl.model.state import State
    from jsctl.model.status import LiveStatus
    from jsctl.state.store import StateStore

Echo = Callable[[str], None]  # where warnings go (the CLI: stderr)


def open_workspace(path: str | None = None) -> Workspace:
    """The workspace; each cluster's provider must be installed and its settings pass its schema."""
    from jsctl.config import workspace
    from jsctl.providers import registry

    return workspace.load(path, {name: (lambda name=name: registry.get(name).settings_schema())
                                 for name in registry.names()})


def store_for(ws: Workspace) -> StateStore:
    from jsctl.state.store import StateStore

    return StateStore(ws.state_path)


def force_unlock(ws: Workspace, lock_id: str) -> dict:
    """Remove the state lock `lock_id` left by a process that is gone; the holder's lock info."""
    from jsctl.state.lock import force_unlock as unlock

    return unlock(store_for(ws).lock_path, lock_id)


def refresh(ws: Workspace, state: State, echo: Echo | None = None) -> dict[str, LiveStatus]:
    """Live status of every job in state: one batched query per cluster."""
    from jsctl.errors import JsctlError
    from jsctl.providers.registry import Clients

    by_cluster: dict[str, list] = {}
    for address, record in state.records().items():
        if record.handle is not None:
            by_cluster.setdefault(record.handle.cluster, []).append((address, record.handle))
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

    from jsctl.errors import StateLockedError

    now = time.time()
    seen = state.copy()
    for address, s in live.items():
        seen.observe(address, s, now)
    if not live:
        return seen
    store = store_for(ws)
    try:
        with store.locked("observe", 0.0):
            current = store.read()
            if any([current.observe(a, s, now) for a, s in live.items()]):
                store.write(current)
    except StateLockedError:
        pass
    return seen


def probe(ws: Workspace, echo: Echo | None = None) -> dict[str, Facts]:
    """What each cluster's client learns about it; a cluster that does not answer is a warning."""
    from jsctl.errors import JsctlError
    from jsctl.providers.registry import Clients

    facts = {}
    clients = Clients(ws)
    for cluster in ws.clusters:
        try:
            facts[cluster.name] = clients.get(cluster.name).probe()
        except JsctlError as exc:
            if echo:
                echo(f"Warning: could not probe {cluster.name}: {exc.message}")
    return facts
