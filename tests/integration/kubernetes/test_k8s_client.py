"""KubernetesClient against the CI control plane: batched refresh, server-side dry run, pause and
resume through spec.suspend, logs, events, probe, and the apiserver's own words in errors."""
from __future__ import annotations

import dataclasses
import json

import pytest

from k8sit import KUBECONFIG, get, inventory, job_pods, kubectl, objects, small_job, state, wait_for

from jsctl.config import workspace
from jsctl.errors import ProviderError
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.status import JobHandle
from jsctl.plan import planfile
from jsctl.providers import registry
from jsctl.providers.kubernetes.kubeapi import KubeApi


def client(ws):
    w = workspace.load(str(ws / "jsctl.yaml"))
    return registry.get("kubernetes").client(w.cluster("ci"), str(ws))


def handle(ws, name: str) -> JobHandle:
    return JobHandle.parse(state(ws)["resources"][f"job.{name}"]["handle"])


def apply(jsctl, ws, *names: str, long: bool = True, gpus: int = 0) -> None:
    for n in names:
        (ws / f"{n}.yaml").write_text(small_job(n, ["sleep", "600"], gpus=gpus,
                                                labels={"kwok-run": "long"} if long else None))
    code, out, err = jsctl("apply", *[a for n in names for a in ("-f", f"{n}.yaml")], "--auto-approve")
    assert code == 0, out + err


def test_refresh_is_one_list_per_namespace_and_kind(ws, jsctl, monkeypatch):
    apply(jsctl, ws, "r1", "r2", "r3")
    c = client(ws)
    hs = [handle(ws, n) for n in ("r1", "r2", "r3")]
    assert all(str(h).startswith("kubernetes://ci/") and "/job.v1.batch/" in str(h) for h in hs)
    wait_for(lambda: all(s.phase == "RUNNING" for s in c.refresh(hs).values()), 30, what="RUNNING")
    calls = []
    real = KubeApi.request

    def counting(self, method, path, *a, **kw):
        calls.append((method, path))
        return real(self, method, path, *a, **kw)

    monkeypatch.setattr(KubeApi, "request", counting)
    live = c.refresh(hs + hs)
    assert set(live) == set(hs) and all(s.phase == "RUNNING" and s.nodes for s in live.values()), live
    assert [m for m, _ in calls] == ["GET", "GET"], calls  # the Jobs, then their pods
    assert calls[0][1].endswith("/jobs") and calls[1][1].endswith("/pods"), calls


def test_check_remote_is_a_server_side_dry_run(ws, namespace, jsctl):
    (ws / "a.yaml").write_text(small_job("a", ["python", "x.py"]))
    code, out, err = jsctl("plan", "-f", "a.yaml", "-out", "plan.json", "--check-remote")
    assert code == 0, out + err
    assert "accepts 2 objects (dry run)" in out, out
    change = planfile.load(str(ws / "plan.json")).changes[0]
    c = client(ws)
    assert "dry run" in c.check(change.artifact)
    assert kubectl("get", "jobs", "-n", namespace, "-o", "name", namespace=None).stdout.strip() == ""  # nothing made
    name, text = change.artifact.files[0]
    bad = dataclasses.replace(change.artifact, files=((name, text.replace("completions: 1", "completions: -1")),))
    with pytest.raises(ProviderError) as exc:
        c.check(bad)
    assert "Invalid" in exc.value.message and "completions" in exc.value.message, exc.value.message


def test_apiserver_errors_are_provider_errors(ws, namespace, jsctl, tmp_path):
    (ws / "a.yaml").write_text(small_job("a", ["python", "x.py"]))
    code, out, err = jsctl("plan", "-f", "a.yaml", "-out", "plan.json")
    assert code == 0, out + err
    change = planfile.load(str(ws / "plan.json")).changes[0]
    request = dataclasses.replace(change.artifact.request, namespace="jsctl-no-such-namespace")
    name, text = change.artifact.files[0]
    moved = RenderedArtifact(change.artifact.kind, change.artifact.job_id,
                             ((name, text.replace(f"namespace: {namespace}", "namespace: jsctl-no-such-namespace")),),
                             request, "")
    with pytest.raises(ProviderError) as exc:
        client(ws).submit(moved, {}, {})
    assert "NotFound" in exc.value.message and "jsctl-no-such-namespace" in exc.value.message, exc.value.message

    dead = tmp_path / "dead-kubeconfig"
    text = KUBECONFIG.read_text()
    import yaml

    cfg = yaml.safe_load(text)
    cfg["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:9"
    dead.write_text(yaml.safe_dump(cfg))
    (ws / "jsctl.yaml").write_text((ws / "jsctl.yaml").read_text().replace(str(KUBECONFIG), str(dead)))
    with pytest.raises(ProviderError) as exc:
        client(ws).refresh([JobHandle("kubernetes", "ci", f"{namespace}/job.v1.batch/x")])
    assert "cannot reach the apiserver at https://127.0.0.1:9" in exc.value.message
    code, out, err = jsctl("status")
    assert "Traceback" not in out + err


@pytest.mark.parametrize("flavor", ["job", "jobset"])
def test_pause_and_resume_through_suspend(ws, namespace, jsctl, flavor):
    (ws / "jsctl.yaml").write_text(inventory(namespace, flavor))
    apply(jsctl, ws, "p")
    h = handle(ws, "p")
    c = client(ws)
    wait_for(lambda: c.refresh([h])[h].phase == "RUNNING", 30, what="RUNNING")
    code, out, err = jsctl("pause", "p")
    assert code == 1 and "writes no checkpoints" in out + err and "Traceback" not in err, out + err
    code, out, err = jsctl("pause", "p", "--force", "--timeout", "30s")
    assert code == 0, out + err
    assert "spec.suspend: true" in out and "pods are deleted (GPUs held: none)" in out, out
    assert "progress is lost: jsctl resume starts it over" in out and "SIGSTOP" not in out, out
    live = wait_for(lambda: (s := c.refresh([h])[h]).phase == "PAUSED" and s, 30, what="PAUSED")
    assert live.engine_state == "Suspended", live
    job_id = h.id.rsplit("/", 1)[1]
    assert not [p for p in job_pods(namespace, job_id) if p["status"]["phase"] in ("Pending", "Running")]
    again = c.pause(h, force=True)
    assert again.step is None and "already suspended" in again.how  # again: already paused
    code, out, err = jsctl("resume", "p")
    assert code == 0, out + err
    wait_for(lambda: c.refresh([h])[h].phase == "RUNNING", 30, what="RUNNING again")
    code, out, err = jsctl("status", "p", "--json")
    assert json.loads(out)["jobs"][0]["phase"] == "RUNNING"


def test_logs_events_and_probe(ws, namespace, jsctl):
    apply(jsctl, ws, "l", gpus=16)
    h = handle(ws, "l")
    c = client(ws)
    wait_for(lambda: c.refresh([h])[h].phase == "RUNNING", 30, what="RUNNING")
    code, out, err = jsctl("logs", "l")
    assert code == 0, out + err
    assert out.count("0: kwok: a fake pod") == 1 and out.count("1: kwok: a fake pod") == 1, out  # per pod, labelled
    code, out, err = jsctl("logs", "l", "--node", "1")
    assert code == 0 and out.startswith("kwok: a fake pod"), out + err
    code, out, err = jsctl("logs", "l", "--node", "7")
    assert code == 1 and "has no node '7'" in out + err, out + err
    lines = []
    for line in c.logs(h, node="0", follow=True, tail=1):
        lines.append(line)
        break
    assert lines and lines[0].startswith("kwok:")

    events = c.events(h)
    reasons = {e.reason for e in events}
    assert "SuccessfulCreate" in reasons and "Scheduled" in reasons, events

    facts = c.probe()
    assert facts.data["gpus_total"] == 32 and len(facts.data["nodes"]) == 6, facts.data
    assert facts.data["gpus_free"] <= 16
    assert {n for n, v in facts.data["nodes"].items() if v["gpus_used"]} >= set(c.refresh([h])[h].nodes)


def test_stop_deletes_the_job_its_service_and_secret_and_remembers(ws, namespace, jsctl):
    text = small_job("s", ["sleep", "600"], labels={"kwok-run": "long"})
    text = text.replace("  image: python:3.11-slim\n", "  image: python:3.11-slim\n  secrets: [JS_K8S_TOKEN]\n")
    (ws / "s.yaml").write_text(text)
    value = "tok-$(x)-'\"`y`"
    code, out, err = jsctl("apply", "-f", "s.yaml", "--auto-approve", env={"JS_K8S_TOKEN": value})
    assert code == 0, out + err
    h = handle(ws, "s")
    job_id = h.id.rsplit("/", 1)[1]
    (secret,) = objects("secrets", namespace, f"jsctl.dev/job-id={job_id}")
    import base64

    assert base64.b64decode(secret["data"]["JS_K8S_TOKEN"]).decode() == value
    held = get("secret", secret["metadata"]["name"], "-n", namespace, "--show-managed-fields", namespace=None)
    assert [(f["manager"], f["operation"]) for f in held["metadata"]["managedFields"]] == [("jsctl", "Apply")]
    assert len(objects("services", namespace, f"jsctl.dev/job-id={job_id}")) == 1
    c = client(ws)
    wait_for(lambda: c.refresh([h])[h].phase == "RUNNING", 30, what="RUNNING")
    code, out, err = jsctl("stop", "s")
    assert code == 0, out + err
    wait_for(lambda: not objects("jobs.batch", namespace, f"jsctl.dev/job-id={job_id}"), 30, what="the Job gone")
    assert not objects("secrets", namespace, f"jsctl.dev/job-id={job_id}")
    assert not objects("services", namespace, f"jsctl.dev/job-id={job_id}")
    assert not job_pods(namespace, job_id)
    live = c.refresh([h])[h]
    assert live.phase == "CANCELLED" and live.engine_state == "Deleted", live  # the Event cancel left
    c.cancel(h)  # again: nothing there, fine
    assert "CancelledByJsctl" in {e.reason for e in c.events(h)}
    code, out, err = jsctl("plan", "-f", "s.yaml")
    assert "changed outside" not in out, out  # stopped by jsctl: not drift
