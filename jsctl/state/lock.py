"""The state lock: a lock file created exclusively, with a lease kept alive by a heartbeat.

Whoever waits sees the holder's info (ID, Operation, Who, Version, Created, Path). A holder that
died (its lease expired, or its pid is gone on this host) can be taken over safely.
"""
from __future__ import annotations

import getpass
import json
import os
import socket
import threading
import time
import uuid
from typing import Callable

from jsctl import __version__
from jsctl.errors import StateError, StateLockedError
from jsctl.files import write_json

from jsctl.state.backend import lease_seconds


def _now() -> float:
    return time.time()


def _fmt(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def read_info(lock_path: str) -> dict | None:
    try:
        with open(lock_path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"ID": "?", "Operation": "?", "Who": "?", "Created": "?", "Path": lock_path, "expires": 0}


def alive(info: dict) -> bool:
    """The holder may still be working: its lease has not expired, and (on this host) its pid exists."""
    if info.get("expires", 0) < _now():
        return False
    if info.get("host") == socket.gethostname() and info.get("pid"):
        try:
            os.kill(int(info["pid"]), 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
    return True


def display(info: dict) -> dict:
    shown = {k: info[k] for k in ("ID", "Operation", "Who", "Version", "Created", "Path") if k in info}
    if info.get("expires"):
        left = int(info["expires"] - _now())
        shown["Created"] = f"{shown.get('Created', '?')} (lease expires in {max(left, 0)} s)"
    return shown


class StateLock:
    def __init__(self, lock_path: str, operation: str) -> None:
        self.path = lock_path
        self.operation = operation
        self.id = str(uuid.uuid4())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lease_s = lease_seconds()
        self.took_over: dict | None = None  # the previous holder's info, when an expired lease was taken over

    def info(self) -> dict:
        return display(self._info())

    def _info(self) -> dict:
        return {"ID": self.id, "Operation": self.operation, "Who": f"{getpass.getuser()}@{socket.gethostname()}",
                "Version": __version__, "Created": _fmt(self._created), "Path": self.path,
                "host": socket.gethostname(), "pid": os.getpid(), "expires": _now() + self.lease_s}

    def _create(self) -> bool:
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(self._info(), fh)
            fh.flush()
            os.fsync(fh.fileno())
        return True

    def acquire(self, timeout: float = 0.0, on_wait: Callable[[dict], None] | None = None,
                on_takeover: Callable[[dict], None] | None = None) -> "StateLock":
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        self._created = _now()
        deadline = _now() + timeout
        told = False
        while True:
            if self._create():
                break
            info = read_info(self.path)
            if info is None:
                continue
            if not alive(info):
                stale = f"{self.path}.stale-{uuid.uuid4().hex[:8]}"
                try:
                    os.rename(self.path, stale)  # atomic: only one taker wins
                    os.unlink(stale)
                except FileNotFoundError:
                    continue
                self.took_over = display(info)
                if on_takeover:
                    on_takeover(self.took_over)
                continue
            if _now() >= deadline:
                raise StateLockedError("the state is locked by another operation", display(info),
                                       hint=f"Wait with --lock-timeout 5m, or, if that process is gone, "
                                            f"jsctl force-unlock {info.get('ID')}")
            if on_wait and not told:
                on_wait(display(info))
                told = True
            time.sleep(0.2)
        self._thread = threading.Thread(target=self._heartbeat, daemon=True)
        self._thread.start()
        return self

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.lease_s / 4):
            try:
                info = read_info(self.path)
                if not info or info.get("ID") != self.id:
                    return  # force-unlocked or taken over
                write_json(self.path, self._info(), indent=None)
            except OSError:
                return

    def release(self) -> None:
        self._stop.set()
        info = read_info(self.path)
        if info and info.get("ID") == self.id:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def __enter__(self) -> "StateLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def force_unlock(lock_path: str, lock_id: str) -> dict:
    info = read_info(lock_path)
    if info is None:
        raise StateError("the state is not locked")
    if info.get("ID") != lock_id:
        raise StateError(f"lock ID {lock_id} does not match the current lock {info.get('ID')}",
                         hint="copy the ID exactly from the lock message")
    os.unlink(lock_path)
    return info
