"""The gcp-batch provider's typed request: exactly what GcpBatchClient.submit sends.

`CreateJob(parent, job_id, job)`: POST /v1/{parent}/jobs?jobId={job_id} with `job` as the body (the
Batch v1 Job in its REST JSON form: camelCase, int64 values as strings, enums by name), after one
Secret Manager addVersion per `secret_uploads` entry (the value from apply's environment; never here)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from jsctl.model.artifact import Request

# labels on every job jsctl creates (GCP label values: lowercase, digits, '_', '-', at most 63)
ADDRESS_LABEL = "jsctl-address"  # settings.label_value(address)
JOB_ID_LABEL = "jsctl-job-id"
GENERATION_LABEL = "jsctl-generation"


@dataclass(frozen=True)
class GcpBatchRequest(Request):
    parent: str  # projects/P/locations/R
    job_id: str  # the jsctl job id, also Batch's job id: the job is {parent}/jobs/{job_id}
    job: Mapping[str, Any]  # the request body; the artifact's file holds the same JSON
    file: str  # that file's name among the artifact's files
    secret_uploads: tuple[Mapping[str, str], ...] = ()  # {"env": NAME, "secret": projects/P/secrets/S}
    endpoint_url: str | None = None  # where the requests go (None: batch.googleapis.com)

    IN_PLACE: ClassVar[tuple[str, ...]] = ("endpoint_url",)

    @property
    def name(self) -> str:
        return f"{self.parent}/jobs/{self.job_id}"
