"""The azure-ml provider's typed request: the REST calls AzureMlClient.submit makes, with their bodies.

Submit sends, in order (Microsoft.MachineLearningServices, `api_version`):

1. `PUT {workspace_id}/environments/{environment_name}/versions/{environment_version}` with
   `environment` (the image, and a conda file for `environment.build.pip_packages`): what the Azure
   ML SDK does for an inline image (an anonymous environment, versioned by a hash of its contents);
2. for each secret, `PUT {key_vault}/secrets/{name}` (Key Vault REST API) with the value given to
   `jsctl apply` (never rendered, never recorded);
3. `PUT {workspace_id}/jobs/{job_name}` with `body` (a command job).

The artifact's file is the same job as CLI v2 YAML (`az ml job create -f`), checked with
`azure.ai.ml.load_job` by `jsctl plan --check-remote` and the tests.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Mapping

from jsctl.model.artifact import Request

# tags on every job: adopt and refresh find jsctl's jobs by these (values: the address, the generation)
JOB_ID_TAG = "jsctl.job-id"
ADDRESS_TAG = "jsctl.address"
GENERATION_TAG = "jsctl.generation"
ANONYMOUS_ENVIRONMENT = "CliV2AnonymousEnvironment"


@dataclass(frozen=True)
class AzureMlRequest(Request):
    workspace_id: str  # /subscriptions/…/resourceGroups/…/providers/Microsoft.MachineLearningServices/workspaces/…
    job_name: str
    api_version: str
    job_file: str  # the artifact's CLI v2 YAML of the same job
    environment_name: str
    environment_version: str
    environment: Mapping[str, object]  # the environment version's PUT body
    body: Mapping[str, object]  # the job's PUT body
    experiment: str
    secrets: Mapping[str, str] = field(default_factory=dict)  # NAME → Key Vault secret URL (no value, ever)
    endpoint_url: str | None = None  # ARM endpoint (None: https://management.azure.com)
    logs_endpoint: str = ""  # run history, for logs

    IN_PLACE: ClassVar[tuple[str, ...]] = ("endpoint_url", "logs_endpoint")

    @property
    def job_path(self) -> str:
        return f"{self.workspace_id}/jobs/{self.job_name}"

    @property
    def environment_path(self) -> str:
        return f"{self.workspace_id}/environments/{self.environment_name}/versions/{self.environment_version}"
