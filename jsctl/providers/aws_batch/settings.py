"""An aws-batch cluster's settings in jsctl.yaml, read once into a frozen type.

    clusters:
      - name: aws
        provider: aws-batch
        region: us-east-1
        instance_types: [p4de.24xlarge]     # the compute environments' types (offers and prices: the catalog)
        spot: true                          # offer spot capacity where the catalog prices it
        job_queues: {on-demand: gpu-od, spot: gpu-spot}   # the queue per capacity (on-demand required)
        secrets: {HF_TOKEN: arn:aws:secretsmanager:...}   # optional: a secret's ARN (Secrets Manager or SSM)
        execution_role_arn: arn:aws:iam::...:role/...    # optional: the role ECS reads secrets with
        job_role_arn: arn:aws:iam::...:role/...          # optional: the container's own role
        log_group: /aws/batch/job                         # where the awslogs driver writes (the default)
        endpoint_url: http://127.0.0.1:5000               # optional: an emulator, a private endpoint
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from jsctl.errors import ProviderError
from jsctl.model.cluster import Cluster
from jsctl.providers.cloud import settings_schema

DEFAULT_LOG_GROUP = "/aws/batch/job"
NAME = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$"

PROPERTIES: dict[str, Any] = {
    "job_queues": {"type": "object", "additionalProperties": False, "required": ["on-demand"],
                   "properties": {"on-demand": {"type": "string", "minLength": 1},
                                  "spot": {"type": "string", "minLength": 1}},
                   "description": "the job queue per capacity: its compute environments run those instance types"},
    "secrets": {"type": "object", "additionalProperties": {"type": "string", "pattern": "^arn:"},
                "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
                "description": "secret name -> the ARN of a Secrets Manager secret or SSM parameter holding it"},
    "secret_prefix": {"type": "string", "pattern": "^/[A-Za-z0-9_./-]*$",
                      "description": "SSM path under which submit writes secrets the `secrets:` map lacks"},
    "execution_role_arn": {"type": "string", "pattern": "^arn:"},
    "job_role_arn": {"type": "string", "pattern": "^arn:"},
    "log_group": {"type": "string", "minLength": 1},
}
SCHEMA = settings_schema("aws-batch cluster settings", PROPERTIES, required=("region", "job_queues"))


@dataclass(frozen=True)
class AwsSettings:
    cluster: str
    region: str
    job_queues: Mapping[str, str]
    secrets: Mapping[str, str] = field(default_factory=dict)
    secret_prefix: str = "/jsctl"
    execution_role_arn: str | None = None
    job_role_arn: str | None = None
    log_group: str = DEFAULT_LOG_GROUP
    endpoint_url: str | None = None

    @classmethod
    def of(cls, cluster: Cluster) -> "AwsSettings":
        s = cluster.settings
        if not s.get("region") or not (s.get("job_queues") or {}).get("on-demand"):
            raise ProviderError(f"cluster {cluster.name}: aws-batch needs `region` and `job_queues: {{on-demand: ...}}`")
        return cls(cluster.name, str(s["region"]), dict(s["job_queues"]), dict(s.get("secrets") or {}),
                   str(s.get("secret_prefix") or "/jsctl").rstrip("/") or "/jsctl", s.get("execution_role_arn"),
                   s.get("job_role_arn"), str(s.get("log_group") or DEFAULT_LOG_GROUP), s.get("endpoint_url"))

    def queue(self, capacity: str) -> str:
        if capacity == "spot":
            if "spot" not in self.job_queues:
                raise ProviderError(f"cluster {self.cluster}: placed on spot, but job_queues has no `spot` queue")
            return self.job_queues["spot"]
        return self.job_queues["on-demand"]
