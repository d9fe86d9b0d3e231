"""The Kubernetes control plane scripts/k8s-up.sh starts (kube-apiserver, controllers, kwok's fake
nodes, JobSet). Without it these tests skip with the reason; with JSCTL_REQUIRE_K8S=1 (CI) they fail
instead. Every test gets a namespace of its own (deleted afterwards)."""
from __future__ import annotations

import secrets

import pytest

from engines import require
from k8sci import kubectl, unreachable
from k8sit import inventory


@pytest.fixture(scope="session")
def k8s() -> str:
    require(unreachable(), "JSCTL_REQUIRE_K8S")
    return "ci"


@pytest.fixture
def namespace(k8s) -> str:
    name = f"jsit-{secrets.token_hex(4)}"
    kubectl("create", "namespace", name, namespace=None)
    yield name
    kubectl("delete", "namespace", name, "--wait=false", check=False, namespace=None)


@pytest.fixture
def ws(namespace, tmp_path, monkeypatch):
    """A workspace in tmp_path whose cluster `ci` (flavor job) puts jobs in this test's namespace."""
    (tmp_path / "jsctl.yaml").write_text(inventory(namespace), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path
