"""The workspace, its state (and its lock), and what its engines say now: refresh, observe, probe."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from jsctl.config.workspace import Workspace
    from jsctl.model.cluster import Facts
    from jsctl.model.state import State
    from jsctl.model.status import LiveStatus
    from jsctl.state.backend import StateBackend

Echo = Callable[[str], None]  # where warnings go (the CLI: stderr)


def open_workspace(path: str | None = None) -> Workspace:
    """The workspace; each cluster's provider must be installed and its settings pass its schema."""
    from jsctl.config import workspace
    from jsctl.providers import registry

    return workspace.load(path, {name: (lambda name=name: registry.get(name).settings_schema())
                                 for name in registry.names()})


def store_for(ws: Workspace) -> StateBackend:
    """The workspace's state backend (`state:` of jsctl.yaml: the local file, or S3)."""
    from jsctl.state.factory import backend_for

    return backend_for(ws.state_settings)


def force_unlock(ws: Workspace, lock_id: str) -> dict:
    """Remove the state lock `lock_id` left by a process that is gone; the holder's lock info."""
    return store_for(ws).force_unlock(lock_id)


DEFAULT_TIMEOUT_S = 5.0
TIMEOUT_ENV = "JSCTL_PROBE_TIMEOUT"


def probe_timeout(value: float | None = None) -> float:
    """How long each cluster has to answer a probe or refresh: `value` (--probe-timeout), else
    $JSCTL_PROBE_TIMEOUT, else 5 seconds."""
    import os

    from jsctl.errors import UsageError

    if value is None:
        text = os.environ.get(TIMEOUT_ENV, "").strip()
        if not text:
            return DEFAULT_TIMEOUT_S
        try:
            value = float(text)
        except ValueError:
            raise UsageError(f"{TIMEOUT_ENV} must be a number of seconds, got {text!r}") from None
    if not value > 0:
        raise UsageError(f"the probe timeout must be more than 0 seconds, got {value:g}")
    return float(value)


class _Timeout(Exception):
    pass


def _concurrently(calls: dict, timeout_s: float) -> dict:
    """Run each call in its own daemon thread, all at once; wait at most `timeout_s` in all. The
    answer per key: the call's value, the JsctlError it raised, or _Timeout. A call that is still
    running is left behind (a daemon thread never holds the process up; the Slurm runner kills
    its commands at exit)."""
    import threading
    import time

    from jsctl.errors import JsctlError

    answers: dict = {}
    done = threading.Condition()

    def run(key, call) -> None:
        try:
            value = call()
        except JsctlError as exc:
            value = exc
        except Exception as exc:  # noqa: BLE001 - one broken client must not take the plan down
            from jsctl.errors import ProviderError

            value = ProviderError(f"{type(exc).__name__}: {exc}")
        with done:
            answers[key] = value
            done.notify_all()

    for key, call in calls.items():
        threading.Thread(target=run, args=(key, call), name=f"jsctl-ask-{key}", daemon=True).start()
    deadline = time.monotonic() + timeout_s
    with done:
        while len(answers) < len(calls):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            done.wait(left)
        return {key: answers.get(key, _Timeout()) for key in calls}


def survey(ws: Workspace, state: State | None, echo: Echo | None = None, timeout_s: float | None = None,
           probe_clusters: bool = True) -> tuple[dict[str, LiveStatus], dict[str, Facts]]:
    """Refresh every job of `state` (one batched query per cluster) and probe every cluster, all
    at once, each with `timeout_s` (probe_timeout()) to answer. A cluster that does not answer, or
    fails, is one warning through `echo`, however many of its queries failed."""
    from jsctl.errors import JsctlError
    from jsctl.providers.registry import Clients

    timeout = probe_timeout(timeout_s)
    by_cluster: dict[str, list] = {}
    for address, record in (state.records().items() if state is not None else ()):
        if record.handle is not None:
            by_cluster.setdefault(record.handle.cluster, []).append((address, record.handle))
    clients = Clients(ws)
    made: dict = {}
    for name in dict.fromkeys([*by_cluster, *(c.name for c in ws.clusters if probe_clusters)]):
        try:
            made[name] = clients.get(name)  # constructing one touches nothing (settings, SDK imports)
        except JsctlError as exc:
            made[name] = exc
    calls = {}
    for name, items in by_cluster.items():
        if not isinstance(made[name], JsctlError):
            calls[("refresh", name)] = (lambda c=made[name], hs=[h for _, h in items]: c.refresh(hs))
    if probe_clusters:
        for cluster in ws.clusters:
            if not isinstance(made[cluster.name], JsctlError):
                calls[("probe", cluster.name)] = made[cluster.name].probe
    answers = _concurrently(calls, timeout)
    problems: dict[str, dict[str, list[str]]] = {}  # cluster -> message -> the queries that got it
    for name, value in made.items():
        if isinstance(value, JsctlError):
            problems.setdefault(name, {})[_why(value, timeout)] = ["refresh" if name in by_cluster else "probe"]
    live: dict[str, LiveStatus] = {}
    facts: dict[str, Facts] = {}
    for (what, name), value in answers.items():
        if isinstance(value, (JsctlError, _Timeout)):
            problems.setdefault(name, {}).setdefault(_why(value, timeout), []).append(what)
        elif what == "refresh":
            for address, handle in by_cluster[name]:
                if handle in value:
                    live[address] = value[handle]
        else:
            facts[name] = value
    if echo:
        for name, messages in problems.items():
            whats = list(dict.fromkeys(w for ws_ in messages.values() for w in ws_))
            echo(f"Warning: could not {' or '.join(whats)} {name}: {'; '.join(messages)}")
    return live, facts


def _why(value: Exception, timeout_s: float) -> str:
    if isinstance(value, _Timeout):
        return f"no answer within {timeout_s:g}s ({TIMEOUT_ENV}=SECONDS waits longer)"
    return value.message  # type: ignore[attr-defined]


def refresh(ws: Workspace, state: State, echo: Echo | None = None,
            timeout_s: float | None = None) -> dict[str, LiveStatus]:
    """Live status of every job in state: one batched query per cluster, all clusters at once."""
    return survey(ws, state, echo, timeout_s, probe_clusters=False)[0]


def observe(ws: Workspace, state: State, live: dict[str, LiveStatus]) -> State:
    """`state` with the observed statuses applied; written to disk too when the lock is free (a
    busy lock just skips the write: the next command observes again)."""
    import time
    from dataclasses import replace

    from jsctl.errors import StateLockedError

    now = time.time()
    # observing replaces whole records (never changes one in place): copying the tables is enough
    seen = replace(state, resources=dict(state.resources), generations=dict(state.generations),
                   not_submitted=dict(state.not_submitted))
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


def probe(ws: Workspace, echo: Echo | None = None, timeout_s: float | None = None) -> dict[str, Facts]:
    """What each cluster's client learns about it, all clusters at once; a cluster that does not
    answer within the timeout is a warning."""
    return survey(ws, None, echo, timeout_s)[1]
