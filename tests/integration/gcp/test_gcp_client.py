"""GcpBatchClient against the local Batch stand-in: create, get, list (adopt, batched refresh), cancel,
logs from Cloud Logging, and a quota error that records nothing as live."""
from __future__ import annotations

import json
import time

import gcpkit
from jsctl.model.cluster import Cluster
from jsctl.model.status import JobHandle
from jsctl.providers import registry

SLEEPER = gcpkit.GPU_JOB.replace("  name: train\n", "  name: sleeper\n  labels:\n    fake-run: long\n")


def client(fake):
    return registry.get("gcp-batch").client(Cluster("gcp", "gcp-batch", {
        "project": "jsctl-ci", "region": "us-central1", "endpoint_url": fake.url}), ".")


def until(check, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    return value


def test_create_get_list_and_states(fake, tmp_path):
    c = gcpkit.plan_one(tmp_path, inventory_text=gcpkit.inventory(fake.url))
    cl = client(fake)
    assert cl.adopt(c.artifact) is None
    handle = cl.submit(c.artifact, {}, {})
    assert str(handle) == f"gcp-batch://gcp/projects/jsctl-ci/locations/us-central1/jobs/{c.job_id}"
    assert JobHandle.parse(str(handle)) == handle
    create = [r for r in fake.requests if r["method"] == "POST"][0]
    assert create["path"] == "/v1/projects/jsctl-ci/locations/us-central1/jobs"
    assert create["query"]["jobId"] == [c.job_id]
    group = create["body"]["taskGroups"][0]
    assert (group["taskCount"], group["parallelism"], group["requireHostsFile"], group["permissiveSsh"]) == \
        ("2", "2", True, True)
    assert create["body"]["labels"]["jsctl-job-id"] == c.job_id
    seen = set()
    live = until(lambda: (s := cl.refresh([handle])[handle]) and (seen.add(s.engine_state) or s.terminal) and s)
    assert live.phase == "SUCCEEDED" and live.exit_code == 0 and live.started_at and live.ended_at
    assert "SUCCEEDED" in seen
    assert cl.adopt(c.artifact) == handle  # ListJobs by the job-id label
    lists = [r for r in fake.requests if r["method"] == "GET" and r["path"].endswith("/jobs")]
    assert lists and lists[-1]["query"]["filter"] == [f'labels.jsctl-job-id="{c.job_id}"']
    lines = list(cl.logs(handle))
    assert lines and all(line.startswith(f"job {c.job_id}: ") for line in lines)
    assert lines[-1].strip().endswith("SUCCEEDED") and list(cl.logs(handle, tail=1)) == lines[-1:]
    events = cl.events(handle)
    assert [e.message.split(" for job")[0] for e in events] == [
        "Job state is set from QUEUED to SCHEDULED", "Job state is set from SCHEDULED to RUNNING",
        "Job state is set from RUNNING to SUCCEEDED"]
    assert events[0].object == f"Job/{c.job_id}" and events[0].time <= events[-1].time


def test_refresh_is_one_list_call_and_unknown_is_unknown(fake, tmp_path):
    cl = client(fake)
    handles = []
    for name in ("a", "b", "c"):
        c = gcpkit.plan_one(tmp_path, SLEEPER.replace("name: sleeper", f"name: {name}"), gcpkit.inventory(fake.url))
        handles.append(cl.submit(c.artifact, {}, {}))
    unknown = JobHandle("gcp-batch", "gcp", "projects/jsctl-ci/locations/us-central1/jobs/js-nosuchjob-0000")
    before = len(fake.requests)
    answers = cl.refresh([*handles, unknown, handles[0]])
    calls = fake.requests[before:]
    assert [r["method"] for r in calls] == ["GET", "GET"]  # one ListJobs, one GetJob for the unknown job
    assert calls[0]["query"]["filter"][0].count(" OR ") == 3  # four job ids
    assert {answers[h].phase for h in handles} <= {"PENDING", "RUNNING"}
    assert answers[unknown].phase == "UNKNOWN" and answers[unknown].engine_state == "NOT_FOUND"


def test_cancel_is_idempotent(fake, tmp_path):
    cl = client(fake)
    c = gcpkit.plan_one(tmp_path, SLEEPER, gcpkit.inventory(fake.url))
    handle = cl.submit(c.artifact, {}, {})
    until(lambda: cl.refresh([handle])[handle].phase == "RUNNING")
    cl.cancel(handle)
    cl.cancel(handle)  # being cancelled
    live = until(lambda: (s := cl.refresh([handle])[handle]).terminal and s)
    assert (live.phase, live.engine_state) == ("CANCELLED", "CANCELLED")
    cl.cancel(handle)  # ended: the service answers FAILED_PRECONDITION, which is fine
    cl.cancel(JobHandle("gcp-batch", "gcp", "projects/jsctl-ci/locations/us-central1/jobs/js-nosuchjob-0000"))
    cancels = [r for r in fake.requests if r["path"].endswith(":cancel")]
    assert len(cancels) == 4 and cancels[0]["method"] == "POST"


def test_a_failed_task_says_its_exit_code(fake, tmp_path):
    cl = client(fake)
    c = gcpkit.plan_one(tmp_path, inventory_text=gcpkit.inventory(fake.url))
    fake.fail[c.job_id] = 3
    handle = cl.submit(c.artifact, {}, {})
    live = until(lambda: (s := cl.refresh([handle])[handle]).terminal and s)
    assert (live.phase, live.exit_code) == ("FAILED", 3) and "exit code 3" in live.reason


def test_quota_exceeded_is_a_clear_error_and_nothing_is_live(fake, ws, jsctl):
    (ws / "job.yaml").write_text(gcpkit.GPU_JOB)
    fake.quota_exceeded = True
    code, out, err = jsctl("apply", "-f", "job.yaml", "--auto-approve")
    assert code != 0, out + err
    text = out + err
    assert "429 RESOURCE_EXHAUSTED" in text and "Quota exceeded" in text and "IAM & Admin > Quotas" in text, text
    state = json.loads((ws / ".jsctl" / "state.json").read_text())
    assert state["resources"] == {}  # nothing recorded as live
    assert not fake.jobs
