"""The on-disk layout of a local run, shared by the client and the supervisor."""
from __future__ import annotations

import json
import os
from typing import Any

from jsctl import files

REQUEST = "run.json"  # the rendered artifact (no secrets)
STATUS = "status.json"  # written only by the supervisor (and by cancel when the supervisor is gone)
LOG = "job.log"  # stdout+stderr of hooks and the command, with [jsctl] markers
SUPERVISOR_LOG = "supervisor.log"
PID = "supervisor.pid"
CANCEL = "cancel"  # presence asks the supervisor to stop
MARKER = "JSCTL_LOCAL_RUN"  # in every process of a run: its run directory (see run_marker)
SCALE = "scale.json"  # {"workers": N}: restart on this many workers after the next checkpoint
STRATEGY = "strategy.json"  # {"strategy": {...}}: restart with this JETSTREAM_STRATEGY after the next checkpoint
PAUSE = "pause"  # presence: after the next checkpoint, stop the workers and wait (PAUSED) until it is removed


def run_dir(runs_root: str, job_id: str) -> str:
    return os.path.join(runs_root, job_id)


def read_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (FileNotFoundError, ValueError):
        return None


def write_json(path: str, data: dict[str, Any]) -> None:
    files.write_json(path, data)


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not alive
        with open(f"/proc/{int(pid)}/stat", encoding="ascii") as fh:
            return fh.read().split(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return True


def run_marker(directory: str) -> tuple[str, str]:
    """The variable every process of a run carries: its run directory, unique on this machine (a job
    id is not: `job.x` has the same id in every workspace)."""
    return MARKER, os.path.realpath(directory)


def job_processes(directory: str) -> list[int]:
    """Every process of the run in `directory`, found by its marker in their environment: launchers
    such as torchrun start workers in sessions of their own, so a process group does not hold them all."""
    marker = "=".join(run_marker(directory)).encode()
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if marker in fh.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def kill_all(directory: str, sig: int) -> None:
    for pid in job_processes(directory):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
