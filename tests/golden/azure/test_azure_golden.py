"""Golden Azure ML job: the seed's finetune-llama.yaml on Standard_ND96amsr_A100_v4 (4 nodes × 8
A100-80GB) of the inventory beside this file: the CLI v2 YAML (checked with azure.ai.ml.load_job), the
typed request, and the REST requests the client sends to the (fake) service for it, in order.

Rewrite with `pytest tests/golden --update-golden` and review the diff."""
from __future__ import annotations

import json
import os
import sys

import pytest

import goldens
from goldens import describe, planned

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "..", "examples")
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration", "azure"))


def change(tmp_path, endpoint: str | None = None):
    text = open(os.path.join(HERE, "jsctl.yaml"), encoding="utf-8").read()
    if endpoint:
        text = text.replace("    experiment: jsctl\n", f"    experiment: jsctl\n    endpoint_url: {endpoint}\n")
    (tmp_path / "jsctl.yaml").write_text(text)
    (tmp_path / "catalog.yaml").write_text(open(os.path.join(HERE, "catalog.yaml"), encoding="utf-8").read())
    (c,) = planned(str(tmp_path / "jsctl.yaml"), os.path.join(EXAMPLES, "finetune-llama.yaml"))
    return c


def test_finetune_llama(tmp_path, update_golden):
    c = change(tmp_path)
    p = c.placement
    assert (p.pool, p.nodes, p.gpus_per_node, p.gpu_type) == ("Standard_ND96amsr_A100_v4", 4, 8, "a100-80gb")
    ((name, text),) = c.artifact.files
    assert name == f"{c.job_id}.yaml"
    goldens.check(HERE, "finetune-llama.yaml", text, update_golden)
    goldens.check(HERE, "finetune-llama.json", describe(c), update_golden)


def test_finetune_llama_yaml_loads_with_the_sdk(tmp_path):
    """azure.ai.ml.load_job reads the artifact, and the SDK's REST form of it agrees with the body jsctl
    sends (everything but the ids the SDK resolves when it creates the job: compute, environment)."""
    pytest.importorskip("azure.ai.ml")
    from azure.ai.ml import load_job

    c = change(tmp_path)
    ((name, text),) = c.artifact.files
    (tmp_path / name).write_text(text)
    sdk = dict(load_job(source=str(tmp_path / name))._to_job()._to_rest_object()["properties"])
    ours = dict(c.artifact.request.body["properties"])
    for key in ("environmentId", "computeId"):
        sdk.pop(key), ours.pop(key)
    assert ours == {k: _plain(sdk.get(k)) for k in ours}
    assert set(sdk) - set(ours) <= {"isArchived", "properties"}, set(sdk) - set(ours)  # the SDK's defaults
    assert sdk["resources"]["instanceCount"] == 4


def _plain(value):
    """The SDK's REST models (mappings) as plain JSON values."""
    from collections.abc import Mapping

    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def test_finetune_llama_requests(tmp_path, update_golden):
    """The requests the client sends for it: anonymous environment, job; then get, list, cancel."""
    from fakeaml import FakeAml

    from jsctl.config import workspace
    from jsctl.providers import registry

    fake = FakeAml(queued_s=5.0)
    try:
        c = change(tmp_path, fake.url)
        client = registry.get("azure-ml").client(workspace.load(str(tmp_path / "jsctl.yaml")).cluster("aml"),
                                                 str(tmp_path))
        handle = client.submit(c.artifact, {}, {})
        assert client.refresh([handle])[handle].phase == "PENDING"
        assert client.adopt(c.artifact) == handle
        client.cancel(handle)
        sent = [{"method": r["method"], "path": r["path"], "query": r["query"], "body": r["body"]}
                for r in fake.requests]
    finally:
        fake.close()
    goldens.check(HERE, "finetune-llama.requests.json", json.dumps(sent, indent=2, ensure_ascii=False) + "\n",
                  update_golden)
