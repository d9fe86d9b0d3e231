"""Helpers for the Slurm integration tests (a module name of its own: conftest.py is ambiguous)."""
from __future__ import annotations

from pathlib import Path

from slurmci import wait_for  # noqa: F401  (the tests import it from here)

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "slurm"
QUICKSTART = ROOT / "examples" / "quickstart" / "train.py"


def inventory(shared: Path, partitions: bool = True) -> str:
    text = (EXAMPLES / "jsctl.yaml").read_text().replace("/tmp/jsctl-slurm/shared", str(shared))
    if not partitions:
        text = text[:text.index("    partitions:")]
    return text
