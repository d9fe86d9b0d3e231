"""The contract harness for aws-batch: moto_server in Batch's simple mode, started by the tests on
127.0.0.1 (tests/integration/aws/awsci.py; one per session, on a free port), each workspace a
directory of its own (its jobs carry a `jsctl:workspace` tag, so two workspaces' jobs with the same
job id stay apart on the same queues).

moto's simple mode runs no container: SubmitJob ends a job at once. What it keeps: the job
definition, the job (queue, tags, dependsOn, nodeProperties), its attempts and TerminateJob. So:

- a job whose command sleeps (the `sleeper`, the CLI test's `echo ...; sleep 60`) carries the label
  `moto-run: long` (an AWS tag on the job), which tests/integration/aws/motobatch.py (moto plus two
  per-job knobs) honours by leaving the job RUNNING until it is terminated;
- for the jobs that must have run (the dump jobs), `emulate_node` plays AWS Batch's container agent on
  this machine (awsci.run_container): it reads the job and its definition as moto holds them, builds
  each node's environment as AWS Batch would (the definition's secrets read back from SSM, the
  AWS_BATCH_* variables of a multinode job, the main node's address on the other nodes) and runs the
  container's command here (the image is ignored), node after node;
- what a job prints reaches CloudWatch Logs only through that emulation (moto writes no log events),
  so the CLI test's log check is skipped for the sleeper, with that reason.
"""
from __future__ import annotations

import sys
from pathlib import Path

from contractkit import Harness, subset_differences
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.status import JobHandle

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration" / "aws"))
import awsci  # noqa: E402

WORKSPACE_TAG = "jsctl:workspace"


class AwsBatchHarness(Harness):
    provider = "aws-batch"
    cluster = "aws"
    timeout = 30.0
    image = "python:3.11-slim"  # never pulled: the stand-in runs nothing
    long_label = ("moto-run", "long")
    logs_unavailable = ("moto's simple mode runs no container and writes no CloudWatch Logs events: the sleeper's "
                        "output exists nowhere (test_aws_batch_cli.py reads a stream written as awslogs would)")
    runs_no_processes = ("moto's simple mode runs no container (emulate_node runs the nodes one after another, so "
                         "torchrun's rendezvous across them cannot happen)")

    def __init__(self, ws: Path) -> None:
        super().__init__(ws)
        self.server = awsci.server()

    def inventory(self) -> str:
        return self.server.inventory()

    def emulate_node(self, handle: JobHandle) -> None:
        for res in awsci.run_container(self.server, handle.id, str(self.ws), timeout=self.timeout):
            assert res.returncode == 0, (res.returncode, res.stdout, res.stderr)

    def received(self, handle: JobHandle, artifact: RenderedArtifact) -> str:
        """The job and its definition as moto holds them: every field of the planned definition's
        container (or node properties), the job's name, queue and tags (less the client's workspace tag)
        must read back unchanged; then the artifact's digest, else what differs."""
        batch = self.server.boto("batch")
        (job,) = batch.describe_jobs(jobs=[handle.id])["jobs"]
        (held,) = batch.describe_job_definitions(jobDefinitions=[job["jobDefinition"]])["jobDefinitions"]
        want = artifact.request.to_dict()
        d = want["definition"]
        diffs = []
        if d["type"] == "multinode":  # moto's DescribeJobDefinitions leaves nodeProperties out; DescribeJobs has them
            diffs += subset_differences(d["nodeProperties"], job.get("nodeProperties"), "nodeProperties")
        else:
            diffs += subset_differences(d["containerProperties"], held.get("containerProperties"), "container")
        for rules in (d.get("retryStrategy") or {}).get("evaluateOnExit", ()), \
                (held.get("retryStrategy") or {}).get("evaluateOnExit", ()):
            for rule in rules:  # "The values aren't case sensitive" (AWS); moto keeps them lowercased
                rule["action"] = rule["action"].upper()
        for key in ("jobDefinitionName", "type", "retryStrategy", "timeout", "tags", "platformCapabilities"):
            diffs += subset_differences(d.get(key), held.get(key), key)
        tags = {k: v for k, v in (job.get("tags") or {}).items() if k != WORKSPACE_TAG}
        diffs += subset_differences(want["submit"]["tags"], tags, "job.tags")
        if job["jobName"] != want["submit"]["jobName"] or not job["jobQueue"].endswith("/" + want["job_queue"]):
            diffs.append(f"job {job['jobName']} on {job['jobQueue']}")
        return artifact.digest if not diffs else "; ".join(diffs)

    def jobs_named(self, job_id: str) -> list[str]:
        from jsctl.providers.aws_batch.client import workspace_tag

        batch = self.server.boto("batch")
        ids = [j["jobId"] for q in awsci.QUEUES.values() for j in
               batch.list_jobs(jobQueue=q, filters=[{"name": "JOB_NAME", "values": [job_id]}])["jobSummaryList"]]
        jobs = batch.describe_jobs(jobs=ids)["jobs"] if ids else []
        mine = workspace_tag(str(self.ws))
        return [j["jobId"] for j in jobs if (j.get("tags") or {}).get(WORKSPACE_TAG) == mine]

    def unknown_handle(self) -> JobHandle:
        return JobHandle(self.provider, self.cluster, "00000000-0000-0000-0000-000000000000")


HARNESS = AwsBatchHarness
