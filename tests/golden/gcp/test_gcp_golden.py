"""Golden requests: the seed's finetune-llama.yaml on 4 × a2-ultragpu-8g (8 × A100-80GB each) of the
inventory beside this file: the Job body file, the plan's view of it, and the requests the official
client sends for it (method, path, query, body as received by the local stand-in, enums as numbers).

Rewrite with `pytest tests/golden --update-golden` and review the diff."""
from __future__ import annotations

import json
import os
import sys

import goldens
from goldens import describe, planned

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "gcp"))


def change(tmp_path, endpoint: str | None = None):
    text = open(os.path.join(HERE, "jsctl.yaml"), encoding="utf-8").read().replace("catalog: catalog.yaml",
                                                                                  f"catalog: {HERE}/catalog.yaml")
    if endpoint:
        text += f"    endpoint_url: {endpoint}\n"
    (tmp_path / "jsctl.yaml").write_text(text)
    (c,) = planned(str(tmp_path / "jsctl.yaml"), os.path.join(ROOT, "examples", "finetune-llama.yaml"))
    return c


def test_finetune_llama_body(tmp_path, update_golden):
    c = change(tmp_path)
    p = c.placement
    assert (p.pool, p.nodes, p.gpus_per_node, p.gpu_type) == ("a2-ultragpu-8g", 4, 8, "a100-80gb")
    ((name, text),) = c.artifact.files
    assert name == f"{c.job_id}.json" and json.loads(text) == c.artifact.request.to_dict()["job"]
    goldens.check(HERE, "finetune-llama.job.json", text, update_golden)
    goldens.check(HERE, "finetune-llama.plan.json", describe(c), update_golden)


def test_finetune_llama_requests(tmp_path, update_golden):
    """What goes over the wire when the planned request is submitted, then cancelled."""
    import fakebatch
    from jsctl.model.cluster import Cluster
    from jsctl.providers import registry

    fb = fakebatch.FakeBatch().start()
    try:
        c = change(tmp_path, fb.url)
        settings = c.artifact.request.to_dict()
        client = registry.get("gcp-batch").client(Cluster("gcp", "gcp-batch", {
            "project": "jsctl-ci", "region": "us-central1", "endpoint_url": fb.url}), str(tmp_path))
        assert settings["endpoint_url"] == fb.url
        handle = client.submit(c.artifact, {}, {})
        client.cancel(handle)
        sent = [{"method": r["method"], "path": r["path"], "query": r["query"], "body": r["body"]} for r in fb.requests]
        from google.cloud import batch_v1

        wire, planned = (batch_v1.Job.from_json(json.dumps(b)) for b in (sent[0]["body"], c.artifact.request.job))
        assert wire == planned  # the body as planned (the wire form writes enums as numbers)
    finally:
        fb.stop()
    goldens.check(HERE, "finetune-llama.requests.json", json.dumps(sent, indent=2, sort_keys=True) + "\n",
                  update_golden)
