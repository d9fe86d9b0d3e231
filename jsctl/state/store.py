"""The local state backend: a JSON file written atomically, with a backup of the previous version."""
from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from typing import Callable, Iterator

from jsctl.errors import StateError
from jsctl.files import write_json
from jsctl.model.state import State
from jsctl.state.lock import StateLock


class StateStore:
    def __init__(self, path: str) -> None:
        self.path = path
        self.backup = path + ".backup"
        self.lock_path = path + ".lock"

    def read(self) -> State:
        try:
            with open(self.path, encoding="utf-8") as fh:
                text = fh.read()
        except FileNotFoundError:
            return State()
        except OSError as exc:
            raise StateError(f"cannot read state file {self.path}: {exc.strerror}") from exc
        try:
            data = json.loads(text)
        except ValueError as exc:
            hint = (f"the previous version is in {self.backup}; inspect both, then copy the backup over the "
                    f"state file if it is right") if os.path.exists(self.backup) else "no backup exists"
            raise StateError(f"state file {self.path} is corrupt or truncated ({exc.msg} at line {exc.lineno}); "
                             "nothing was changed", hint=hint) from exc
        return State.from_dict(data, self.path)

    def write(self, state: State) -> None:
        directory = os.path.dirname(self.path) or "."
        os.makedirs(directory, exist_ok=True)
        if os.path.exists(self.path):
            tmp_backup = self.backup + ".tmp"
            shutil.copyfile(self.path, tmp_backup)
            os.replace(tmp_backup, self.backup)
        write_json(self.path, state.to_dict())

    @contextmanager
    def locked(self, operation: str, timeout: float = 0.0,
               on_wait: Callable[[dict], None] | None = None) -> Iterator[StateLock]:
        lock = StateLock(self.lock_path, operation).acquire(timeout, on_wait)
        try:
            yield lock
        finally:
            lock.release()
