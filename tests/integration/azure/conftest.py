"""The fake Azure ML service (fakeaml.py), one per test, and a workspace whose cluster `aml` talks to it
(examples/azure/jsctl.yaml with the fake's endpoint and Key Vault)."""
from __future__ import annotations

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from amlkit import EXAMPLES  # noqa: E402
from fakeaml import FakeAml  # noqa: E402


@pytest.fixture
def fake():
    f = FakeAml(queued_s=0.2, run_s=0.6)
    yield f
    f.close()


def inventory(url: str) -> str:
    text = open(os.path.join(EXAMPLES, "azure", "jsctl.yaml"), encoding="utf-8").read()
    assert "key_vault: https://ml-kv.vault.azure.net\n" in text
    return text.replace("key_vault: https://ml-kv.vault.azure.net\n",
                        f"key_vault: {url}/vault\n    endpoint_url: {url}\n")


@pytest.fixture
def ws(fake, tmp_path, monkeypatch):
    (tmp_path / "jsctl.yaml").write_text(inventory(fake.url), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def client(ws):
    from jsctl.config import workspace
    from jsctl.providers import registry

    return registry.get("azure-ml").client(workspace.load(str(ws / "jsctl.yaml")).cluster("aml"), str(ws))
