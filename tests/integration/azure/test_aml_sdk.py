"""The Azure ML SDK against the fake service: MLClient can be pointed at a local endpoint (a custom
cloud whose resource_manager is the fake's URL), and what its `jobs.create_or_update` sends for jsctl's
YAML artifact is the job jsctl's client sends itself (jsctl keeps its own calls: see
jsctl/providers/azure_ml/rest.py), but for what the SDK adds or resolves on its own."""
from __future__ import annotations

import time

import pytest

from test_aml_client import planned


def test_mlclient_sends_the_job_jsctl_sends(jsctl, ws, fake):
    pytest.importorskip("azure.ai.ml")
    from azure.ai.ml import MLClient, load_job
    from azure.core.credentials import AccessToken, AccessTokenInfo

    class Token:
        def get_token(self, *scopes, **kw):
            return AccessToken("fake", int(time.time()) + 3600)

        def get_token_info(self, *scopes, **kw):
            return AccessTokenInfo("fake", int(time.time()) + 3600)

    from amlkit import EXAMPLES

    c = planned(jsctl, ws, f"{EXAMPLES}/finetune-llama.yaml")
    (name, text), = c.artifact.files
    (ws / name).write_text(text)
    meta = {"azure_portal": fake.url, "resource_manager": fake.url, "active_directory": fake.url,
            "aml_resource_id": fake.url, "storage_endpoint": "core.windows.net",
            "registry_discovery_endpoint": fake.url}
    ml = MLClient(Token(), "00000000-0000-0000-0000-000000000000", "ml-rg", "ml-ws", cloud="JsctlFakeAml",
                  cloud_metadata=meta)
    ml.jobs.create_or_update(load_job(source=str(ws / name)))
    env_put, job_put = [r for r in fake.requests if r["method"] == "PUT"]
    assert env_put["body"]["properties"]["image"] == c.artifact.request.environment["properties"]["image"]
    sdk = job_put["body"]["properties"]
    ours = c.artifact.request.body["properties"]
    assert job_put["path"].endswith(f"/workspaces/ml-ws/jobs/{c.job_id}")
    assert sdk["computeId"].endswith("/computes/a100-ib-cluster")
    # the SDK adds its defaults and names its own environment version (a hash of its own)
    assert set(sdk) - set(ours) <= {"isArchived", "properties", "services"}, set(sdk) - set(ours)
    same = ("jobType", "displayName", "experimentName", "description", "tags", "command", "resources",
            "distribution", "inputs", "outputs", "environmentVariables")
    assert {k: sdk.get(k) for k in same} == {k: ours.get(k) for k in same}
