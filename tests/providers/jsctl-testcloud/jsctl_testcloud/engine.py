"""The service's worker: runs one submitted job (`python -m jsctl_testcloud.engine JOBDIR`), detached.

It reads `submitted.json` (the request as the client sent it), starts one process per node with the
request's environment (plus the secret values it inherited, never written anywhere), records
`status.json` as it goes and writes the job's output to `log.txt`. SIGTERM (cancel) stops the job.
This module imports nothing of jsctl: it is the engine, not the tool.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
PASS_THROUGH = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV")
STATUS, SUBMITTED, LOG = "status.json", "submitted.json", "log.txt"


def write_json(path: str, data: dict) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_json(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(directory: str) -> int:
    job = read_json(os.path.join(directory, SUBMITTED))
    status_path = os.path.join(directory, STATUS)
    status = read_json(status_path) or {}
    if job is None:
        write_json(status_path, {**status, "phase": "FAILED", "state": "INVALID", "reason": "no submitted.json"})
        return 1
    request = job["request"]
    children: list[subprocess.Popen] = []
    stopping = {"why": None}

    def stop(signum, frame):  # cancel: end every node's process group
        stopping["why"] = "cancelled"
        for p in children:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass

    signal.signal(signal.SIGTERM, stop)
    base = {k: os.environ[k] for k in PASS_THROUGH if k in os.environ}
    # the "image": this machine's Python first on PATH (its torchrun, python), as a job image would have
    base["PATH"] = os.path.dirname(sys.executable) + os.pathsep + base.get("PATH", os.defpath)
    secrets = {k: os.environ[k] for k in request.get("secrets") or () if k in os.environ}
    missing = [k for k in request.get("secrets") or () if k not in secrets]
    if missing:
        write_json(status_path, {**status, "phase": "FAILED", "state": "INVALID",
                                 "reason": f"secret values not given: {', '.join(missing)}"})
        return 1
    port = _free_port()
    nodes = int(request.get("nodes") or 1)
    with open(os.path.join(directory, LOG), "ab") as log:
        for index in range(nodes):
            runtime = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "NODE_RANK": str(index),
                       "TESTCLOUD_JOB_ID": os.path.basename(directory), "TESTCLOUD_NODE_INDEX": str(index),
                       "TESTCLOUD_NUM_NODES": str(nodes),
                       "TESTCLOUD_LABELS": json.dumps(request.get("labels") or {}, sort_keys=True)}
            job_env = dict(request["environment"])
            names = {**job_env, **runtime}  # `${NAME}` in a value names a job variable or a run-time one
            env = {**base, **{k: VAR.sub(lambda m: names.get(m.group(1), m.group(0)), v) for k, v in job_env.items()},
                   **runtime, **secrets}
            argv = [VAR.sub(lambda m: env.get(m.group(1), m.group(0)), a) for a in request["command"]]
            try:
                children.append(subprocess.Popen(argv, cwd=request.get("workdir") or None, env=env,
                                                 stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                                 start_new_session=True))
            except OSError as exc:
                stop(None, None)
                write_json(status_path, {**status, "phase": "FAILED", "state": "FAILED", "exit_code": 127,
                                         "reason": f"cannot start {argv[0]!r}: {exc}", "ended_at": time.time()})
                return 1
    status.update(phase="RUNNING", state="RUNNING", started_at=time.time(), engine_pid=os.getpid(),
                  pgids=[p.pid for p in children])
    write_json(status_path, status)
    deadline = time.time() + request["timeout_s"] if request.get("timeout_s") else None
    codes: list[int | None] = [None] * len(children)
    while any(c is None for c in codes):
        for i, p in enumerate(children):
            if codes[i] is None:
                codes[i] = p.poll()
        if deadline and time.time() > deadline and stopping["why"] is None:
            stop(None, None)
            stopping["why"] = "timeout"
        time.sleep(0.05)
    bad = next((c for c in codes if c), 0)
    if stopping["why"] == "cancelled":
        status.update(phase="CANCELLED", state="CANCELLED", reason="cancelled by request")
    elif stopping["why"] == "timeout":
        status.update(phase="FAILED", state="TIMEOUT", reason=f"ran past timeout_s={request['timeout_s']}")
    elif bad:
        status.update(phase="FAILED", state="FAILED", reason=f"a node exited {bad}")
    else:
        status.update(phase="SUCCEEDED", state="SUCCEEDED")
    status.update(exit_code=bad, ended_at=time.time())
    write_json(status_path, status)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
