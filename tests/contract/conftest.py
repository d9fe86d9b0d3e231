"""The provider contract suite runs every test once per installed provider that has a harness
(contractkit.HARNESSES): local, Slurm (the CI cluster of scripts/slurm-up.sh; skipped with the reason
when it is not reachable, failed instead with JSCTL_REQUIRE_SLURM=1), Kubernetes (the control plane of
scripts/k8s-up.sh; likewise, with JSCTL_REQUIRE_K8S=1) and the out-of-tree testcloud."""
from __future__ import annotations

import json

import pytest

from contractkit import HARNESSES, PROVIDERS, Harness
from engines import require

ENGINES = {"slurm": "JSCTL_REQUIRE_SLURM", "kubernetes": "JSCTL_REQUIRE_K8S"}  # harness → the CI switch


@pytest.fixture(params=PROVIDERS)
def harness(request, tmp_path, monkeypatch) -> Harness:
    """A workspace in tmp_path with one cluster of the provider; every job submitted from it is
    cancelled afterwards (from state, and the handles a test put in `harness.submitted`)."""
    name = request.param
    if name in ENGINES:  # a real engine: skip without it, or fail where CI requires it
        require(HARNESSES[name].unreachable(), ENGINES[name])
    h = HARNESSES[name](tmp_path)
    if h.runs_no_processes and request.node.module.__name__ == "test_launch_shapes":
        pytest.skip(f"{name}: {h.runs_no_processes}; torchrun's rendezvous across the job's pods cannot happen "
                    "(the pods' launch environment is checked by test_launch_environment_is_complete)")
    h.setup()
    h.submitted = []
    monkeypatch.chdir(tmp_path)
    yield h
    state = tmp_path / ".jsctl" / "state.json"
    handles = list(h.submitted)
    if state.exists():
        handles += [r["handle"] for r in json.loads(state.read_text()).get("resources", {}).values()
                    if r.get("handle")]
    h.cleanup(sorted(set(handles)))
