"""The gcp-batch provider: a Google Cloud Batch job per jsctl job (the pure half here; the client, with
google-cloud-batch and google-cloud-logging, in client.py, imported only when a command needs it).

Offers and prices come from the instance catalog (jsctl.providers.cloud); render gives a typed
GcpBatchRequest (CreateJob's parent, job id and body) and the body as a JSON file. Secrets travel as
Secret Manager references (`secretVariables`), never as values."""
from __future__ import annotations

import json
from typing import Any

from jsctl.config.diagnostics import Diagnostic, error, warning
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.cluster import Cluster, Facts
from jsctl.model.job import JobContext
from jsctl.model.runtime_names import RuntimeNames
from jsctl.providers.base import ProviderClient
from jsctl.providers.cloud import CloudProvider
from jsctl.providers.gcp_batch import body, settings
from jsctl.providers.gcp_batch.request import GcpBatchRequest
from jsctl.providers.gcp_batch.settings import JOB_ID, GcpSettings, valid_label

# what Batch sets in every task (BATCH_TASK_INDEX, BATCH_HOSTS_FILE, ...) and what the script derives
RUNTIME_NAMES = RuntimeNames(frozenset({"NODE_RANK", "JETSTREAM_NODE_RANK", "JETSTREAM_RESTART_COUNT"}), ("BATCH_",))


class GcpBatchProvider(CloudProvider):
    name = "gcp-batch"
    cloud = "gcp"
    code = "GCP"

    def settings_schema(self) -> dict[str, Any]:
        return settings.schema()

    def runtime_names(self) -> RuntimeNames:
        return RUNTIME_NAMES

    def settings_for(self, job: JobContext) -> GcpSettings:
        return GcpSettings.of(job.cluster or Cluster(job.placement.cluster, self.name, {}))

    def validate(self, job: JobContext, facts: Facts | None) -> list[Diagnostic]:
        file = job.spec.file
        s = self.settings_for(job)
        spec = job.spec
        out: list[Diagnostic] = []
        if not JOB_ID.match(job.job_id):
            out.append(error("GCP02", f"job id {job.job_id!r} is not a Batch job id (lowercase letters, digits and "
                             "'-', at most 63 characters)", file, hint="rename the job: lowercase letters, digits, '-'"))
        if not spec.environment.image:
            out.append(error("GCP03", "a gcp-batch job needs environment.image (its task runs in a container)", file))
        unmapped = [n for n in spec.environment.secrets if n not in s.secrets]
        if unmapped:
            out.append(error("GCP04", f"secret{'s' if len(unmapped) > 1 else ''} {', '.join(unmapped)} not mapped to "
                             f"Secret Manager in cluster {s.cluster}", file,
                             hint="add secrets: {NAME: projects/P/secrets/S} to the cluster in jsctl.yaml"))
        for d in self._notes(job):
            out.append(warning(d[0], d[1], file))
        return out

    def _notes(self, job: JobContext) -> list[tuple[str, str]]:
        spec = job.spec
        out = []
        bad = [k for k, v in spec.labels if not valid_label(k, v)]
        if bad:
            out.append(("GCP05", f"labels {', '.join(bad)} are not valid GCP labels (lowercase letters, digits, '_' "
                                 "and '-'): kept in jsctl's state only"))
        hooks = [k for k, v in (("pre_run", spec.lifecycle.pre_run), ("post_success", spec.lifecycle.post_success),
                                ("post_failure", spec.lifecycle.post_failure)) if v]
        if hooks:
            out.append(("GCP06", f"{', '.join(hooks)}: not run on gcp-batch (the task's one runnable is the command)"))
        if spec.inputs or spec.outputs:
            out.append(("GCP07", "storage is not mounted by gcp-batch: the job sees the paths as written "
                                 "(mount_path, else path); bring them in the image or a volume of your own"))
        if spec.recovery.max_restarts > body.MAX_RETRIES:
            out.append(("GCP08", f"recovery.max_restarts {spec.recovery.max_restarts}: Batch retries a task at "
                                 f"most {body.MAX_RETRIES} times"))
        return out

    def render(self, job: JobContext, facts: Facts | None) -> RenderedArtifact:
        s = self.settings_for(job)
        doc = body.job(job, s)
        file = f"{job.job_id}.json"
        uploads = tuple({"env": n, "secret": s.secrets[n]} for n in job.spec.environment.secrets
                        if n in s.secrets and "/versions/" not in s.secrets[n])
        request = GcpBatchRequest(parent=s.parent, job_id=job.job_id, job=doc, file=file, secret_uploads=uploads,
                                  endpoint_url=s.endpoint_url)
        p = job.placement
        capacity = "SPOT" if p.capacity == "spot" else "STANDARD"
        notes = [f"Batch job {request.name}: {p.nodes} task{'s' if p.nodes != 1 else ''} × {p.pool} ({capacity})"]
        if uploads:
            notes.append("secrets " + ", ".join(u["env"] for u in uploads) + ": apply adds each value from its "
                         "environment as a new Secret Manager version; the job reads versions/latest")
        notes += [m for _, m in self._notes(job)]
        summary = f"Batch job, {p.nodes} × {p.pool}" + (f" ({p.gpus_per_node} GPUs each)" if p.gpus_per_node else "")
        return RenderedArtifact("gcp-batch-job", job.job_id,
                                ((file, json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"),),
                                request, summary, tuple(notes), secrets=tuple(u["env"] for u in uploads),
                                upstream=tuple(job.depends_on))

    def request_type(self) -> type[GcpBatchRequest]:
        return GcpBatchRequest

    def client(self, cluster: Cluster, workspace_dir: str) -> ProviderClient:
        from jsctl.providers.gcp_batch.client import GcpBatchClient

        return GcpBatchClient(cluster, workspace_dir)
