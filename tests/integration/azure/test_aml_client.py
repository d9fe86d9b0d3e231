"""The azure-ml client against the fake service: create, get, list (paged, by tag), cancel, logs, the
check of --check-remote, and the service's errors (quota exceeded, unreachable)."""
from __future__ import annotations

import time

import pytest

from amlkit import job_file
from jsctl.errors import ProviderError
from jsctl.model.status import JobHandle
from jsctl.plan import planfile


def planned(jsctl, ws, path: str, out: str = "plan.json"):
    code, stdout, stderr = jsctl("plan", "-f", path, "-out", out)
    assert code == 0, stdout + stderr
    (change,) = planfile.load(str(ws / out)).changes
    return change


def wait_phase(client, handle, phases, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        live = client.refresh([handle])[handle]
        if live.phase in phases:
            return live
        time.sleep(0.1)
    raise AssertionError(f"{handle} never reached {phases}: {live}")


def test_create_get_list_cancel(jsctl, ws, fake, client):
    c = planned(jsctl, ws, job_file(ws, "one"))
    assert client.adopt(c.artifact) is None
    handle = client.submit(c.artifact, {}, {})
    assert handle == JobHandle("azure-ml", "aml", c.job_id)
    env_put, job_put = [r for r in fake.requests if r["method"] == "PUT"]
    assert env_put["path"].endswith(f"/environments/CliV2AnonymousEnvironment/versions/"
                                    f"{c.artifact.request.environment_version}")
    assert job_put["path"].endswith(f"/workspaces/ml-ws/jobs/{c.job_id}") and job_put["query"] == {
        "api-version": "2024-04-01"}
    assert job_put["body"] == c.artifact.request.to_dict()["body"]
    first = client.refresh([handle, handle])
    assert set(first) == {handle} and first[handle].phase == "PENDING" and first[handle].engine_state == "Queued"
    wait_phase(client, handle, ("RUNNING",))
    done = wait_phase(client, handle, ("SUCCEEDED",))
    assert done.engine_state == "Completed"
    assert client.adopt(c.artifact) == handle  # a finished job is adopted too (only failed/cancelled are not)
    posts = len([r for r in fake.requests if r["method"] == "POST"])
    client.cancel(handle)  # ended: nothing to cancel, no request to cancel it
    assert len([r for r in fake.requests if r["method"] == "POST"]) == posts


def test_list_pages_and_cancel_is_idempotent(jsctl, ws, fake, client):
    fake.page_size = 1
    labels = "  labels:\n    fakeaml.run: long\n"
    a = planned(jsctl, ws, job_file(ws, "first", labels=labels), "a.json")
    b = planned(jsctl, ws, job_file(ws, "second", labels=labels), "b.json")
    ha, hb = client.submit(a.artifact, {}, {}), client.submit(b.artifact, {}, {})
    assert client.adopt(b.artifact) == hb  # found on the second page (nextLink)
    lists = [r for r in fake.requests if r["method"] == "GET" and r["path"].endswith("/jobs")]
    assert any("$skipToken" in r["query"] for r in lists)
    unknown = JobHandle("azure-ml", "aml", "js-nosuchjob-0000")
    before = len(fake.requests)
    answers = client.refresh([ha, hb, unknown])
    assert len(fake.requests) - before == 2  # one list call, two pages: not one call per job
    assert answers[unknown].phase == "UNKNOWN" and answers[ha].phase in ("PENDING", "RUNNING")
    wait_phase(client, ha, ("RUNNING",))
    client.cancel(ha)
    client.cancel(ha)  # CancelRequested: not again
    assert len([r for r in fake.requests if r["method"] == "POST" and r["path"].endswith("/cancel")]) == 1
    assert client.refresh([ha])[ha].engine_state in ("CancelRequested", "Canceled")
    assert wait_phase(client, ha, ("CANCELLED",)).engine_state == "Canceled"
    client.cancel(ha)
    client.cancel(unknown)
    assert client.adopt(a.artifact) is None  # a cancelled job is not adopted: apply submits anew
    assert client.refresh([hb])[hb].phase == "RUNNING"


def test_failed_job(jsctl, ws, fake, client):
    c = planned(jsctl, ws, job_file(ws, "bad", labels="  labels:\n    fakeaml.result: Failed\n"))
    handle = client.submit(c.artifact, {}, {})
    live = wait_phase(client, handle, ("FAILED",))
    assert live.engine_state == "Failed"
    assert client.adopt(c.artifact) is None


def test_quota_exceeded_is_a_clear_error_and_nothing_is_live(jsctl, ws, fake):
    fake.quota_exceeded = True
    path = job_file(ws, "big")
    code, out, err = jsctl("apply", "-f", path, "--auto-approve")
    assert code != 0
    assert "QuotaExceeded" in out + err and "Not enough quota" in out + err, out + err
    code, out, err = jsctl("status", "--json")
    assert code == 0, out + err
    import json

    rows = json.loads(out)["jobs"]
    assert all(not r.get("handle") for r in rows), rows  # recorded as not submitted, never live
    state = json.loads((ws / ".jsctl" / "state.json").read_text())
    assert state["resources"] == {}
    fake.quota_exceeded = False
    code, out, err = jsctl("apply", "-f", path, "--auto-approve")  # the next apply creates it
    assert code == 0, out + err
    assert len(fake.job_requests()) == 2


def test_logs_from_run_history(jsctl, ws, fake, client):
    c = planned(jsctl, ws, job_file(ws, "talk"))
    handle = client.submit(c.artifact, {}, {})
    wait_phase(client, handle, ("SUCCEEDED",))
    lines = list(client.logs(handle))
    assert lines == [f"fakeaml runs no process: process 0 of run {c.job_id} printed nothing\n"]
    assert list(client.logs(handle, node="0", tail=1)) == lines
    assert any(r["path"].endswith(f"/experiments/jsctl/runs/{c.job_id}/details") for r in fake.requests)


def test_check_remote_validates_the_yaml_and_the_compute(jsctl, ws, fake, client):
    pytest.importorskip("azure.ai.ml")
    path = job_file(ws, "checked")
    code, out, err = jsctl("plan", "-f", path, "--check-remote")
    assert code == 0, out + err
    assert "YAML valid (azure.ai.ml.load_job); compute a100-single: AmlCompute" in out, out
    c = planned(jsctl, ws, path)
    (name, text), = c.artifact.files
    broken = type(c.artifact)(c.artifact.kind, c.artifact.job_id,
                              ((name, text.replace("type: command", "type: commandd")),), c.artifact.request, "")
    with pytest.raises(ProviderError, match="load_job refuses"):
        client.check(broken)


def test_unreachable_endpoint(jsctl, ws, fake, client):
    c = planned(jsctl, ws, job_file(ws, "lost"))
    fake.close()
    with pytest.raises(ProviderError, match="cannot reach"):
        client.submit(c.artifact, {}, {})
