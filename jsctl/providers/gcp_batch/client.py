"""The gcp-batch provider's effects, through the official google-cloud-batch client (REST transport;
imported here only, on first use) and Cloud Logging (google-cloud-logging) for logs.

- submit: Secret Manager addVersion for each secret the request uploads (its value from apply's
  environment), then CreateJob(parent, job_id = the jsctl job id, job = the planned body).
- adopt: ListJobs with the filter `labels.jsctl-job-id="<job id>"`.
- refresh: one ListJobs per project/region (job-id labels joined by OR), GetJob only for a job the
  list did not answer (a 404 is UNKNOWN).
- cancel: CancelJob (the job stays, CANCELLED); a job that is gone or has ended: nothing to do.
- logs: Cloud Logging entries whose `labels.job_uid` is the job's uid (batch_task_logs, batch_agent_logs).

With `endpoint_url` (a local stand-in, the tests') every call goes there with anonymous credentials.
Handles are `gcp-batch://<cluster>/projects/<p>/locations/<r>/jobs/<job id>`."""
from __future__ import annotations

import base64
from typing import Any, Iterator, Mapping

from jsctl.errors import ProviderError
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.cluster import Cluster, Facts
from jsctl.model.status import EngineEvent, JobHandle, LiveStatus
from jsctl.providers.base import ProviderClient
from jsctl.providers.gcp_batch import livestatus
from jsctl.providers.gcp_batch.request import JOB_ID_LABEL, GcpBatchRequest
from jsctl.providers.gcp_batch.settings import GcpSettings

CHUNK = 25  # job ids per ListJobs filter
SECRET_MANAGER = "https://secretmanager.googleapis.com"
LOGGING = "https://logging.googleapis.com"


def _api_errors() -> tuple[type[Exception], ...]:
    from google.api_core import exceptions
    from google.auth import exceptions as auth

    return exceptions.GoogleAPIError, auth.GoogleAuthError


class GcpBatchClient(ProviderClient):
    provider = "gcp-batch"

    def __init__(self, cluster: Cluster, workspace_dir: str) -> None:
        super().__init__(cluster, workspace_dir)
        self.settings = GcpSettings.of(cluster)
        self._batch: Any = None
        self._credentials: Any = None

    # ---- connection ---------------------------------------------------------------------------------
    @property
    def endpoint(self) -> str | None:
        return self.settings.endpoint_url

    def credentials(self) -> Any:
        if self._credentials is None:
            if self.endpoint:
                from google.auth.credentials import AnonymousCredentials

                self._credentials = AnonymousCredentials()
            else:
                import google.auth

                try:
                    self._credentials, _ = google.auth.default(
                        scopes=["https://www.googleapis.com/auth/cloud-platform"])
                except Exception as exc:  # noqa: BLE001 - DefaultCredentialsError and kin
                    raise livestatus.provider_error(exc, "loading credentials") from None
        return self._credentials

    def batch(self) -> Any:
        if self._batch is None:
            from google.cloud import batch_v1

            options = {"api_endpoint": self.endpoint} if self.endpoint else None
            self._batch = batch_v1.BatchServiceClient(transport="rest", credentials=self.credentials(),
                                                      client_options=options)
        return self._batch

    def _call(self, what: str, fn, *args, **kwargs) -> Any:
        try:
            return fn(*args, **kwargs)
        except _api_errors() as exc:
            raise livestatus.provider_error(exc, what) from None

    def probe(self) -> Facts:
        """Nothing to ask the service: offers and prices come from the catalog."""
        return Facts(self.cluster.name, {"project": self.settings.project, "region": self.settings.region})

    # ---- apply --------------------------------------------------------------------------------------
    def submit(self, artifact: RenderedArtifact, env: Mapping[str, str],
               upstream: Mapping[str, JobHandle]) -> JobHandle:
        request = artifact.request
        assert isinstance(request, GcpBatchRequest)
        missing = [u["env"] for u in request.secret_uploads if u["env"] not in env]
        if missing:
            raise ProviderError(f"secret{'s' if len(missing) > 1 else ''} not given to submit: {', '.join(missing)}")
        for u in request.secret_uploads:
            self._add_secret_version(u["secret"], env[u["env"]])
        import json

        from google.cloud import batch_v1

        job = batch_v1.Job.from_json(json.dumps(dict(request.job)))
        created = self._call(f"creating job {request.name}", self.batch().create_job,
                             parent=request.parent, job=job, job_id=request.job_id)
        return JobHandle(self.provider, self.cluster.name, created.name or request.name)

    def _add_secret_version(self, secret: str, value: str) -> None:
        """Secret Manager's addVersion (REST); the value goes to Secret Manager only."""
        from google.auth.transport.requests import AuthorizedSession

        url = f"{(self.endpoint or SECRET_MANAGER).rstrip('/')}/v1/{secret}:addVersion"
        data = {"payload": {"data": base64.b64encode(value.encode("utf-8")).decode("ascii")}}
        try:
            res = AuthorizedSession(self.credentials()).post(url, json=data, timeout=60)
        except Exception as exc:  # noqa: BLE001 - requests' and google.auth's errors
            raise ProviderError(f"Secret Manager could not be reached adding a version to {secret}: {exc}") from None
        if res.status_code >= 300:
            try:
                err = res.json().get("error") or {}
            except ValueError:
                err = {}
            raise ProviderError(f"Secret Manager refused adding a version to {secret} ({res.status_code} "
                                f"{err.get('status', '')}): {err.get('message') or res.text[:200]}",
                                hint="the account needs roles/secretmanager.secretVersionAdder on the secret")

    def _list(self, parent: str, filter_: str) -> list[Any]:
        pager = self._call(f"listing jobs in {parent}", self.batch().list_jobs,
                           request={"parent": parent, "filter": filter_, "page_size": 100})
        return self._call(f"listing jobs in {parent}", list, pager)

    def adopt(self, artifact: RenderedArtifact) -> JobHandle | None:
        """The job already created for this job id (after a lost state write), unless it is being deleted."""
        request = artifact.request
        if not isinstance(request, GcpBatchRequest):
            return None
        for job in self._list(request.parent, f'labels.{JOB_ID_LABEL}="{request.job_id}"'):
            if job.name == request.name and job.status.state.name != "DELETION_IN_PROGRESS":
                return JobHandle(self.provider, self.cluster.name, job.name)
        return None

    # ---- status -------------------------------------------------------------------------------------
    def refresh(self, handles: list[JobHandle]) -> dict[JobHandle, LiveStatus]:
        unique = list(dict.fromkeys(handles))
        out: dict[JobHandle, LiveStatus] = {}
        groups: dict[str, list[JobHandle]] = {}
        for h in unique:
            if not livestatus.NAME.match(h.id):
                out[h] = LiveStatus("UNKNOWN", "NOT_FOUND", f"not a Batch job name: {h.id}")
                continue
            groups.setdefault(h.id.split("/jobs/")[0], []).append(h)
        for parent, hs in groups.items():
            for i in range(0, len(hs), CHUNK):
                part = hs[i:i + CHUNK]
                ids = sorted({h.id.rsplit("/", 1)[1] for h in part})
                jobs = {j.name: j for j in self._list(parent, " OR ".join(f'labels.{JOB_ID_LABEL}="{x}"' for x in ids))}
                for h in part:
                    job = jobs.get(h.id) or self._get(h.id)
                    out[h] = livestatus.live_status(job) if job is not None else livestatus.gone(h.id)
        return out

    def _get(self, name: str) -> Any:
        from google.api_core.exceptions import NotFound

        try:
            return self.batch().get_job(name=name)
        except NotFound:
            return None
        except _api_errors() as exc:
            raise livestatus.provider_error(exc, f"reading job {name}") from None

    def events(self, handle: JobHandle) -> list[EngineEvent]:
        """The job's status events (state changes, task failures with their exit codes), oldest first."""
        job = self._get(handle.id) if livestatus.NAME.match(handle.id) else None
        if job is None:
            return []
        return [EngineEvent(livestatus.seconds(e.event_time), e.type_ or "STATUS_CHANGED", e.description,
                            f"Job/{handle.id.rsplit('/', 1)[1]}") for e in job.status.status_events]

    # ---- logs, cancel -------------------------------------------------------------------------------
    def logs(self, handle: JobHandle, node: str | None = None, follow: bool = False,
             tail: int | None = None) -> Iterator[str]:
        from jsctl.providers.gcp_batch.cloudlogs import job_logs

        job = self._get(handle.id)
        if job is None:
            raise ProviderError(f"Batch has no job {handle.id}: its logs are in Cloud Logging only by its uid")
        yield from job_logs(self, job, node, follow, tail)

    def cancel(self, handle: JobHandle) -> None:
        """CancelJob; idempotent: a job that is gone, ended or already being cancelled is left as it is."""
        from google.api_core.exceptions import BadRequest, Conflict, FailedPrecondition, NotFound

        if not livestatus.NAME.match(handle.id):
            return
        try:
            self.batch().cancel_job(name=handle.id)
        except NotFound:
            return
        except (FailedPrecondition, BadRequest, Conflict) as exc:
            job = self._get(handle.id)
            if job is None or job.status.state.name in (*livestatus.TERMINAL, "CANCELLATION_IN_PROGRESS",
                                                        "DELETION_IN_PROGRESS"):
                return
            raise livestatus.provider_error(exc, f"cancelling job {handle.id}") from None
        except _api_errors() as exc:
            raise livestatus.provider_error(exc, f"cancelling job {handle.id}") from None
