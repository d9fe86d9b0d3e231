"""aws-batch's client against moto_server: definitions registered once per content, adopt by tag after
a kill -9 of apply, DescribeJobs batched."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from awsci import job_file, record
from jsctl.model.status import JobHandle

WORKFLOW = """version: jetstream.v1
workflow:
  name: pair
  jobs:
    - {name: first, type: job, spec: first.yaml}
    - {name: second, type: job, spec: second.yaml, dependsOn: [first]}
"""
# Runs `jsctl apply` in a process of its own that SIGKILLs itself at a chosen point of the first
# or second submit: after the first job was submitted (its state write lost), or as the second begins.
KILLER = """
import os, signal, sys
from jsctl.providers.aws_batch.client import AwsBatchClient
real = AwsBatchClient.submit
calls = []
def submit(self, artifact, env, upstream):
    calls.append(artifact.job_id)
    if sys.argv[1] == "before-second" and len(calls) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    handle = real(self, artifact, env, upstream)
    if sys.argv[1] == "after-first":
        os.kill(os.getpid(), signal.SIGKILL)
    return handle
AwsBatchClient.submit = submit
from jsctl.cli import cli
cli(["apply", "-f", "pipeline.yaml", "--auto-approve"])
"""


def jobs_named(moto, name: str) -> list[str]:
    batch = moto.boto("batch")
    ids = []
    for queue in ("jsctl-gpu-od", "jsctl-gpu-spot"):
        ids += [j["jobId"] for j in batch.list_jobs(jobQueue=queue, filters=[{"name": "JOB_NAME",
                                                                              "values": [name]}])["jobSummaryList"]]
    return ids


def test_kill_9_between_two_jobs_converges_without_duplicates(ws, moto, jsctl):
    (ws / "pipeline.yaml").write_text(WORKFLOW)
    (ws / "first.yaml").write_text(job_file("first", ["true"]))
    (ws / "second.yaml").write_text(job_file("second", ["true"]))
    for point in ("after-first", "before-second"):
        state = ws / ".jsctl" / "state.json"
        if state.exists():
            code, out, err = jsctl("destroy", "-f", "pipeline.yaml", "--auto-approve")
            assert code == 0, out + err
        res = subprocess.run([sys.executable, "-c", KILLER, point], cwd=ws, capture_output=True, text=True,
                             timeout=60, env=os.environ)
        assert res.returncode == -signal.SIGKILL, (res.returncode, res.stdout, res.stderr)
        code, out, err = jsctl("apply", "-f", "pipeline.yaml", "--auto-approve")
        assert code == 0, out + err
        assert ("adopting it" in out) == (point == "after-first"), out
        first, second = record(ws, "workflow.pair.job.first"), record(ws, "workflow.pair.job.second")
        assert jobs_named(moto, first["job_id"]) == [JobHandle.parse(first["handle"]).id]  # submitted once
        assert jobs_named(moto, second["job_id"]) == [JobHandle.parse(second["handle"]).id]
        (job,) = moto.boto("batch").describe_jobs(jobs=[JobHandle.parse(second["handle"]).id])["jobs"]
        assert job["dependsOn"] == [{"jobId": JobHandle.parse(first["handle"]).id}]


def test_an_unchanged_definition_is_registered_once(ws, moto, jsctl):
    (ws / "once.yaml").write_text(job_file("once", ["true"]))
    code, out, err = jsctl("plan", "-f", "once.yaml", "-out", "plan.json")
    assert code == 0, out + err
    from jsctl.config import workspace
    from jsctl.plan import planfile
    from jsctl.providers import registry

    (change,) = planfile.load(str(ws / "plan.json")).changes
    client = registry.get("aws-batch").client(workspace.load(str(ws / "jsctl.yaml")).cluster("aws"), str(ws))
    batch = moto.boto("batch")

    def revisions() -> list[tuple[int, str]]:
        return sorted((d["revision"], d["status"]) for d in
                      batch.describe_job_definitions(jobDefinitionName=change.job_id)["jobDefinitions"])

    arn = client.register(change.artifact.request)
    assert client.register(change.artifact.request) == arn  # again: the same revision
    one, two = client.submit(change.artifact, {}, {}), client.submit(change.artifact, {}, {})
    assert one != two and revisions() == [(1, "ACTIVE")]
    jobs = batch.describe_jobs(jobs=[one.id, two.id])["jobs"]
    assert {j["jobDefinition"] for j in jobs} == {arn}
    batch.deregister_job_definition(jobDefinition=arn)  # an INACTIVE revision is not reused
    assert client.register(change.artifact.request) != arn
    assert revisions() == [(1, "INACTIVE"), (2, "ACTIVE")]


def test_refresh_asks_100_jobs_a_call(ws, moto, jsctl):
    (ws / "r.yaml").write_text(job_file("r", ["true"]))
    code, out, err = jsctl("apply", "-f", "r.yaml", "--auto-approve")
    assert code == 0, out + err
    known = JobHandle.parse(record(ws, "job.r")["handle"])
    from jsctl.config import workspace
    from jsctl.providers import registry

    client = registry.get("aws-batch").client(workspace.load(str(ws / "jsctl.yaml")).cluster("aws"), str(ws))
    unknown = [JobHandle("aws-batch", "aws", f"00000000-0000-0000-0000-{i:012d}") for i in range(150)]
    start = len(moto.requests())
    live = client.refresh([known, known, *unknown])
    calls = [r for r in moto.requests()[start:] if r["url"].endswith("/v1/describejobs")]
    assert len(calls) == 2 and [len(json.loads(c["body"])["jobs"]) for c in calls] == [100, 51]
    assert live[known].phase == "SUCCEEDED" and {live[h].phase for h in unknown} == {"UNKNOWN"}
    client.cancel(unknown[0])  # unknown: not an error
    client.cancel(known)  # ended: nothing to do
    assert client.refresh([known])[known].phase == "SUCCEEDED"


def test_adopt_takes_only_this_workspaces_job(ws, moto, jsctl, tmp_path_factory):
    (ws / "twin.yaml").write_text(job_file("twin", ["true"]))
    code, out, err = jsctl("plan", "-f", "twin.yaml", "-out", "plan.json")
    assert code == 0, out + err
    from jsctl.config import workspace
    from jsctl.plan import planfile
    from jsctl.providers import registry

    (change,) = planfile.load(str(ws / "plan.json")).changes
    cluster = workspace.load(str(ws / "jsctl.yaml")).cluster("aws")
    mine = registry.get("aws-batch").client(cluster, str(ws))
    other = registry.get("aws-batch").client(cluster, str(tmp_path_factory.mktemp("other")))
    handle = mine.submit(change.artifact, {}, {})
    assert mine.adopt(change.artifact) == handle and other.adopt(change.artifact) is None
    assert Path(ws).exists()
