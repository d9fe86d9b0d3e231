"""The CI Slurm cluster that scripts/slurm-up.sh starts, for the integration and contract tests:
where its slurm.conf is, whether it answers, and waiting for something to happen on it."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Callable

DEFAULT_CONF = Path(os.environ.get("JSCTL_SLURM_BASE", os.environ.get("SLURM_BASE", "/tmp/jsctl-slurm"))) / \
    "etc" / "slurm.conf"


def unreachable() -> str | None:
    """Why the cluster cannot be used, or None (and SLURM_CONF set) when it answers."""
    conf = os.environ.get("SLURM_CONF") or (str(DEFAULT_CONF) if DEFAULT_CONF.exists() else None)
    if shutil.which("sinfo") is None:
        return "Slurm's commands are not installed (run: bash scripts/slurm-up.sh up)"
    if not conf or not os.path.exists(conf):
        return "SLURM_CONF is not set to a slurm.conf (run: bash scripts/slurm-up.sh up)"
    os.environ["SLURM_CONF"] = conf
    try:
        res = subprocess.run(["sinfo", "-h", "-o", "%a"], capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return f"slurmctld of {conf} does not answer"
    if res.returncode != 0:
        return f"slurmctld of {conf} is not reachable: {res.stderr.strip()}"
    return None


def wait_for(check: Callable[[], object], timeout: float = 120, every: float = 0.5, what: str = "condition"):
    """The first true value `check` returns; AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)
