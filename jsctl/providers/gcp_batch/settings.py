"""A gcp-batch cluster's settings (jsctl.yaml), their schema, and GCP's rules for names and labels.

    clusters:
      - name: gcp
        provider: gcp-batch
        project: my-project
        region: us-central1
        instance_types: [a2-ultragpu-8g]      # catalog names; default: every GPU type of gcp
        spot: true                             # also offer SPOT capacity
        service_account: batch@my-project.iam.gserviceaccount.com
        network: projects/my-project/global/networks/default
        subnetwork: projects/my-project/regions/us-central1/subnetworks/default
        no_external_ip: true
        secrets:                               # job secret name → Secret Manager resource
          HF_TOKEN: projects/my-project/secrets/hf-token            # apply adds its value as a new version
          WANDB_API_KEY: projects/my-project/secrets/wandb/versions/3  # used as is; apply sends nothing
        endpoint_url: http://127.0.0.1:8080    # a local stand-in for batch.googleapis.com (tests)
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from jsctl.model.cluster import Cluster
from jsctl.providers.cloud import settings_schema

SECRET = r"^projects/[^/]+/secrets/[^/]+(/versions/[^/]+)?$"
JOB_ID = re.compile(r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$")  # Batch's job_id rule
LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")

PROPERTIES: dict[str, Any] = {
    "project": {"type": "string", "pattern": r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$", "description": "the project id"},
    "service_account": {"type": "string", "minLength": 1, "description": "the VMs' service account (email)"},
    "network": {"type": "string", "minLength": 1},
    "subnetwork": {"type": "string", "minLength": 1},
    "no_external_ip": {"type": "boolean"},
    "secrets": {"type": "object", "additionalProperties": {"type": "string", "pattern": SECRET},
                "description": "job secret name → projects/P/secrets/S[/versions/V] in Secret Manager"},
}


def schema() -> dict[str, Any]:
    return settings_schema("gcp-batch cluster settings", PROPERTIES, ("project", "region"))


@dataclass(frozen=True)
class GcpSettings:
    cluster: str
    project: str
    region: str
    service_account: str | None = None
    network: str | None = None
    subnetwork: str | None = None
    no_external_ip: bool = False
    secrets: Mapping[str, str] = field(default_factory=dict)
    endpoint_url: str | None = None

    @classmethod
    def of(cls, cluster: Cluster) -> "GcpSettings":
        s = cluster.settings
        return cls(cluster.name, str(s.get("project") or ""), str(s.get("region") or ""), s.get("service_account"),
                   s.get("network"), s.get("subnetwork"), bool(s.get("no_external_ip")), dict(s.get("secrets") or {}),
                   s.get("endpoint_url"))

    @property
    def parent(self) -> str:
        return f"projects/{self.project}/locations/{self.region}"


def label_value(text: str) -> str:
    """Any text as a GCP label value (lowercase letters, digits, '_' and '-', at most 63): other
    characters become '-', and a long one keeps its start and a hash of the whole."""
    value = re.sub(r"[^a-z0-9_-]", "-", text.lower())
    if len(value) > 63:
        value = value[:54] + "-" + hashlib.sha256(text.encode()).hexdigest()[:8]
    return value


def valid_label(key: str, value: str) -> bool:
    return bool(LABEL_KEY.match(key) and LABEL_VALUE.match(value)) and not key.startswith(("goog", "google"))
