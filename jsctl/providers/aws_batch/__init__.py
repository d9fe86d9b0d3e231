"""AWS Batch (`aws-batch`): the pure half. Offers and prices come from the instance catalog
(CloudProvider); a job renders as a job definition (single-node container, or multinode parallel for
more than one node) registered idempotently by content hash, and a SubmitJob body on the queue of its
capacity. The client (boto3, imported lazily) lives in client.py."""
from __future__ import annotations

import json
from typing import Any

from jsctl.config.diagnostics import Diagnostic, error, warning
from jsctl.errors import ProviderError
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.cluster import Capabilities, Cluster, Facts
from jsctl.model.job import JobContext
from jsctl.model.runtime_names import RuntimeNames
from jsctl.providers.aws_batch import definition
from jsctl.providers.aws_batch.request import AwsBatchRequest
from jsctl.providers.aws_batch.settings import SCHEMA, AwsSettings
from jsctl.providers.base import ProviderClient
from jsctl.providers.cloud import CloudProvider
from jsctl.render import launch

# set by AWS Batch in every container (AWS_BATCH_JOB_ID, AWS_BATCH_JOB_NODE_INDEX, ...), and by the prologue
RUNTIME_NAMES = RuntimeNames(frozenset({"NODE_RANK", "JETSTREAM_NODE_RANK"}), ("AWS_BATCH_",))


class AwsBatchProvider(CloudProvider):
    name = "aws-batch"
    cloud = "aws"
    code = "AWS"

    def capabilities(self) -> Capabilities:
        return Capabilities(node_logs=True, dependencies=True)

    def settings_schema(self) -> dict[str, Any]:
        return SCHEMA

    def runtime_names(self) -> RuntimeNames:
        return RUNTIME_NAMES

    @staticmethod
    def settings_for(job: JobContext, facts: Facts | None) -> AwsSettings:
        if job.cluster is not None:
            return AwsSettings.of(job.cluster)
        if facts is not None and "cluster_settings" in facts.data:
            return AwsSettings.of(Cluster(job.placement.cluster, "aws-batch", facts.data["cluster_settings"]))
        raise ProviderError(f"no settings for cluster {job.placement.cluster}")

    def validate(self, job: JobContext, facts: Facts | None) -> list[Diagnostic]:
        file = job.spec.file
        try:
            settings = self.settings_for(job, facts)
            settings.queue(job.placement.capacity)
        except ProviderError as exc:
            return [error("AWS02", exc.message, file)]
        out = []
        if not job.spec.environment.image:
            out.append(error("AWS03", "an AWS Batch job needs environment.image", file))
        if len(job.job_id) > 128:
            out.append(error("AWS04", f"job id {job.job_id!r} is longer than AWS Batch's 128 characters", file))
        hooks = [k for k, v in (("pre_run", job.spec.lifecycle.pre_run), ("post_success", job.spec.lifecycle.post_success),
                                ("post_failure", job.spec.lifecycle.post_failure)) if v]
        if hooks:
            out.append(warning("AWS05", f"{', '.join(hooks)}: not run on AWS Batch (the container runs the "
                               "launcher itself, so that signals reach it)", file))
        _, skipped = definition.tags(job)
        if skipped:
            out.append(warning("AWS06", f"labels {', '.join(skipped)} are not valid AWS tags: left out", file))
        return out

    def render(self, job: JobContext, facts: Facts | None) -> RenderedArtifact:
        settings = self.settings_for(job, facts)
        body, submit, written, skipped = definition.build(job, settings)
        name = f"{job.job_id}.json"
        text = json.dumps({"registerJobDefinition": body, "submitJob": submit}, indent=2, sort_keys=True) + "\n"
        request = AwsBatchRequest(file=name, region=settings.region, job_queue=submit["jobQueue"], definition=body,
                                  submit=submit, content_hash=body["tags"][definition.HASH_TAG],
                                  secret_parameters=written, log_group=settings.log_group,
                                  endpoint_url=settings.endpoint_url)
        p = job.placement
        kind = "multinode parallel job" if p.nodes > 1 else "container job"
        summary = f"AWS Batch {kind}: {p.nodes} × {p.pool} on queue {submit['jobQueue']}"
        notes = [f"job definition {job.job_id} (content hash {request.content_hash}): registered at apply unless an "
                 "ACTIVE revision carries the same hash"]
        if written:
            notes.append("secrets " + ", ".join(n for n, _ in written) + f": written at apply as SSM SecureString "
                         f"parameters under {settings.secret_prefix}/{job.job_id}/ from jsctl apply's environment; "
                         "the job definition references them by name")
        mapped = [s for s in job.spec.environment.secrets if s in settings.secrets]
        if mapped:
            notes.append("secrets " + ", ".join(mapped) + ": read by ECS from the ARNs in jsctl.yaml (jsctl apply "
                         "needs no value for them)")
        if job.spec.inputs or job.spec.outputs:
            notes.append("storage paths are not mounted by jsctl on AWS Batch: the image or the compute "
                         "environment's launch template must provide them (JETSTREAM_MOUNT_* name them)")
        if launch.deepspeed_config(job):
            notes.append("the generated DeepSpeed config reaches the job in JETSTREAM_STRATEGY only (no file)")
        if job.depends_on:
            notes.append("dependsOn: AWS Batch starts it after its upstream jobs succeed")
        return RenderedArtifact("aws-batch-job", job.job_id, ((name, text),), request, summary, tuple(notes),
                                secrets=tuple(n for n, _ in written), upstream=job.depends_on)

    def request_type(self) -> type[AwsBatchRequest]:
        return AwsBatchRequest

    def client(self, cluster: Cluster, workspace_dir: str) -> ProviderClient:
        from jsctl.providers.aws_batch.client import AwsBatchClient

        return AwsBatchClient(cluster, workspace_dir)
