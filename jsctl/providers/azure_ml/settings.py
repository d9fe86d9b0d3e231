"""An Azure ML cluster's inventory entry (jsctl.yaml `clusters:`), read once into a frozen dataclass.

    - name: aml
      provider: azure-ml
      subscription_id: 00000000-0000-0000-0000-000000000000
      resource_group: ml-rg
      workspace: ml-ws
      region: eastus                          # also the run-history (logs) host: https://eastus.api.azureml.ms
      compute:                                # compute cluster per catalog instance type
        Standard_ND96amsr_A100_v4: a100-cluster
      spot_compute:                           # optional: a low-priority cluster per type for spot capacity
        Standard_ND96amsr_A100_v4: a100-lowpri  #   (else spot capacity is queue_settings job_tier Spot)
      experiment: jsctl                       # default: jsctl
      datastores:                             # job storage paths → azureml:// URIs (longest prefix wins)
        - {prefix: /lustre/llm, datastore: lustre, path: llm}
      key_vault: https://ml-kv.vault.azure.net   # where submit stores the job's secrets (see __init__.py)
      endpoint_url: http://127.0.0.1:8123     # optional: ARM endpoint (tests: the fake service)
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from jsctl.model.cluster import Cluster
from jsctl.providers.cloud import settings_schema

API_VERSION = "2024-04-01"  # Microsoft.MachineLearningServices REST API (jobs, environments, computes)
KEY_VAULT_API_VERSION = "7.4"
DEFAULT_EXPERIMENT = "jsctl"
ARM_ENDPOINT = "https://management.azure.com"
NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"

SCHEMA = settings_schema("azure-ml cluster settings", {
    "subscription_id": {"type": "string", "minLength": 1},
    "resource_group": {"type": "string", "minLength": 1},
    "workspace": {"type": "string", "minLength": 1, "description": "the Azure ML workspace"},
    "compute": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "string", "pattern": NAME_RE},
                "description": "compute cluster name per catalog instance type"},
    "spot_compute": {"type": "object", "additionalProperties": {"type": "string", "pattern": NAME_RE},
                     "description": "low-priority compute cluster per instance type, for spot capacity"},
    "experiment": {"type": "string", "pattern": NAME_RE},
    "datastores": {"type": "array", "items": {
        "type": "object", "additionalProperties": False, "required": ["prefix", "datastore"],
        "properties": {"prefix": {"type": "string", "pattern": "^/"},
                       "datastore": {"type": "string", "pattern": NAME_RE},
                       "path": {"type": "string"}}}},
    "key_vault": {"type": "string", "pattern": "^https?://",
                  "description": "Key Vault URL: submit stores the job's secrets there; the job reads them"},
    "history_endpoint": {"type": "string", "pattern": "^https?://",
                         "description": "run-history (logs) endpoint; default https://<region>.api.azureml.ms"},
}, required=("subscription_id", "resource_group", "workspace", "compute"))


@dataclass(frozen=True)
class Datastore:
    prefix: str
    datastore: str
    path: str = ""


@dataclass(frozen=True)
class AzureMlSettings:
    cluster: str
    subscription_id: str
    resource_group: str
    workspace: str
    compute: Mapping[str, str]
    spot_compute: Mapping[str, str] = field(default_factory=dict)
    experiment: str = DEFAULT_EXPERIMENT
    datastores: tuple[Datastore, ...] = ()
    key_vault: str | None = None
    endpoint_url: str | None = None
    history_endpoint: str | None = None
    region: str | None = None

    @classmethod
    def of(cls, cluster: Cluster) -> "AzureMlSettings":
        s: Mapping[str, Any] = cluster.settings
        return cls(cluster.name, str(s.get("subscription_id", "")), str(s.get("resource_group", "")),
                   str(s.get("workspace", "")), dict(s.get("compute") or {}), dict(s.get("spot_compute") or {}),
                   str(s.get("experiment") or DEFAULT_EXPERIMENT),
                   tuple(Datastore(d["prefix"], d["datastore"], d.get("path", "")) for d in s.get("datastores") or ()),
                   _strip(s.get("key_vault")), _strip(s.get("endpoint_url")), _strip(s.get("history_endpoint")),
                   s.get("region"))

    @property
    def workspace_id(self) -> str:
        """The workspace's ARM id: every job, environment and compute path starts with it."""
        return (f"/subscriptions/{self.subscription_id}/resourceGroups/{self.resource_group}"
                "/providers/Microsoft.MachineLearningServices/workspaces/" + self.workspace)

    def compute_for(self, instance_type: str, spot: bool) -> str | None:
        if spot and instance_type in self.spot_compute:
            return self.spot_compute[instance_type]
        return self.compute.get(instance_type)

    def datastore_uri(self, path: str) -> str | None:
        """A job storage path as an azureml:// URI (a URI stays as written); None when no prefix maps it."""
        if re.match(r"^(azureml|https|abfss|wasbs)://", path):
            return path
        best = max((d for d in self.datastores if path == d.prefix or path.startswith(d.prefix.rstrip("/") + "/")),
                   key=lambda d: len(d.prefix), default=None)
        if best is None:
            return None
        rest = path[len(best.prefix.rstrip("/")):].lstrip("/")
        inner = posixpath.join(best.path.strip("/"), rest) if best.path.strip("/") else rest
        return f"azureml://datastores/{best.datastore}/paths/{inner}"

    @property
    def arm_endpoint(self) -> str:
        return self.endpoint_url or ARM_ENDPOINT

    @property
    def logs_endpoint(self) -> str:
        return self.history_endpoint or self.endpoint_url or f"https://{self.region or 'eastus'}.api.azureml.ms"


def _strip(value: Any) -> str | None:
    return str(value).rstrip("/") if value else None
