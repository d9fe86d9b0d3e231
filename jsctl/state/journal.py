"""Recording as apply goes, without rewriting the whole state per job: journal entries and their fold.

An entry says what the state holds at one address after a change (its resource, its not-submitted
note, its generation) and the serial after it. Folding sets those values, so it is idempotent:
folding an entry twice, or one the state already holds, changes nothing.

The local backend appends entries to `<state>.journal`, one fsynced JSON line each, after a header
naming the version (SHA-256) of the state file they apply to. A read folds the journal when its
header names the stored version; a full write replaces the state file and then deletes the journal.
A crash between the two leaves a journal whose base is not the stored version any more: it is
ignored, as what it holds is already in the state. A line cut by a crash is skipped (its job was
never reported as recorded; the next apply adopts it, as after any lost state write).
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterable

from jsctl.model.state import State

HEADER = "jsctl-journal"


def entry(state: State, address: str) -> dict[str, Any]:
    """What `state` holds at `address` now, as a journal entry."""
    return {"address": address, "resource": state.resources.get(address),
            "not_submitted": state.not_submitted.get(address), "generation": state.generations.get(address),
            "serial": state.serial}


def fold(state: State, entries: Iterable[dict[str, Any]]) -> State:
    """`state` with `entries` applied in order (in place; returned)."""
    for e in entries:
        address = e.get("address")
        if not isinstance(address, str):
            continue
        for part, key in ((state.resources, "resource"), (state.not_submitted, "not_submitted")):
            value = e.get(key)
            if isinstance(value, dict):
                part[address] = value
            else:
                part.pop(address, None)
        if isinstance(e.get("generation"), int):
            state.generations[address] = max(e["generation"], int(state.generations.get(address, 0)))
        if isinstance(e.get("serial"), int):
            state.serial = max(state.serial, e["serial"])
    return state


def read_journal(path: str, version: str | None, lineage: str) -> list[dict[str, Any]]:
    """The entries of the journal at `path` that apply to the state at `version` (none when the
    journal is missing, or was written against another version or lineage)."""
    try:
        with open(path, "rb") as fh:
            lines = fh.read().split(b"\n")
    except FileNotFoundError:
        return []
    entries = []
    for n, line in enumerate(lines):
        try:
            item = json.loads(line)
        except ValueError:
            if n == 0:
                return []
            continue  # cut by a crash
        if n == 0:
            if not (isinstance(item, dict) and item.get(HEADER) == 1 and item.get("base") == version
                    and item.get("lineage") == lineage):
                return []
        elif isinstance(item, dict):
            entries.append(item)
    return entries


class Journal:
    """An open journal file: appended to, one fsynced line per entry."""

    def __init__(self, path: str, version: str, lineage: str) -> None:
        self.path, self.version = path, version
        header = {HEADER: 1, "base": version, "lineage": lineage}
        keep = _header(path) == header
        self._fh = open(path, "ab" if keep else "wb")
        if not keep:
            self._write(header)
            _sync_directory(path)
        elif self._fh.tell() and not _ends_with_newline(path):
            self._fh.write(b"\n")  # a line cut by a crash stays alone on its line

    def _write(self, item: dict[str, Any]) -> None:
        self._fh.write(json.dumps(item, separators=(",", ":")).encode("utf-8") + b"\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def append(self, entries: Iterable[dict[str, Any]]) -> None:
        for e in entries:
            self._fh.write(json.dumps(e, separators=(",", ":")).encode("utf-8") + b"\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()


def _header(path: str) -> dict | None:
    try:
        with open(path, "rb") as fh:
            item = json.loads(fh.readline())
    except (FileNotFoundError, ValueError):
        return None
    return item if isinstance(item, dict) else None


def _ends_with_newline(path: str) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def _sync_directory(path: str) -> None:
    fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
