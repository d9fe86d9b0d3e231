"""Helpers for the Slurm integration tests (a module name of its own: conftest.py is ambiguous)."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "slurm"
QUICKSTART = ROOT / "examples" / "quickstart" / "train.py"
DEFAULT_CONF = Path(os.environ.get("JSCTL_SLURM_BASE", os.environ.get("SLURM_BASE", "/tmp/jsctl-slurm"))) / \
    "etc" / "slurm.conf"


def inventory(shared: Path, partitions: bool = True) -> str:
    text = (EXAMPLES / "jsctl.yaml").read_text().replace("/tmp/jsctl-slurm/shared", str(shared))
    if not partitions:
        text = text[:text.index("    partitions:")]
    return text


def wait_for(check: Callable[[], object], timeout: float = 120, every: float = 0.5, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)
