"""The contract harness for gcp-batch: the official client sends its real REST requests to a local
stand-in for batch.googleapis.com (tests/integration/gcp/fakebatch.py, one per test session, in this
process), which records them and moves jobs through QUEUED, SCHEDULED, RUNNING and SUCCEEDED. Each
workspace is a project of its own (`jsctl-<hash>`): job ids repeat across workspaces, Batch job names
are unique per project and region.

The stand-in runs nothing. For the jobs that must have run (the dump jobs), `emulate_node` plays task
0's VM here: it takes the job's create request as the service received it, builds the container's
environment as Batch would (BATCH_TASK_INDEX, BATCH_TASK_COUNT, BATCH_HOSTS_FILE when requireHostsFile,
the task environment's variables, secretVariables resolved from the stand-in's Secret Manager, to which
apply added the value) and runs the runnable's `entrypoint commands...` (`/bin/sh -c SCRIPT`) on this
machine (the image is ignored). Cloud Logging answers with the stand-in's state-change entries, not
what a job printed, so the CLI test's log check is skipped with that reason; torchrun groups across
tasks (test_launch_shapes) cannot form, as no task runs."""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from contractkit import Harness
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.status import JobHandle

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration" / "gcp"))
import fakebatch  # noqa: E402

_FAKE: fakebatch.FakeBatch | None = None


def fake() -> fakebatch.FakeBatch:
    global _FAKE
    if _FAKE is None:
        _FAKE = fakebatch.FakeBatch(step_s=0.2, run_s=3.0).start()  # RUNNING 3 s, as kwok's pods
        atexit.register(_FAKE.stop)
    return _FAKE


class GcpBatchHarness(Harness):
    provider = "gcp-batch"
    cluster = "gcp"
    timeout = 30.0
    image = "python:3.11-slim"  # never pulled: the stand-in runs nothing
    long_label = ("fake-run", "long")
    logs_unavailable = ("the local Batch stand-in runs no task: Cloud Logging answers with its state-change entries, "
                        "not what the job printed")
    runs_no_processes = "the local Batch stand-in runs no task (emulate_node plays task 0's part, not a group's)"

    def __init__(self, ws: Path) -> None:
        super().__init__(ws)
        self.project = "jsctl-" + hashlib.sha256(str(ws.resolve()).encode()).hexdigest()[:12]
        self.parent = f"projects/{self.project}/locations/us-central1"

    def inventory(self) -> str:
        return (f"version: jetstream.v1\nclusters:\n  - name: gcp\n    provider: gcp-batch\n"
                f"    project: {self.project}\n    region: us-central1\n"
                f"    instance_types: [a2-highgpu-1g, a2-ultragpu-8g]\n    endpoint_url: {fake().url}\n"
                f"    secrets:\n      JS_CONTRACT_TOKEN: projects/{self.project}/secrets/js-contract-token\n")

    def compute(self, gpus: bool = False) -> str:
        if gpus:
            return "compute:\n  resources:\n    gpu:\n      type: a100-80gb\n      count: 8\n  time_limit: 10m\n"
        return super().compute(gpus)

    def multinode_compute(self) -> str:
        return ("compute:\n  resources:\n    gpu:\n      type: a100-40gb\n      count: 2\n      per_node: 1\n"
                "  time_limit: 10m\n")

    def _job(self, name: str) -> fakebatch.fakestate.FakeJob:
        job = fake().jobs.get(name)
        assert job is not None, f"the stand-in has no job {name}"
        return job

    def emulate_node(self, handle: JobHandle) -> None:
        job = self._job(handle.id)
        runnable = job.body["taskGroups"][0]["taskSpec"]["runnables"][0]["container"]
        env = {**os.environ, **fakebatch.task_environment(job.body, fake(), 0, self.ws, job.uid)}
        argv = [runnable["entrypoint"], *runnable["commands"]]
        res = subprocess.run(argv, env=env, cwd=str(self.ws), capture_output=True, text=True, timeout=self.timeout)
        assert res.returncode == 0, (res.returncode, res.stdout, res.stderr)

    def received(self, handle: JobHandle, artifact: RenderedArtifact) -> str:
        """The body the stand-in received, compared with the planned one as Batch Job messages (the wire
        form writes enums as numbers): equal → the artifact's digest."""
        from google.cloud import batch_v1

        body = self._job(handle.id).body
        planned = dict(artifact.request.job)
        if batch_v1.Job.from_json(json.dumps(body)) == batch_v1.Job.from_json(json.dumps(planned)):
            return artifact.digest
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()

    def jobs_named(self, job_id: str) -> list[str]:
        name = f"{self.parent}/jobs/{job_id}"
        job = fake().jobs.get(name)
        return [name] if job is not None and job.deleted_at is None else []

    def unknown_handle(self) -> JobHandle:
        return JobHandle(self.provider, self.cluster, f"{self.parent}/jobs/js-nosuchjob-0000")


HARNESS = GcpBatchHarness
