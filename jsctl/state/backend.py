"""The state backend interface: read with a version, write conditional on it, lock with a lease.

Every backend (local file, S3) passes the same conformance suite (tests/integration/state/).

`read()` remembers the version it read; `write(state)` is conditional on it. When the stored state
changed meanwhile (someone wrote without the lock, or after taking over a lease this holder let
expire), `write` re-reads the newer state and re-applies this writer's own changes to it, address by
address (`rebase`): nothing either writer recorded is lost. When both changed the same address
differently it writes nothing and raises StateConflictError.
"""
from __future__ import annotations

import copy
import json
import os
import sys
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from jsctl.errors import StateError
from jsctl.model import gcpause
from jsctl.model.state import State

LEASE_ENV = "JSCTL_LOCK_LEASE"  # seconds a lock's lease lasts without a heartbeat (default 60)
DEFAULT_LEASE_S = 60.0
RETRIES = 5

OnLock = Callable[[dict], None]


class StateConflictError(StateError):
    """A conditional write lost: the stored state is not the version this writer read."""


def lease_seconds() -> float:
    text = os.environ.get(LEASE_ENV, "").strip()
    if not text:
        return DEFAULT_LEASE_S
    try:
        value = float(text)
    except ValueError:
        raise StateError(f"{LEASE_ENV} must be a number of seconds, got {text!r}") from None
    if value <= 0:
        raise StateError(f"{LEASE_ENV} must be more than 0 seconds, got {text!r}")
    return value


def say_takeover(info: dict) -> None:
    """The default notice when an expired lease is taken over: name the previous holder."""
    created = str(info.get("Created", "?")).split(" (lease", 1)[0]
    sys.stderr.write(f"Took over the state lock {info.get('ID')} of {info.get('Who')} ({info.get('Operation')}, "
                     f"created {created}): its lease expired or its process is gone.\n")


@dataclass(frozen=True)
class Snapshot:
    """A state as read, with the backend's version of it (None: no state is stored)."""

    state: State
    version: str | None

    @property
    def exists(self) -> bool:
        return self.version is not None


def parse_state(text: str | bytes, where: str, hint: str | None = None) -> State:
    """A state document from its text; StateError naming `where` when it is truncated or not a state."""
    try:
        with gcpause.paused():  # a large state is millions of objects, none in a cycle
            data = json.loads(text)
    except ValueError as exc:
        msg = getattr(exc, "msg", str(exc))
        raise StateError(f"state {where} is corrupt or truncated ({msg}); nothing was changed",
                         hint=hint or "no backup exists") from exc
    return State.from_dict(data, where)


def dump_state(state: State) -> str:
    return json.dumps(state.to_dict(), indent=2, sort_keys=True) + "\n"


def _changed(base: dict, ours: dict) -> dict[str, Any]:
    """Keys whose value differs between base and ours (None: removed by ours)."""
    return {k: ours.get(k) for k in set(base) | set(ours) if base.get(k) != ours.get(k)}


def rebase(base: State, ours: State, theirs: State) -> State:
    """`theirs` with the changes `ours` made to `base`, address by address. StateConflictError when
    both changed one address differently, or the lineages differ."""
    if theirs.lineage != ours.lineage:
        raise StateConflictError(f"the stored state is another lineage ({theirs.lineage}) than the one this "
                                 f"command read ({ours.lineage}); nothing was written",
                                 hint="someone replaced the state (jsctl state push --force?); run the command again")
    merged = theirs.copy()
    content = False
    for part in ("resources", "generations", "not_submitted"):
        mine = _changed(getattr(base, part), getattr(ours, part))
        other = _changed(getattr(base, part), getattr(theirs, part))
        target = getattr(merged, part)
        for key, value in mine.items():
            if key in other and other[key] != value:
                raise StateConflictError(
                    f"{key} was changed by another writer while this command changed it too; nothing was written",
                    hint="run jsctl state pull to see the stored state, then run the command again")
            if value is None:
                target.pop(key, None)
            else:
                target[key] = copy.deepcopy(value)
            content = content or part != "not_submitted"
    if content or ours.serial != base.serial:
        merged.serial = max(theirs.serial, ours.serial) + 1
    return merged


class StateBackend(ABC):
    """Where the state lives. Subclasses implement the five primitives; read/write/locked build on them."""

    kind = "?"

    def __init__(self) -> None:
        self._version: str | None = None
        self._base: State | None = None  # what the caller last read or wrote
        self._stored: State | None = None  # what is stored at _version, when it is not _base (after a rebase)
        self.exists_at_read = False

    # ---- primitives ----------------------------------------------------------------------------------
    @property
    @abstractmethod
    def where(self) -> str:
        """The state's location, for messages (a path, s3://bucket/key)."""

    @abstractmethod
    def read_versioned(self) -> Snapshot:
        """The stored state and its version; an empty State and None when nothing is stored."""

    @abstractmethod
    def write_if(self, state: State, version: str | None) -> str:
        """Store `state` only if the stored version is `version` (None: only if nothing is stored);
        the new version. StateConflictError otherwise, and nothing is written."""

    @abstractmethod
    def lock(self, operation: str, timeout: float = 0.0, on_wait: OnLock | None = None,
             on_takeover: OnLock | None = None) -> Any:
        """Acquire the lock (an object with `.id`, `.info()` and `.release()`), waiting up to `timeout`
        seconds; StateLockedError naming the holder after that. An expired lease is taken over."""

    @abstractmethod
    def lock_info(self) -> dict | None:
        """The current lock's info (ID, Operation, Who, Version, Created, Path), None when unlocked."""

    @abstractmethod
    def force_unlock(self, lock_id: str) -> dict:
        """Remove the lock `lock_id` (only that one); the holder's info."""

    # ---- built on them -------------------------------------------------------------------------------
    def read(self) -> State:
        snap = self.read_versioned()
        self._version = snap.version
        self._base = snap.state.copy()
        self._stored = None
        self.exists_at_read = snap.exists
        return snap.state

    def exists(self) -> bool:
        return self.read_versioned().exists

    def write(self, state: State) -> None:
        """Store `state`, conditional on the version last read or written here; on a lost race, re-read
        and re-apply this writer's changes (see the module's docstring)."""
        if self._base is None:
            self.read()
        base = self._base if self._base is not None else State(lineage=state.lineage)
        target = state if self._stored is None else rebase(base, state, self._stored)
        for _ in range(RETRIES):
            try:
                version = self.write_if(target, self._version)
            except StateConflictError:
                snap = self.read_versioned()
                self._version = snap.version
                self._stored = snap.state if snap.exists else None
                target = state if self._stored is None else rebase(base, state, self._stored)
                continue
            self._version = version
            self._stored = None if target is state else target.copy()
            self._base = state.copy()
            self.exists_at_read = True
            return
        raise StateConflictError(f"state {self.where} kept changing while this command wrote it; nothing was written",
                                 hint="run the command again")

    # ---- recording as apply goes (journal.py) ----------------------------------------------------------
    def record(self, state: State, addresses: Iterable[str]) -> bool:
        """Make what `state` now holds at `addresses` durable, as cheaply as the backend can; the caller
        holds the lock. True when it is durable on return, False when buffered (flush() writes it).
        This default writes the whole state."""
        self.write(state)
        return True

    def flush(self, state: State) -> None:
        """Write the whole state, folding in everything recorded."""
        self.write(state)

    @contextmanager
    def locked(self, operation: str, timeout: float = 0.0, on_wait: OnLock | None = None,
               on_takeover: OnLock | None = say_takeover) -> Iterator[Any]:
        held = self.lock(operation, timeout, on_wait, on_takeover)
        try:
            yield held
        finally:
            held.release()
