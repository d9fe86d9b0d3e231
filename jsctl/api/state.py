"""The state commands (`jsctl state list|show|rm|mv|pull|push|migrate`) and `jsctl import`.

Commands that write (rm, mv, push, migrate, import) take the state lock; list, show and pull read
one version of the state without it (both backends replace the state whole, so a read never sees a
half-written one, and reading works while a long apply holds the lock, as Terraform's do).
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Sequence

from jsctl.errors import StateError, UsageError

if TYPE_CHECKING:
    from jsctl.config.variables import Variables
    from jsctl.config.workspace import StateSettings, Workspace
    from jsctl.model.state import State, StateRecord
    from jsctl.state.backend import StateBackend

OnLockWait = Callable[[dict], None]
ADDRESS = re.compile(r"^(job\.[A-Za-z0-9_-]+|workflow\.[A-Za-z0-9_-]+\.job\.[A-Za-z0-9_-]+)$")


def check_address(address: str) -> str:
    if not ADDRESS.match(address):
        raise UsageError(f"not an address: {address!r}", hint="addresses are job.NAME or workflow.W.job.NAME "
                                                               "(jsctl state list shows them)")
    return address


def _store(ws: Workspace) -> StateBackend:
    from jsctl.api.live import store_for

    return store_for(ws)


def _known(state: State, address: str) -> None:
    if address not in state.resources:
        listed = ", ".join(sorted(state.resources)) or "none"
        raise UsageError(f"{address} is not in state", hint=f"addresses in state: {listed}")


# ---- read ---------------------------------------------------------------------------------------------

def records(ws: Workspace) -> dict[str, StateRecord]:
    """Every record in state, by address (sorted)."""
    return _store(ws).read().records()


def show(ws: Workspace, address: str) -> dict:
    """The record at `address`, as the state file holds it."""
    state = _store(ws).read()
    _known(state, check_address(address))
    return dict(state.resources[address])


def pull(ws: Workspace) -> str:
    """The stored state document (JSON), as `state push` takes it back."""
    from jsctl.state.backend import dump_state

    store = _store(ws)
    state = store.read()
    if not store.exists_at_read:
        raise StateError(f"no state is stored at {store.where}", hint="jsctl apply creates it")
    return dump_state(state)


# ---- write --------------------------------------------------------------------------------------------

def rm(ws: Workspace, addresses: Sequence[str], lock_timeout_s: float = 0.0,
       on_lock_wait: OnLockWait | None = None) -> list[StateRecord]:
    """Forget these addresses (their jobs are not touched: they keep running, unmanaged)."""
    for a in addresses:
        check_address(a)
    store = _store(ws)
    with store.locked("state rm", lock_timeout_s, on_lock_wait):
        state = store.read()
        for a in addresses:
            _known(state, a)
        removed = [r for a in addresses if (r := state.record(a)) is not None]
        for a in addresses:
            state.remove(a)
        store.write(state)
    return removed


@dataclass(frozen=True)
class Moved:
    source: str
    destination: str
    record: StateRecord


def mv(ws: Workspace, source: str, destination: str, lock_timeout_s: float = 0.0,
       on_lock_wait: OnLockWait | None = None) -> Moved:
    """Give the record at `source` the address `destination` (a renamed job file keeps its job)."""
    check_address(source)
    check_address(destination)
    if source == destination:
        raise UsageError("source and destination are the same address")
    store = _store(ws)
    with store.locked("state mv", lock_timeout_s, on_lock_wait):
        state = store.read()
        _known(state, source)
        if destination in state.resources:
            raise UsageError(f"{destination} is already in state", hint=f"jsctl state rm {destination} first")
        record = state.record(source)
        assert record is not None
        now = time.time()
        generation = max(record.generation, int(state.generations.get(destination, 0)))
        moved = replace(record, address=destination, name=destination.rsplit(".", 1)[-1],
                        generation=generation).with_event(f"moved from {source}", now)
        state.remove(source)
        state.put(destination, moved)
        store.write(state)
    return Moved(source, destination, moved)


@dataclass(frozen=True)
class Pushed:
    serial: int
    lineage: str
    where: str
    replaced_serial: int | None  # the stored state's serial before (None: none was stored)


def read_state_file(path: str) -> State:
    """A state file to push; a truncated or invalid one is refused (StateError)."""
    from jsctl.state.backend import parse_state

    try:
        if path == "-":
            import sys

            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise StateError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    if not text.strip():
        raise StateError(f"{path} is empty; nothing was pushed")
    state = parse_state(text, path, hint="nothing was pushed; push a complete file (jsctl state pull > FILE)")
    for address, d in state.resources.items():
        if not isinstance(d, dict) or not ADDRESS.match(address):
            raise StateError(f"{path} has an invalid record {address!r}; nothing was pushed")
    return state


def push(ws: Workspace, path: str, force: bool = False, lock_timeout_s: float = 0.0,
         on_lock_wait: OnLockWait | None = None) -> Pushed:
    """Replace the stored state with a file. Refused, unless `force`: another lineage, an older serial,
    or the same serial with other content (Terraform's protections). A truncated or invalid file is
    refused always."""
    state = read_state_file(path)
    store = _store(ws)
    with store.locked("state push", lock_timeout_s, on_lock_wait):
        snap = store.read_versioned()
        current = snap.state
        if snap.exists:
            if current.to_dict() == state.to_dict():
                return Pushed(state.serial, state.lineage, store.where, current.serial)
            if not force:
                if current.lineage != state.lineage:
                    raise StateError(f"{path} is lineage {state.lineage}; the state at {store.where} is lineage "
                                     f"{current.lineage}: it is another state, not a version of this one",
                                     hint="nothing was pushed; --force replaces it anyway")
                if state.serial < current.serial:
                    raise StateError(f"{path} has serial {state.serial}, older than the stored serial {current.serial}",
                                     hint="nothing was pushed; jsctl state pull for the newer one, or --force")
                if state.serial == current.serial:
                    raise StateError(f"{path} has the stored serial {state.serial} but other content",
                                     hint="nothing was pushed; --force replaces it anyway")
            if state.serial <= current.serial:  # forced: saved plans made against the old one go stale
                state.serial = current.serial + 1
        store.write_if(state, snap.version)
    return Pushed(state.serial, state.lineage, store.where, current.serial if snap.exists else None)


# ---- migrate ------------------------------------------------------------------------------------------

def parse_target(text: str, region: str | None = None, endpoint_url: str | None = None) -> StateSettings:
    """`--to`: s3://BUCKET/KEY, a workspace file (.yaml/.yml: its `state:`), or a local state file path."""
    from jsctl.config import workspace

    if text.startswith("s3://"):
        bucket, _, key = text[5:].partition("/")
        if not bucket or not key:
            raise UsageError(f"--to {text}: expected s3://BUCKET/KEY")
        return workspace.StateSettings("s3", None, bucket, key, region, endpoint_url)
    if region or endpoint_url:
        raise UsageError("--region and --endpoint-url go with --to s3://BUCKET/KEY")
    if text.endswith((".yaml", ".yml")):
        if not os.path.exists(text):
            raise UsageError(f"--to {text}: no such workspace file")
        return workspace.load(text).state_settings
    return workspace.StateSettings("local", os.path.abspath(text))


@dataclass(frozen=True)
class Migrated:
    source: str
    destination: str
    serial: int
    lineage: str
    unchanged: bool  # the destination already held this state


def migrate(ws: Workspace, to: StateSettings, lock_timeout_s: float = 0.0,
            on_lock_wait: OnLockWait | None = None) -> Migrated:
    """Copy the workspace's state to another backend, both locked. Refused: nothing to copy, the same
    place, a destination holding another lineage or a newer serial. The source is left as it was."""
    from jsctl.state.factory import backend_for

    source = _store(ws)
    dest = backend_for(to)
    if source.where == dest.where:
        raise UsageError(f"the state is already at {dest.where}")
    with source.locked("state migrate", lock_timeout_s, on_lock_wait), \
            dest.locked("state migrate", lock_timeout_s, on_lock_wait):
        state = source.read()
        if not source.exists_at_read:
            raise StateError(f"no state is stored at {source.where}; nothing to migrate")
        snap = dest.read_versioned()
        if snap.exists:
            there = snap.state
            if there.lineage != state.lineage:
                raise StateError(f"{dest.where} holds another state (lineage {there.lineage}, serial {there.serial}); "
                                 f"this one is lineage {state.lineage}: nothing was migrated",
                                 hint="migrate to an empty place, or remove that state first if it is not needed")
            if there.to_dict() == state.to_dict():
                return Migrated(source.where, dest.where, state.serial, state.lineage, True)
            if there.serial >= state.serial:
                raise StateError(f"{dest.where} holds serial {there.serial} of this state, not older than "
                                 f"serial {state.serial} here: nothing was migrated",
                                 hint="the destination is already ahead; point jsctl.yaml at it")
        dest.write_if(state, snap.version)
    return Migrated(source.where, dest.where, state.serial, state.lineage, False)


# ---- import -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Imported:
    record: StateRecord
    from_file: str | None  # the job file its spec came from (None: recorded with what the engine said)


def import_job(ws: Workspace, address: str, handle_text: str, files: Sequence[str] = (),
               variables: Variables | None = None, lock_timeout_s: float = 0.0,
               on_lock_wait: OnLockWait | None = None) -> Imported:
    """Bring a job submitted by hand under management at `address`: its status read from the engine
    (the client's refresh); its spec, artifact and placement from the job files when one of them plans
    `address`, else a record marked imported with what the engine said."""
    from jsctl.model.state import RecordStatus, StateRecord
    from jsctl.model.status import JobHandle
    from jsctl.providers.registry import Clients

    check_address(address)
    handle = JobHandle.parse(handle_text)
    cluster = ws.cluster(handle.cluster)
    if cluster is None:
        raise UsageError(f"no cluster {handle.cluster!r} in the workspace",
                         hint="clusters: " + ", ".join(c.name for c in ws.clusters))
    if cluster.provider != handle.provider:
        raise UsageError(f"cluster {cluster.name} is a {cluster.provider} cluster, not {handle.provider}",
                         hint=f"the handle is {cluster.provider}://{cluster.name}/ID")
    store = _store(ws)
    with store.locked("import", lock_timeout_s, on_lock_wait):
        state = store.read()
        if address in state.resources:
            raise UsageError(f"{address} is already in state", hint=f"jsctl state rm {address} first")
        for a, r in state.records().items():
            if r.handle == handle:
                raise UsageError(f"{handle} is already in state as {a}")
        live = Clients(ws).get(cluster.name).refresh([handle]).get(handle)
        if live is None or live.phase == "UNKNOWN":
            said = f" ({live.engine_state}: {live.reason})" if live is not None else ""
            raise StateError(f"{cluster.name} does not know the job {handle}{said}; nothing was imported",
                             hint="check the job id (a job that ended long ago may be gone from the engine)")
        now = time.time()
        status = replace(RecordStatus().observed(live), previous_phase=None)
        change = _planned(ws, address, files, variables, state) if files else None
        if change is not None:
            from jsctl.apply import new_record

            record = replace(new_record(change, handle, now), job_id=handle.id, status=status,
                             events=(),).with_event(f"imported {handle} (spec from {change.file})", now)
        else:
            record = StateRecord(
                address=address, name=address.rsplit(".", 1)[-1], generation=state.next_generation(address),
                provider=handle.provider, cluster=cluster.name, job_id=handle.id, handle=handle, status=status,
                created_at=now, updated_at=now,
                extra={"imported": {"time": now, "engine_state": live.engine_state, "nodes": list(live.nodes)}},
            ).with_event(f"imported {handle} (no job file: spec unknown)", now)
        state.put(address, record)
        store.write(state)
    return Imported(record, change.file if change is not None else None)


def _planned(ws: Workspace, address: str, files: Sequence[str], variables: Variables | None, state: State):
    """The plan's create of `address` from these files (no cluster asked), or None."""
    from jsctl.api.plans import plan

    the_plan = plan(list(files), variables, ws, state=state, refresh=False)
    return next((c for c in the_plan.changes if c.address == address and c.spec is not None), None)


def dumps(data: object) -> str:
    return json.dumps(data, indent=2, sort_keys=True)
