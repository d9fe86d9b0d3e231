"""Helpers for the gcp-batch tests: a workspace on examples/gcp/jsctl.yaml (with the golden catalog,
which gives a2-ultragpu-8g the seed's shape), plans of job files on it, and the local Batch stand-in."""
from __future__ import annotations

import slurmkit

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
CATALOG = ROOT / "tests" / "golden" / "gcp" / "catalog.yaml"
sys.path.insert(0, str(ROOT / "tests" / "integration" / "gcp"))

GPU_JOB = """\
version: jetstream.v1
job:
  name: train
compute:
  resources:
    gpu:
      type: a100-80gb
      count: 16
  time_limit: 2h
environment:
  image: us-docker.pkg.dev/p/r/train:1
lifecycle:
  command: [python, train.py]
"""


def inventory(endpoint: str | None = None, project: str = "jsctl-ci", extra: str = "") -> str:
    text = (EXAMPLES / "gcp" / "jsctl.yaml").read_text(encoding="utf-8")
    text = text.replace("version: jetstream.v1\n", f"version: jetstream.v1\ncatalog: {CATALOG}\n", 1)
    text = text.replace("project: jsctl-ci", f"project: {project}").replace("projects/jsctl-ci/", f"projects/{project}/")
    if endpoint:
        text += f"    endpoint_url: {endpoint}\n"
    return text + extra


def plan_changes(tmp: Path, files: dict[str, str], entry: list[str], inventory_text: str | None = None) -> tuple:
    (tmp / "jsctl.yaml").write_text(inventory_text or inventory(), encoding="utf-8")
    return tuple(slurmkit.plan_changes(tmp, files, entry, inventory=str(tmp / "jsctl.yaml")))


def plan_one(tmp: Path, job: str = GPU_JOB, inventory_text: str | None = None):
    (change,) = plan_changes(tmp, {"job.yaml": job}, ["job.yaml"], inventory_text)
    return change
