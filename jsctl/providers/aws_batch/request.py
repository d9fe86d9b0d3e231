"""The aws-batch provider's typed request: exactly what AwsBatchClient.submit sends.

1. RegisterJobDefinition with `definition` (unless an ACTIVE revision of that name carries the same
   `jsctl:content-hash` tag: an unchanged definition is reused, never registered again);
2. SSM PutParameter (SecureString) for each of `secret_parameters` whose value comes from `jsctl apply`'s
   environment (secrets the inventory does not map to an ARN); the value is in no other request;
3. SubmitJob with `submit` plus `jobDefinition` (the revision's ARN) and `dependsOn` (the upstream jobs'
   ids, from the handles apply passes), and one more tag: `jsctl:workspace`, a hash of the workspace
   directory (the job id is the same in two checkouts; adopt must take only this workspace's job).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Mapping

from jsctl.model.artifact import Request

ADDRESS_TAG = "jsctl:address"
JOB_ID_TAG = "jsctl:job-id"
GENERATION_TAG = "jsctl:generation"
HASH_TAG = "jsctl:content-hash"
WORKSPACE_TAG = "jsctl:workspace"
CANCEL_REASON = "jsctl: cancelled"  # terminate_job's reason: a FAILED job with it reads CANCELLED


@dataclass(frozen=True)
class AwsBatchRequest(Request):
    file: str  # the artifact's file: {"registerJobDefinition": definition, "submitJob": submit}, JSON
    region: str
    job_queue: str
    definition: Mapping  # RegisterJobDefinition's body
    submit: Mapping  # SubmitJob's body, less jobDefinition and dependsOn (known at submit)
    content_hash: str  # sha256 of `definition` (16 hex): its jsctl:content-hash tag
    secret_parameters: tuple[tuple[str, str], ...] = ()  # (secret name, SSM parameter) written at submit
    log_group: str = "/aws/batch/job"
    endpoint_url: str | None = None

    IN_PLACE: ClassVar[tuple[str, ...]] = ("endpoint_url", "log_group")
