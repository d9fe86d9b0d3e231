"""The local state backend: a JSON file written atomically, with a backup of the previous version.

Its version is the SHA-256 of the file's bytes. The conditional write compares it, then renames the
new file into place: two steps, so it is atomic only among writers that hold the lock (every jsctl
command that writes does); the lock is a file created exclusively (lock.py).

Apply records each job in `<state>.journal` (journal.py), one fsynced line, instead of rewriting
the file per job; a read folds the journal in, and the next full write replaces both.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from typing import Iterable

from jsctl.errors import StateError
from jsctl.files import write_atomic
from jsctl.model.state import State
from jsctl.state.backend import OnLock, Snapshot, StateBackend, StateConflictError, dump_state, parse_state
from jsctl.state.journal import Journal, entry, fold, read_journal
from jsctl.state.lock import StateLock, force_unlock, read_info


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class LocalBackend(StateBackend):
    kind = "local"

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.backup = path + ".backup"
        self.lock_path = path + ".lock"
        self.journal_path = path + ".journal"
        self._journal: Journal | None = None

    @property
    def where(self) -> str:
        return self.path

    def _bytes(self) -> bytes | None:
        try:
            with open(self.path, "rb") as fh:
                return fh.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StateError(f"cannot read state file {self.path}: {exc.strerror}") from exc

    def read_versioned(self) -> Snapshot:
        data = self._bytes()
        if data is None:
            return Snapshot(State(), None)
        hint = (f"the previous version is in {self.backup}; inspect both, then copy the backup over the "
                f"state file if it is right") if os.path.exists(self.backup) else "no backup exists"
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = "\x00"
        state = parse_state(text, f"file {self.path}", hint)
        version = _digest(data)
        return Snapshot(fold(state, read_journal(self.journal_path, version, state.lineage)), version)

    def write_if(self, state: State, version: str | None) -> str:
        current = self._bytes()
        now = _digest(current) if current is not None else None
        if now != version:
            raise StateConflictError(f"state file {self.path} changed since it was read; nothing was written",
                                     hint="run the command again")
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        if current is not None:
            tmp_backup = self.backup + ".tmp"
            shutil.copyfile(self.path, tmp_backup)
            os.replace(tmp_backup, self.backup)
        text = dump_state(state)
        write_atomic(self.path, text)
        self._drop_journal()  # after the rename: a crash between leaves a journal of a past version
        return _digest(text.encode("utf-8"))

    def record(self, state: State, addresses: Iterable[str]) -> bool:
        if self._version is None:  # no state file yet: the journal needs one to apply to
            self.write(state)
            return True
        if self._journal is None or self._journal.version != self._version:
            self._drop_journal(keep_file=True)
            self._journal = Journal(self.journal_path, self._version, state.lineage)
        self._journal.append([entry(state, a) for a in addresses])
        return True

    def _drop_journal(self, keep_file: bool = False) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        if not keep_file:
            try:
                os.unlink(self.journal_path)
            except FileNotFoundError:
                pass

    def lock(self, operation: str, timeout: float = 0.0, on_wait: OnLock | None = None,
             on_takeover: OnLock | None = None) -> StateLock:
        return StateLock(self.lock_path, operation).acquire(timeout, on_wait, on_takeover)

    def lock_info(self) -> dict | None:
        return read_info(self.lock_path)

    def force_unlock(self, lock_id: str) -> dict:
        return force_unlock(self.lock_path, lock_id)
