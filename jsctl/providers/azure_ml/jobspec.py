"""A placed job → an Azure ML command job: the REST body (what the client PUTs), the anonymous
environment it runs in, and the same job as CLI v2 YAML (the artifact file).

The job runs one process per node (`distribution: pytorch, process_count_per_instance: 1`); that
process is the entry script (jsctl.providers.cloud.entry_script), which execs the launch contract's
command, so jsruntime.launch/torchrun starts the node's GPU workers, as on every other provider.
Azure ML's PyTorch distribution sets MASTER_ADDR, MASTER_PORT, NODE_RANK, WORLD_SIZE and RANK for that
process; jsctl keeps MASTER_ADDR and NODE_RANK and sets MASTER_PORT (29500) for torchrun's rendezvous.
"""
from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from typing import Any

from jsctl.model.job import JobContext
from jsctl.providers.azure_ml.request import (ADDRESS_TAG, ANONYMOUS_ENVIRONMENT, GENERATION_TAG, JOB_ID_TAG)
from jsctl.providers.azure_ml.settings import AzureMlSettings
from jsctl.providers.cloud import entry_script
from jsctl.render import launch, shquote

# Fetches one Key Vault secret (URL in $1) with the job's managed identity and prints its value: the
# compute's identity endpoint (IDENTITY_ENDPOINT, else MSI_ENDPOINT), else the VM's IMDS.
_FETCH = """import json, os, sys, urllib.parse as p, urllib.request as u
def get(url, headers): return json.load(u.urlopen(u.Request(url, headers=headers), timeout=60))
q = {"resource": "https://vault.azure.net"}
if os.environ.get("DEFAULT_IDENTITY_CLIENT_ID"): q["client_id"] = os.environ["DEFAULT_IDENTITY_CLIENT_ID"]
e = os.environ
if e.get("IDENTITY_ENDPOINT"): t = get(e["IDENTITY_ENDPOINT"] + "?" + p.urlencode({**q, "api-version": "2019-08-01"}), {"X-IDENTITY-HEADER": e.get("IDENTITY_HEADER", "")})
elif e.get("MSI_ENDPOINT"): t = get(e["MSI_ENDPOINT"] + "?" + p.urlencode({**q, "api-version": "2017-09-01"}), {"secret": e.get("MSI_SECRET", "")})
else: t = get("http://169.254.169.254/metadata/identity/oauth2/token?" + p.urlencode({**q, "api-version": "2018-02-01"}), {"Metadata": "true"})
sys.stdout.write(get(sys.argv[1] + "?api-version=7.4", {"Authorization": "Bearer " + t["access_token"]})["value"])
"""


@dataclass(frozen=True)
class Built:
    body: dict[str, Any]
    environment: dict[str, Any]
    environment_version: str
    yaml: str
    compute: str
    secrets: dict[str, str]  # NAME → Key Vault secret URL


def input_name(name: str) -> str:
    """Storage name → an Azure ML input/output name (letters, digits, '_'): `pretrained-model` → pretrained_model."""
    out = launch.env_name(name).lower()
    return out if out[:1].isalpha() or out[:1] == "_" else "_" + out


def secret_url(settings: AzureMlSettings, job_id: str, name: str) -> str:
    """Where submit stores secret NAME of a job (Key Vault names: letters, digits, '-')."""
    slug = "".join(c if c.isalnum() else "-" for c in f"jsctl-{job_id}-{name}")
    return f"{settings.key_vault}/secrets/{slug}"


def mounts(ctx: JobContext, settings: AzureMlSettings) -> dict[str, tuple[str, str, str, str | None]]:
    """Storage name → (azure name, 'input'|'output', azureml:// URI, mount_path) for mapped paths."""
    out = {}
    for kind, items in (("input", ctx.spec.inputs), ("output", ctx.spec.outputs)):
        for m in items:
            uri = settings.datastore_uri(m.path.replace("${JOB_ID}", ctx.job_id))
            if uri is not None:
                out[m.name] = (input_name(m.name), kind, uri, m.mount_path)
    return out


def prologue(ctx: JobContext, settings: AzureMlSettings,
             mapped: dict[str, tuple[str, str, str, str | None]]) -> list[str]:
    lines = ['export MASTER_ADDR="${MASTER_ADDR:-127.0.0.1}"',
             'export NODE_RANK="${NODE_RANK:-${AZUREML_CR_NODE_RANK:-0}}"']
    for _, (azure, kind, _, mount_path) in sorted(mapped.items()):
        if mount_path:  # Azure ML mounts under its own directory: link where the job expects it
            var = f"${{AZURE_ML_{kind.upper()}_{azure}}}"
            lines.append(f'mkdir -p "$(dirname {shquote(mount_path)})" && ln -sfn "{var}" {shquote(mount_path)}')
    if ctx.spec.environment.secrets:
        lines.append("jsctl_secret() { \"$(command -v python3 || command -v python)\" -c " + shquote(_FETCH)
                     + ' "$1"; }')
        for name in ctx.spec.environment.secrets:
            url = secret_url(settings, ctx.job_id, name)
            lines += [f"{name}=\"$(jsctl_secret {shquote(url)})\"", f"export {name}"]
    return lines


def build(ctx: JobContext, settings: AzureMlSettings) -> Built:
    spec, p = ctx.spec, ctx.placement
    mapped = mounts(ctx, settings)
    job_mounts = {name: (mp or f"${{AZURE_ML_{kind.upper()}_{azure}}}")
                  for name, (azure, kind, _, mp) in mapped.items()}
    script = entry_script(ctx, prologue(ctx, settings, mapped), job_mounts, None)
    spot = p.capacity == "spot"
    compute = settings.compute_for(p.pool, spot) or ""
    environment = {"properties": {"image": spec.environment.image or "",
                                  **({"condaFile": conda_file(spec.environment.pip_packages)}
                                     if spec.environment.pip_packages else {})}}
    version = hashlib.sha256(json.dumps(environment, sort_keys=True).encode()).hexdigest()
    tags = {**dict(spec.labels), ADDRESS_TAG: ctx.address, GENERATION_TAG: str(ctx.generation), JOB_ID_TAG: ctx.job_id}
    props: dict[str, Any] = {
        "jobType": "Command", "displayName": spec.name, "experimentName": settings.experiment,
        "description": f"jsctl {ctx.address} (generation {ctx.generation})", "tags": tags,
        "computeId": f"{settings.workspace_id}/computes/{compute}",
        "environmentId": f"{settings.workspace_id}/environments/{ANONYMOUS_ENVIRONMENT}/versions/{version}",
        "environmentVariables": {}, "command": script,
        "resources": {"instanceCount": p.nodes, "properties": {}},
        "distribution": {"distributionType": "PyTorch", "processCountPerInstance": 1},
        "inputs": {a: {"jobInputType": "uri_folder", "uri": uri, "mode": "ReadOnlyMount"}
                   for a, kind, uri, _ in sorted(mapped.values()) if kind == "input"},
        "outputs": {a: {"jobOutputType": "uri_folder", "uri": uri, "mode": "ReadWriteMount"}
                    for a, kind, uri, _ in sorted(mapped.values()) if kind == "output"},
    }
    if spec.compute.time_limit_s:
        props["limits"] = {"jobLimitsType": "Command", "timeout": f"PT{spec.compute.time_limit_s}S"}
    if spot and p.pool not in settings.spot_compute:
        props["queueSettings"] = {"jobTier": "Spot"}
    secrets = {n: secret_url(settings, ctx.job_id, n) for n in spec.environment.secrets}
    return Built({"properties": props}, environment, version, cli_yaml(ctx, props, environment, compute), compute,
                 secrets)


def conda_file(packages: tuple[str, ...]) -> str:
    return json.dumps({"name": "jsctl", "channels": ["conda-forge"],
                       "dependencies": ["python=3.10", "pip", {"pip": list(packages)}]}, indent=2) + "\n"


def cli_yaml(ctx: JobContext, props: dict[str, Any], environment: dict[str, Any], compute: str) -> str:
    """The job as `az ml job create -f` takes it (azure.ai.ml.load_job reads it back)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.scalarstring import LiteralScalarString

    env: dict[str, Any] = {"image": environment["properties"]["image"]}
    if "condaFile" in environment["properties"]:
        env["conda_file"] = json.loads(environment["properties"]["condaFile"])
    command = props["command"]
    literal = all(line == line.rstrip() and line.isprintable() for line in command.splitlines())
    doc: dict[str, Any] = {
        "$schema": "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json",
        "type": "command", "name": ctx.job_id, "display_name": props["displayName"],
        "experiment_name": props["experimentName"], "description": props["description"], "tags": props["tags"],
        "compute": f"azureml:{compute}", "environment": env,
        "command": LiteralScalarString(command) if literal else command,
        "resources": {"instance_count": props["resources"]["instanceCount"]},
        "distribution": {"type": "pytorch", "process_count_per_instance": 1},
    }
    if "limits" in props:
        doc["limits"] = {"timeout": ctx.spec.compute.time_limit_s}
    if "queueSettings" in props:
        doc["queue_settings"] = {"job_tier": "spot"}
    for key, kind, mode in (("inputs", "jobInputType", "ro_mount"), ("outputs", "jobOutputType", "rw_mount")):
        if props[key]:
            doc[key] = {n: {"type": v[kind], "path": v["uri"], "mode": mode} for n, v in props[key].items()}
    y = YAML()
    y.width = 4096
    y.default_flow_style = False
    out = io.StringIO()
    y.dump(doc, out)
    return out.getvalue()
