"""The azure-ml provider's pure half: settings, datastore URIs, validation, the rendered job (spot,
secrets, determinism), and that planning imports no Azure SDK."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import jsonschema
import pytest

from goldens import planned
from jsctl.model.cluster import Cluster
from jsctl.providers import registry
from jsctl.providers.azure_ml.request import AzureMlRequest
from jsctl.providers.azure_ml.settings import SCHEMA, AzureMlSettings

BASE = {"subscription_id": "s", "resource_group": "rg", "workspace": "ws",
        "compute": {"Standard_NC24ads_A100_v4": "single", "Standard_ND96amsr_A100_v4": "ib"},
        "datastores": [{"prefix": "/lustre", "datastore": "lustre"},
                       {"prefix": "/lustre/models", "datastore": "models", "path": "hf"}]}


def inventory(**extra) -> str:
    import json

    settings = {**BASE, **extra}
    return "version: jetstream.v1\nclusters:\n  - " + json.dumps({"name": "aml", "provider": "azure-ml", **settings})


def plan_one(tmp_path, job: str, **extra):
    (tmp_path / "jsctl.yaml").write_text(inventory(**extra))
    (tmp_path / "job.yaml").write_text(textwrap.dedent(job))
    (c,) = planned(str(tmp_path / "jsctl.yaml"), str(tmp_path / "job.yaml"))
    return c


JOB = """\
version: jetstream.v1
job:
  name: t
compute:
  resources:
    gpu: {type: a100-80gb, count: 1}
  time_limit: 90m
environment:
  image: python:3.11
lifecycle:
  command: [python, train.py]
"""


def test_settings_schema():
    jsonschema.validate(BASE, SCHEMA)
    for bad in ({**BASE, "workspaces": "x"}, {k: v for k, v in BASE.items() if k != "workspace"},
                {**BASE, "key_vault": "ml-kv"}, {**BASE, "compute": {}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, SCHEMA)


def test_datastore_uris_longest_prefix():
    s = AzureMlSettings.of(Cluster("aml", "azure-ml", BASE))
    assert s.datastore_uri("/lustre/data/x") == "azureml://datastores/lustre/paths/data/x"
    assert s.datastore_uri("/lustre/models/llama") == "azureml://datastores/models/paths/hf/llama"
    assert s.datastore_uri("/lustrex/a") is None and s.datastore_uri("/scratch") is None
    assert s.datastore_uri("azureml://datastores/d/paths/p") == "azureml://datastores/d/paths/p"


def test_render_shape_and_limits(tmp_path):
    c = plan_one(tmp_path, JOB)
    req = c.artifact.request
    assert isinstance(req, AzureMlRequest) and AzureMlRequest.from_dict(req.to_dict()) == req
    props = req.body["properties"]
    assert props["computeId"] == "/subscriptions/s/resourceGroups/rg/providers/Microsoft.MachineLearningServices/" \
                                 "workspaces/ws/computes/single"
    assert props["limits"] == {"jobLimitsType": "Command", "timeout": "PT5400S"}
    assert props["distribution"] == {"distributionType": "PyTorch", "processCountPerInstance": 1}
    assert props["tags"]["jsctl.job-id"] == c.job_id and props["tags"]["jsctl.address"] == "job.t"
    assert "queueSettings" not in props
    assert props["command"].rstrip().endswith("exec python train.py")
    assert req.endpoint_url is None and req.logs_endpoint == "https://eastus.api.azureml.ms"
    again = plan_one(tmp_path, JOB)
    assert again.artifact.digest == c.artifact.digest


def test_spot(tmp_path):
    """Spot capacity: queue_settings job_tier Spot, or the type's low-priority compute (spot_compute)."""
    (tmp_path / "catalog.yaml").write_text("instances:\n  - {cloud: azure, name: Standard_NC24ads_A100_v4, "
                                           "spot: 1.1, source: a test, date: 2026-12-01}\n")
    job = JOB.replace("  time_limit: 90m\n", "  time_limit: 90m\n  capacity: spot\n")
    for extra, compute, tier in (({}, "single", {"jobTier": "Spot"}),
                                 ({"spot_compute": {"Standard_NC24ads_A100_v4": "lowpri"}}, "lowpri", None)):
        text = inventory(spot=True, **extra).replace("clusters:", "catalog: catalog.yaml\nclusters:")
        (tmp_path / "jsctl.yaml").write_text(text)
        (tmp_path / "job.yaml").write_text(job)
        (c,) = planned_with_catalog(str(tmp_path / "jsctl.yaml"), str(tmp_path / "job.yaml"))
        props = c.artifact.request.body["properties"]
        assert c.placement.capacity == "spot" and props["computeId"].endswith(f"/computes/{compute}")
        assert props.get("queueSettings") == tier


def planned_with_catalog(workspace_file: str, job_file: str) -> tuple:
    from dataclasses import replace

    from jsctl.config import workspace
    from jsctl.config.variables import Variables
    from jsctl.model.state import State
    from jsctl.plan import catalog
    from jsctl.plan.planner import PlanInputs, make_plan
    from jsctl.plan.resolve import load_sources

    sources, diags = load_sources([job_file], Variables({}))
    assert not diags, diags
    ws = workspace.load(workspace_file)
    inputs = PlanInputs(sources, State(), ws, {}, {}, (), False, False, (job_file,))
    return make_plan(replace(inputs, catalog=catalog.load(ws.catalog))).changes


def test_secrets_render_only_key_vault_urls(tmp_path):
    job = JOB.replace("  image: python:3.11\n", "  image: python:3.11\n  secrets: [HF_TOKEN]\n")
    c = plan_one(tmp_path, job, key_vault="https://kv.vault.azure.net/")
    req = c.artifact.request
    url = f"https://kv.vault.azure.net/secrets/jsctl-{c.job_id}-HF-TOKEN"
    assert dict(req.secrets) == {"HF_TOKEN": url} and c.artifact.secrets == ("HF_TOKEN",)
    script = req.body["properties"]["command"]
    assert f"HF_TOKEN=\"$(jsctl_secret {url})\"" in script and "export HF_TOKEN" in script


@pytest.mark.parametrize("edit, settings, code", [
    ({"image": None}, {}, "AML03"),
    ({"secrets": ("HF_TOKEN",)}, {}, "AML05"),
    ({"system_packages": ("vim",)}, {}, "AML04"),
    ({"env_vars": (("A", "${{inputs.x}}"),)}, {}, "AML08"),
    ({}, {"compute": {"Standard_ND96amsr_A100_v4": "ib"}}, "AML02"),
])
def test_validate(tmp_path, edit, settings, code):
    from dataclasses import replace

    from jsctl.config.spec import build
    from jsctl.model.job import JobContext

    c = plan_one(tmp_path, JOB)
    spec = build(c.spec, str(tmp_path / "job.yaml"))
    spec = replace(spec, environment=replace(spec.environment, **edit))
    ctx = JobContext(c.address, c.job_id, c.generation, spec, c.placement, (), {}, str(tmp_path),
                     Cluster("aml", "azure-ml", {**BASE, **settings}), registry.get("azure-ml").runtime_names())
    found = [d.code for d in registry.get("azure-ml").validate(ctx, None)]
    assert code in found, found


def test_planning_imports_no_azure_sdk(tmp_path):
    """--help and plans (local, and azure-ml itself) import no Azure package: azure.ai.ml costs 1.7 s; the
    client imports azure.core at its first call, and --check-remote azure.ai.ml."""
    (tmp_path / "jsctl.yaml").write_text(inventory())
    (tmp_path / "job.yaml").write_text(JOB)
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "jsctl.yaml").write_text("version: jetstream.v1\nclusters:\n  - {name: l, provider: local}\n")
    code = textwrap.dedent(f"""
        import sys
        from click.testing import CliRunner
        from jsctl.cli import cli
        r = CliRunner()
        assert r.invoke(cli, ["--help"]).exit_code == 0
        res = r.invoke(cli, ["plan", "-f", {str(tmp_path / "job.yaml")!r}, "--workspace", {str(tmp_path / "jsctl.yaml")!r}])
        assert res.exit_code in (0, 2), res.output
        res = r.invoke(cli, ["plan", "-f", {str(tmp_path / "job.yaml")!r}, "--workspace", {str(tmp_path / "local" / "jsctl.yaml")!r}])
        assert res.exit_code in (0, 1, 2), res.output
        heavy = sorted(m for m in sys.modules if m == "azure" or m.startswith("azure."))
        assert not heavy, heavy
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def test_offers_are_the_types_with_a_compute_cluster():
    from jsctl.plan.catalog import builtin

    provider = registry.get("azure-ml")
    cluster = Cluster("aml", "azure-ml", {**BASE, "compute": {"Standard_ND96amsr_A100_v4": "ib"},
                                          "instance_types": ["Standard_ND96amsr_A100_v4", "Standard_NC24ads_A100_v4"]})
    assert [o.pool for o in provider.offers(cluster, None, builtin())] == ["Standard_ND96amsr_A100_v4"]
    problems = provider.check_cluster(cluster, builtin())
    assert [(d.severity, "Standard_NC24ads_A100_v4" in d.message) for d in problems] == [("warning", True)]
    typo = Cluster("aml", "azure-ml", {**BASE, "compute": {"Standard_ND96amsr_A100": "ib"}})
    assert [d.severity for d in provider.check_cluster(typo, builtin())] == ["error"]
