"""The azure-ml client: submit (environment, Key Vault secrets, job), adopt and refresh by tag, cancel,
logs from run history, and --check-remote (azure.ai.ml.load_job on the YAML, the compute's state)."""
from __future__ import annotations

import os
import tempfile
import time
from typing import Any, Iterator, Mapping

from jsctl.errors import ProviderError
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.cluster import Facts
from jsctl.model.status import JobHandle, LiveStatus
from jsctl.providers.azure_ml.request import JOB_ID_TAG, AzureMlRequest
from jsctl.providers.azure_ml.rest import VAULT_SCOPE, ApiError, Rest
from jsctl.providers.azure_ml.settings import API_VERSION, KEY_VAULT_API_VERSION, AzureMlSettings
from jsctl.providers.base import ProviderClient

# the service's JobStatus values → jsctl's phases
PHASES = {"NotStarted": "PENDING", "Starting": "PENDING", "Provisioning": "PENDING", "Preparing": "PENDING",
          "Queued": "PENDING", "Scheduled": "PENDING", "Running": "RUNNING", "Finalizing": "RUNNING",
          "CancelRequested": "RUNNING", "NotResponding": "RUNNING", "Paused": "PAUSED", "Completed": "SUCCEEDED",
          "Failed": "FAILED", "Canceled": "CANCELLED", "Unknown": "UNKNOWN"}
ENDED = ("Completed", "Failed", "Canceled")


class AzureMlClient(ProviderClient):
    provider = "azure-ml"

    def __init__(self, cluster, workspace_dir: str) -> None:  # noqa: ANN001
        super().__init__(cluster, workspace_dir)
        self.settings = AzureMlSettings.of(cluster)
        self.rest = Rest(self.settings.arm_endpoint)

    @property
    def _jobs(self) -> str:
        return f"{self.settings.workspace_id}/jobs"

    def _v(self, **extra: str) -> dict[str, str]:
        return {"api-version": API_VERSION, **extra}

    def probe(self) -> Facts:
        return Facts(self.cluster.name, {"cluster_settings": dict(self.cluster.settings)})

    # ---- submit, adopt ---------------------------------------------------------------------------
    def submit(self, artifact: RenderedArtifact, env: Mapping[str, str],
               upstream: Mapping[str, JobHandle]) -> JobHandle:
        req: AzureMlRequest = artifact.request  # type: ignore[assignment]
        missing = [n for n in req.secrets if n not in env]
        if missing:
            raise ProviderError(f"secret{'s' if len(missing) > 1 else ''} not given to submit: {', '.join(missing)}",
                                hint="export them in the environment of jsctl apply")
        self.rest.call("PUT", req.environment_path, req.environment, self._v())
        for name, url in sorted(req.secrets.items()):  # the value goes to Key Vault only
            self.rest.call("PUT", url, {"value": env[name], "contentType": "text/plain",
                                        "tags": {JOB_ID_TAG: req.job_name}},
                           {"api-version": KEY_VAULT_API_VERSION}, scope=VAULT_SCOPE)
        self.rest.call("PUT", req.job_path, req.body, self._v())
        return JobHandle(self.provider, self.cluster.name, req.job_name)

    def _list(self) -> list[dict[str, Any]]:
        """Every job of the workspace that carries jsctl's job-id tag (one paged list call)."""
        out: list[dict[str, Any]] = []
        page = self.rest.call("GET", self._jobs, params=self._v(tag=JOB_ID_TAG, listViewType="All"))
        while page:
            out += page.get("value") or []
            link = page.get("nextLink")
            page = self.rest.call("GET", link) if link else None
        return out

    def adopt(self, artifact: RenderedArtifact) -> JobHandle | None:
        for job in self._list():
            props = job.get("properties") or {}
            if (props.get("tags") or {}).get(JOB_ID_TAG) == artifact.job_id and \
                    props.get("status") not in ("Failed", "Canceled"):
                return JobHandle(self.provider, self.cluster.name, job["name"])
        return None

    # ---- refresh, cancel ------------------------------------------------------------------------
    def refresh(self, handles: list[JobHandle]) -> dict[JobHandle, LiveStatus]:
        if not handles:
            return {}
        known = {j["name"]: j for j in self._list()}
        out = {}
        for h in handles:
            job = known.get(h.id)
            if job is None and h.id not in known:
                job = self.rest.call("GET", f"{self._jobs}/{h.id}", params=self._v(), ok_missing=True) \
                    if len(handles) == 1 else None
            out[h] = _status(job, h.id)
        return out

    def cancel(self, handle: JobHandle) -> None:
        job = self.rest.call("GET", f"{self._jobs}/{handle.id}", params=self._v(), ok_missing=True)
        if job is None or (job.get("properties") or {}).get("status") in (*ENDED, "CancelRequested"):
            return  # unknown, ended, or being cancelled: nothing to do
        try:
            self.rest.call("POST", f"{self._jobs}/{handle.id}/cancel", params=self._v(), ok_missing=True)
        except ApiError as exc:  # it ended in between: the service refuses to cancel a finished job
            if exc.status not in (400, 409):
                raise

    # ---- logs -------------------------------------------------------------------------------------
    def logs(self, handle: JobHandle, node: str | None = None, follow: bool = False,
             tail: int | None = None) -> Iterator[str]:
        """The job's user logs from run history: `…/runs/{name}/details` lists them with a URL each
        (user_logs/std_log_process_<n>.txt per process; one process per node here)."""
        s = self.settings
        path = (f"/history/v1.0/subscriptions/{s.subscription_id}/resourceGroups/{s.resource_group}/providers/"
                f"Microsoft.MachineLearningServices/workspaces/{s.workspace}/experiments/{s.experiment}/runs/"
                f"{handle.id}/details")
        base = s.logs_endpoint
        seen = 0
        while True:
            details = Rest(base).call("GET", base + path, ok_missing=True) if base != s.arm_endpoint else \
                self.rest.call("GET", path, ok_missing=True)
            files = (details or {}).get("logFiles") or {}
            wanted = f"user_logs/std_log_process_{int(node)}.txt" if node and node.isdigit() else None
            names = [n for n in sorted(files) if n.startswith("user_logs/") and (wanted is None or n == wanted)]
            lines = [line for n in names for line in self.rest.text(files[n]).splitlines(True)]
            ended = (details or {}).get("status") in ENDED or details is None
            if not follow or ended:
                yield from (lines[seen:][-tail:] if tail else [] if tail == 0 else lines[seen:])
                return
            yield from lines[seen:]
            seen = len(lines)
            time.sleep(2.0)

    # ---- --check-remote ---------------------------------------------------------------------------
    def check(self, artifact: RenderedArtifact) -> str:
        """The YAML through azure.ai.ml.load_job (offline schema check), then the compute as the workspace
        has it."""
        req: AzureMlRequest = artifact.request  # type: ignore[assignment]
        from azure.ai.ml import load_job

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, req.job_file)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(dict(artifact.files)[req.job_file])
            try:
                load_job(source=path)
            except Exception as exc:  # noqa: BLE001 - the SDK raises its own ValidationException types
                raise ProviderError(f"azure.ai.ml.load_job refuses {req.job_file}: {exc}") from None
        compute_id = str(req.body["properties"]["computeId"])  # type: ignore[index]
        compute = self.rest.call("GET", compute_id, params=self._v(), ok_missing=True)
        name = compute_id.rsplit("/", 1)[-1]
        if compute is None:
            raise ProviderError(f"workspace {self.settings.workspace} has no compute {name}")
        props = (compute.get("properties") or {})
        scale = ((props.get("properties") or {}).get("scaleSettings") or {})
        nodes = req.body["properties"]["resources"]["instanceCount"]  # type: ignore[index]
        if scale.get("maxNodeCount") is not None and int(scale["maxNodeCount"]) < int(nodes):
            raise ProviderError(f"compute {name} scales to {scale['maxNodeCount']} nodes; the job needs {nodes}")
        return (f"YAML valid (azure.ai.ml.load_job); compute {name}: {props.get('computeType', '?')}, "
                f"{props.get('provisioningState', '?')}, up to {scale.get('maxNodeCount', '?')} nodes")


def _status(job: dict[str, Any] | None, name: str) -> LiveStatus:
    if job is None:
        return LiveStatus("UNKNOWN", "NotFound", f"Azure ML has no job {name}")
    props = job.get("properties") or {}
    state = str(props.get("status") or "Unknown")
    return LiveStatus(PHASES.get(state, "UNKNOWN"), state, None)
