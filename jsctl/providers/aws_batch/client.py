"""AWS Batch's effects through boto3 (imported here only, when a command needs the service)."""
from __future__ import annotations

import functools
import hashlib
import os
import time
from typing import Any, Iterator, Mapping

from jsctl.errors import ProviderError
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.cluster import Cluster
from jsctl.model.status import EngineEvent, JobHandle, LiveStatus
from jsctl.providers.aws_batch import status
from jsctl.providers.aws_batch.request import (CANCEL_REASON, HASH_TAG, JOB_ID_TAG, WORKSPACE_TAG,
                                               AwsBatchRequest)
from jsctl.providers.aws_batch.settings import AwsSettings
from jsctl.providers.base import ProviderClient

BATCH = 100  # DescribeJobs takes at most 100 job ids


def workspace_tag(workspace_dir: str) -> str:
    return hashlib.sha256(os.path.realpath(workspace_dir).encode()).hexdigest()[:16]


class AwsBatchClient(ProviderClient):
    provider = "aws-batch"

    def __init__(self, cluster: Cluster, workspace_dir: str) -> None:
        super().__init__(cluster, workspace_dir)
        self.settings = AwsSettings.of(cluster)
        self.workspace = workspace_tag(workspace_dir)

    @functools.lru_cache(maxsize=None)
    def aws(self, service: str) -> Any:
        try:
            import boto3
        except ImportError:
            raise ProviderError("the aws-batch provider needs boto3", hint="pip install 'jsctl[aws]'") from None
        return boto3.session.Session(region_name=self.settings.region).client(
            service, endpoint_url=self.settings.endpoint_url)

    def call(self, service: str, operation: str, **kw: Any) -> dict:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self.aws(service), operation)(**kw)
        except ClientError as exc:
            raise ProviderError(f"AWS {service} {operation}: {exc.response.get('Error', {}).get('Message') or exc}") \
                from None
        except BotoCoreError as exc:
            raise ProviderError(f"AWS {service} {operation}: {exc}") from None

    # ---- submit -----------------------------------------------------------------------------------
    def register(self, request: AwsBatchRequest) -> str:
        """The ARN of an ACTIVE revision with this content hash, else of a newly registered one."""
        name = request.definition["jobDefinitionName"]
        token = None
        while True:
            kw = {"jobDefinitionName": name, "status": "ACTIVE", **({"nextToken": token} if token else {})}
            page = self.call("batch", "describe_job_definitions", **kw)
            for d in page.get("jobDefinitions", ()):
                if (d.get("tags") or {}).get(HASH_TAG) == request.content_hash and d.get("status", "ACTIVE") == "ACTIVE":
                    return d["jobDefinitionArn"]
            token = page.get("nextToken")
            if not token:
                break
        return self.call("batch", "register_job_definition", **_plain(request.definition))["jobDefinitionArn"]

    def submit(self, artifact: RenderedArtifact, env: Mapping[str, str],
               upstream: Mapping[str, JobHandle]) -> JobHandle:
        request = artifact.request
        assert isinstance(request, AwsBatchRequest)
        missing = [n for n, _ in request.secret_parameters if n not in env]
        if missing:
            raise ProviderError(f"secrets {', '.join(missing)} are not set in jsctl apply's environment")
        for name, parameter in request.secret_parameters:
            self.call("ssm", "put_parameter", Name=parameter, Value=env[name], Type="SecureString", Overwrite=True)
        arn = self.register(request)
        body = _plain(request.submit)
        body["tags"] = {**body.get("tags", {}), WORKSPACE_TAG: self.workspace}
        body["jobDefinition"] = arn
        if upstream:
            body["dependsOn"] = [{"jobId": h.id} for _, h in sorted(upstream.items())]
        job = self.call("batch", "submit_job", **body)
        return JobHandle(self.provider, self.cluster.name, job["jobId"])

    def adopt(self, artifact: RenderedArtifact) -> JobHandle | None:
        request = artifact.request
        assert isinstance(request, AwsBatchRequest)
        ids, token = [], None
        while True:
            page = self.call("batch", "list_jobs", jobQueue=request.job_queue,
                             filters=[{"name": "JOB_NAME", "values": [artifact.job_id]}],
                             **({"nextToken": token} if token else {}))
            ids += [j["jobId"] for j in page.get("jobSummaryList", ())]
            token = page.get("nextToken")
            if not token:
                break
        found = []
        for job in self.describe(ids).values():
            tags = job.get("tags") or {}
            if (tags.get(JOB_ID_TAG) == artifact.job_id and tags.get(WORKSPACE_TAG) == self.workspace
                    and tags.get(HASH_TAG) == request.content_hash and job.get("status") != "FAILED"):
                found.append((job.get("createdAt") or 0, job["jobId"]))
        return JobHandle(self.provider, self.cluster.name, max(found)[1]) if found else None

    # ---- status -----------------------------------------------------------------------------------
    def describe(self, ids: list[str]) -> dict[str, dict]:
        """DescribeJobs, 100 ids a call; jobs the service does not know are absent."""
        unique = list(dict.fromkeys(ids))
        out: dict[str, dict] = {}
        for i in range(0, len(unique), BATCH):
            for job in self.call("batch", "describe_jobs", jobs=unique[i:i + BATCH]).get("jobs", ()):
                out[job["jobId"]] = job
        return out

    def refresh(self, handles: list[JobHandle]) -> dict[JobHandle, LiveStatus]:
        jobs = self.describe([h.id for h in handles])
        return {h: status.live(jobs[h.id]) if h.id in jobs else
                LiveStatus("UNKNOWN", "", "AWS Batch does not know this job (gone, or never submitted)")
                for h in handles}

    def cancel(self, handle: JobHandle) -> None:
        job = self.describe([handle.id]).get(handle.id)
        if job is None or job.get("status") in ("SUCCEEDED", "FAILED"):
            return
        self.call("batch", "terminate_job", jobId=handle.id, reason=CANCEL_REASON)

    def events(self, handle: JobHandle) -> list[EngineEvent]:
        job = self.describe([handle.id]).get(handle.id)
        if job is None:
            return []
        out = [EngineEvent(_s(a.get("startedAt")), f"Attempt{i + 1}",
                           (a.get("container") or {}).get("reason") or a.get("statusReason") or "started",
                           f"Job/{handle.id}") for i, a in enumerate(job.get("attempts") or ())]
        if job.get("statusReason"):
            out.append(EngineEvent(_s(job.get("stoppedAt")), job.get("status", ""), job["statusReason"],
                                   f"Job/{handle.id}"))
        return out

    # ---- logs -------------------------------------------------------------------------------------
    def logs(self, handle: JobHandle, node: str | None = None, follow: bool = False,
             tail: int | None = None) -> Iterator[str]:
        job = self.describe([handle.id]).get(handle.id)
        if job is None:
            raise ProviderError(f"AWS Batch does not know job {handle.id}")
        streams = status.log_streams(job)
        if job.get("nodeProperties") or job.get("nodeDetails"):
            nodes = self.describe([f"{handle.id}#{i}" for i in range(int((job.get("nodeProperties") or {})
                                                                         .get("numNodes", 0)))])
            streams = [(k.split("#")[1], s) for k, j in sorted(nodes.items()) for _, s in status.log_streams(j)] \
                or streams
        if node is not None:
            streams = [(n, s) for n, s in streams if n == str(node)]
        while True:
            lines = [line for _, s in streams for line in self.stream(s)]
            yield from (lines[-tail:] if tail else lines)
            if not follow or status.live(self.describe([handle.id]).get(handle.id, {})).terminal:
                return
            time.sleep(2.0)
            tail = None

    def stream(self, name: str) -> list[str]:
        """Every event of one CloudWatch Logs stream (none while the stream does not exist yet)."""
        from botocore.exceptions import ClientError

        out, token = [], None
        logs = self.aws("logs")
        while True:
            kw = {"logGroupName": self.settings.log_group, "logStreamName": name, "startFromHead": True,
                  **({"nextToken": token} if token else {})}
            try:
                page = logs.get_log_events(**kw)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                    return out
                raise ProviderError(f"AWS logs get_log_events: {exc}") from None
            out += [e["message"].rstrip("\n") + "\n" for e in page.get("events", ())]
            if not page.get("events") or page.get("nextForwardToken") in (None, token):
                return out
            token = page.get("nextForwardToken")


def _plain(value: Any) -> Any:
    """A request's frozen value (tuples) as the JSON botocore takes (lists)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _s(ms: Any) -> float | None:
    return ms / 1000.0 if isinstance(ms, (int, float)) and ms else None
