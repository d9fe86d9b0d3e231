"""testcloud: a jsctl provider that lives outside jsctl, installed only through its entry point.

It plays a cloud batch service on this machine. A cluster entry in jsctl.yaml:

    clusters:
      - name: tc
        provider: testcloud
        cloud: aws                  # whose instance catalog it offers and prices (aws | gcp | azure)
        region: us-east-1
        instance_types: [p4de.24xlarge]   # optional allow-list; default: every GPU type of the cloud
        spot: true                  # offer spot capacity where the catalog prices it
        root: .testcloud            # the service's "engine": a directory (relative to jsctl.yaml)

It renders a typed request (`TestCloudRequest`, the body a batch API would take) and one file, the
job definition as the service stores it. Its client submits by writing that request under
`root/jobs/<id>/` and starting the command as a detached process (`jsctl_testcloud.engine`); refresh
reads every job's status file in one call, cancel kills it, adopt finds a job already submitted for
a job id, logs reads its log. Nothing here needs a change in jsctl's core: that is what it tests.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from jsctl.config.diagnostics import Diagnostic
from jsctl.model.artifact import RenderedArtifact, Request
from jsctl.model.catalog import Catalog, check_cluster, instance_offers
from jsctl.model.cluster import Capabilities, Cluster, Facts, Offer
from jsctl.model.job import JobContext
from jsctl.model.runtime_names import RuntimeNames
from jsctl.providers.base import Provider
from jsctl.render import launch

NAME = "testcloud"
CLOUDS = ("aws", "gcp", "azure")
# Set by the service when the job runs (like AWS_BATCH_JOB_NODE_INDEX): a job's arguments may use ${NAME}.
RUNTIME_NAMES = ("TESTCLOUD_JOB_ID", "TESTCLOUD_NODE_INDEX", "TESTCLOUD_NUM_NODES", "TESTCLOUD_LABELS")

SETTINGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["cloud", "root"],
    "additionalProperties": False,
    "properties": {
        "cloud": {"enum": list(CLOUDS), "description": "whose instance catalog this cluster offers and prices"},
        "region": {"type": "string"},
        "instance_types": {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": True,
                           "description": "allow-list of catalog instance types (default: every GPU type)"},
        "spot": {"type": "boolean", "description": "offer spot capacity where the catalog prices it"},
        "root": {"type": "string", "minLength": 1,
                 "description": "the service's state directory (relative to jsctl.yaml)"},
    },
}


@dataclass(frozen=True)
class TestCloudRequest(Request):
    """What the service's SubmitJob takes, field for field; the client sends exactly this."""

    __test__ = False  # not a pytest test class

    IN_PLACE = ("labels",)  # tags: the service updates them on a running job

    job_name: str
    address: str
    instance_type: str
    nodes: int
    capacity: str  # on-demand | spot
    region: str | None
    command: tuple[str, ...]  # exec form: never through a shell
    environment: Mapping[str, str]
    secrets: tuple[str, ...]  # names; values are given at submit and live only in the job's environment
    workdir: str
    labels: Mapping[str, str] = field(default_factory=dict)
    timeout_s: int | None = None


class TestCloudProvider(Provider):
    __test__ = False
    name = NAME

    def capabilities(self) -> Capabilities:
        return Capabilities(node_logs=False)

    def settings_schema(self) -> dict[str, Any]:
        return SETTINGS_SCHEMA

    def runtime_names(self) -> RuntimeNames:
        return RuntimeNames(frozenset(RUNTIME_NAMES))

    def check_cluster(self, cluster: Cluster, catalog: Catalog) -> list[Diagnostic]:
        """Instance types the catalog lacks (with a did-you-mean), spot where it has no price."""
        return [Diagnostic(p.severity, "TESTCLOUD01", p.message, "")
                for p in check_cluster(cluster, catalog, str(cluster.settings["cloud"]))]

    def offers(self, cluster: Cluster, facts: Facts | None, catalog: Catalog) -> list[Offer]:
        """The catalog's instance types of the cluster's cloud, with their list prices."""
        return instance_offers(cluster, catalog, str(cluster.settings["cloud"]))

    def request_type(self) -> type[TestCloudRequest]:
        return TestCloudRequest

    def render(self, job: JobContext, facts: Facts | None) -> RenderedArtifact:
        spec = job.spec
        p = job.placement
        settings = job.cluster.settings if job.cluster is not None else {}
        mounts = {m.name: (m.path if os.path.isabs(m.path) else os.path.normpath(os.path.join(job.workdir, m.path)))
                  for m in (*spec.inputs, *spec.outputs)}
        env = launch.environment(job, mounts)
        request = TestCloudRequest(
            job_name=job.job_id, address=job.address, instance_type=p.pool, nodes=p.nodes,
            capacity="spot" if p.capacity == "spot" else "on-demand", region=settings.get("region"),
            command=tuple(launch.command(job)), environment=env, secrets=tuple(spec.environment.secrets),
            workdir=job.workdir, labels=dict(spec.labels), timeout_s=spec.compute.time_limit_s)
        definition = json.dumps({"jobDefinitionName": job.job_id, "type": "multinode" if p.nodes > 1 else "container",
                                 "instanceType": p.pool, "numNodes": p.nodes}, indent=2, sort_keys=True) + "\n"
        notes = [f"{p.nodes} × {p.pool} ({request.capacity})"]
        if spec.environment.image:
            notes.append(f"image {spec.environment.image} is not used: testcloud runs on this machine's Python")
        return RenderedArtifact("testcloud-job", job.job_id, (("job-definition.json", definition),), request,
                                f"testcloud job, {p.nodes} × {p.pool}", tuple(notes),
                                secrets=tuple(spec.environment.secrets), upstream=tuple(job.depends_on))

    def client(self, cluster: Cluster, workspace_dir: str):
        from jsctl_testcloud.client import TestCloudClient  # noqa: PLC0415

        return TestCloudClient(cluster, workspace_dir)
