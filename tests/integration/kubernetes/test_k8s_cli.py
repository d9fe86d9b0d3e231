"""The Kubernetes provider through the CLI, on the CI control plane (scripts/k8s-up.sh): the seed's
workflow in the job and jobset flavors, a failing middle job, Volcano and TrainJob objects, an
infeasible job and a full pool, drift, a killed apply, and hostile values."""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time

import pytest

from hostile import HOSTILE
from k8sit import (EXAMPLES, cli, get, inventory, job_pods, kubectl, objects, small_job, state, status_rows, wait_for,
                   wait_phases)

PIPELINE = ("pipeline.yaml", "data-prep-job.yaml", "fine-tune-job.yaml", "evaluate-job.yaml")
WF = "workflow.llama-full-pipeline.job."
def seed_pipeline(ws, fail_middle: bool = False) -> None:
    """The seed's pipeline.yaml and its three job files, as written (fail_middle: fine-tune's pods exit 1,
    kwok-exit: fail, and it is not retried, so that the test does not wait out the Job's back-off)."""
    for name in PIPELINE:
        shutil.copy(EXAMPLES / name, ws / name)
    if fail_middle:
        path = ws / "fine-tune-job.yaml"
        text = path.read_text()
        assert "  priority: high\n" in text and "max_restarts: 3" in text
        text = text.replace("  priority: high\n", "  priority: high\n  labels:\n    kwok-exit: fail\n")
        path.write_text(text.replace("max_restarts: 3", "max_restarts: 0"))


def gpu_requests(pod: dict) -> int:
    return sum(int((c.get("resources") or {}).get("requests", {}).get("nvidia.com/gpu", 0))
               for c in pod["spec"]["containers"])


def defaulted_differences(rendered, held, schema: dict, where: str) -> list[str]:
    """Where the object read back differs from the rendered one, other than by the defaults its CRD's
    schema declares (the apiserver writes those in; a field jsctl set is never changed)."""
    schema = schema or {}
    if isinstance(rendered, dict) and isinstance(held, dict):
        props = schema.get("properties") or {}
        out = []
        for k in sorted(set(rendered) | set(held)):
            if k not in held:
                out.append(f"{where}.{k}: dropped")
            elif k not in rendered:
                if "default" not in (props.get(k) or {}) or props[k]["default"] != held[k]:
                    out.append(f"{where}.{k}: {held[k]!r} added, and not the CRD's default")
            else:
                extra = schema.get("additionalProperties")
                child = props.get(k) or (extra if isinstance(extra, dict) else {})
                out += defaulted_differences(rendered[k], held[k], child, f"{where}.{k}")
        return out
    if isinstance(rendered, list) and isinstance(held, list) and len(rendered) == len(held):
        return [d for i, (a, b) in enumerate(zip(rendered, held))
                for d in defaulted_differences(a, b, schema.get("items") or {}, f"{where}[{i}]")]
    return [] if rendered == held else [f"{where}: {held!r} != {rendered!r}"]


def record(ws, address: str) -> dict:
    return state(ws)["resources"][address]


# ---- the seed's workflow -----------------------------------------------------------------------------------

@pytest.mark.parametrize("flavor", ["job", "jobset"])
def test_seed_pipeline_runs_in_order_on_gpu_nodes(ws, namespace, jsctl, flavor):
    (ws / "jsctl.yaml").write_text(inventory(namespace, flavor))
    seed_pipeline(ws)
    code, out, err = jsctl("apply", "-f", "pipeline.yaml", "--auto-approve")
    assert code == 0, out + err
    rows = wait_phases(jsctl, {"data-prep": "SUCCEEDED", "fine-tune": "SUCCEEDED", "evaluate": "SUCCEEDED"})
    assert all(r["engine_state"] in ("Complete", "Completed") for r in rows.values()), rows

    prep, tune, evaluate = (record(ws, WF + n) for n in ("data-prep", "fine-tune", "evaluate"))
    pods = {n: job_pods(namespace, r["job_id"]) for n, r in
            (("data-prep", prep), ("fine-tune", tune), ("evaluate", evaluate))}
    assert [len(pods[n]) for n in ("data-prep", "fine-tune", "evaluate")] == [1, 2, 1], pods
    assert all(p["spec"]["nodeName"].startswith("cpu-") for p in pods["data-prep"])
    assert gpu_requests(pods["data-prep"][0]) == 0
    assert sorted(p["spec"]["nodeName"][:5] for p in pods["fine-tune"]) == ["a100-", "a100-"]
    assert len({p["spec"]["nodeName"] for p in pods["fine-tune"]}) == 2  # two nodes, 8 GPUs each
    assert [gpu_requests(p) for p in pods["fine-tune"]] == [8, 8]
    assert pods["evaluate"][0]["spec"]["nodeName"].startswith("a100-") and gpu_requests(pods["evaluate"][0]) == 1
    assert all(p["status"]["phase"] == "Succeeded" for ps in pods.values() for p in ps)

    # in order: each job's pods were created after the job before it had ended
    def created(ps):
        return min(p["metadata"]["creationTimestamp"] for p in ps)

    def ended(name):
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(rows[name]["ended_at"])))

    assert created(pods["fine-tune"]) >= ended("data-prep"), (created(pods["fine-tune"]), ended("data-prep"))
    assert created(pods["evaluate"]) >= ended("fine-tune")
    workload = "jobs.batch" if flavor == "job" else "jobsets.jobset.x-k8s.io"
    assert sorted(o["metadata"]["name"] for o in objects(workload, namespace, "jsctl.dev/job-id")) == \
        sorted(r["job_id"] for r in (prep, tune, evaluate))


def test_failing_middle_job_leaves_the_last_not_submitted(ws, namespace, jsctl):
    seed_pipeline(ws, fail_middle=True)
    code, out, err = jsctl("apply", "-f", "pipeline.yaml", "--auto-approve")
    assert "Traceback" not in out + err
    rows = status_rows(jsctl)
    assert rows["data-prep"]["phase"] == "SUCCEEDED", rows
    assert rows["fine-tune"]["phase"] == "FAILED" and rows["fine-tune"]["exit_code"] == 1, rows
    assert "BackoffLimitExceeded" in (rows["fine-tune"]["reason"] or ""), rows
    assert rows["evaluate"]["phase"] == "NOT SUBMITTED", rows
    assert "fine-tune ended FAILED" in rows["evaluate"]["reason"], rows
    assert not [o for o in objects("jobs.batch", namespace) if "evaluate" in o["metadata"]["name"]]
    code, out, err = jsctl("status")
    assert code == 0 and "NOT SUBMITTED" in out and "fine-tune ended FAILED" in out, out + err


# ---- Volcano and Kubeflow TrainJob: accepted as rendered, status untracked -----------------------------------

@pytest.mark.parametrize("flavor, resource", [("volcano", "jobs.batch.volcano.sh"),
                                              ("kubeflow", "trainjobs.trainer.kubeflow.org")])
def test_volcano_and_trainjob_are_accepted_unchanged(ws, namespace, jsctl, flavor, resource):
    import yaml

    (ws / "jsctl.yaml").write_text(inventory(namespace, flavor))
    (ws / "train.yaml").write_text(small_job("train", ["python", "train.py", "--lr", "$(not a var)"], gpus=16))
    code, out, err = jsctl("plan", "-f", "train.yaml", "-out", "plan.json")
    assert code == 0, out + err
    assert "status is tracked only where a" in out, out  # the plan says status is not tracked
    code, out, err = jsctl("apply", "plan.json")
    assert code == 0, out + err
    rec = record(ws, "job.train")
    # the manifest as reviewed: the saved plan holds the files' text (state keeps their digests)
    (planned,) = [c["change"]["after"]["artifact"] for c in json.loads((ws / "plan.json").read_text())
                  ["resource_changes"] if c["address"] == "job.train"]
    manifest = yaml.safe_load_all(dict((n, c) for n, c in planned["files"])[planned["request"]["manifest"]])
    rendered = [d for d in manifest if d][-1]
    held = get(resource, rec["job_id"], "-n", namespace, namespace=None)
    crd = get("crd", resource, namespace=None)
    (version,) = [v for v in crd["spec"]["versions"] if rendered["apiVersion"].endswith("/" + v["name"])]
    schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert not defaulted_differences(rendered["spec"], held["spec"], schema, "spec"), \
        (defaulted_differences(rendered["spec"], held["spec"], schema, "spec"), held["spec"], rendered["spec"])
    assert held["metadata"]["labels"] == rendered["metadata"]["labels"]
    (row,) = status_rows(jsctl).values()
    assert row["phase"] == "UNKNOWN" and "not tracked" in row["reason"], row


# ---- placement against what the cluster has ------------------------------------------------------------------

def test_too_big_is_infeasible_and_a_full_pool_queues(ws, namespace, jsctl):
    (ws / "big.yaml").write_text(small_job("big", ["python", "train.py"], gpus=40))
    code, out, err = jsctl("plan", "-f", "big.yaml")
    assert code == 1 and "no feasible placement" in err and "needs 5 nodes × 8 GPUs, a100 has 4 nodes × 8" in err, \
        out + err

    (ws / "fill.yaml").write_text(small_job("fill", ["sleep", "600"], gpus=32, labels={"kwok-run": "long"}))
    code, out, err = jsctl("apply", "-f", "fill.yaml", "--auto-approve")
    assert code == 0, out + err
    wait_phases(jsctl, {"fill": "RUNNING"})
    (ws / "waits.yaml").write_text(small_job("waits", ["python", "train.py"], gpus=8))
    code, out, err = jsctl("apply", "-f", "fill.yaml", "-f", "waits.yaml", "--auto-approve")
    assert code == 0, out + err
    rows = wait_phases(jsctl, {"waits": "PENDING", "fill": "RUNNING"})
    wait_for(lambda: status_rows(jsctl)["waits"]["engine_state"] == "Unschedulable", 30, what="Unschedulable")
    row = status_rows(jsctl)["waits"]
    assert "Insufficient nvidia.com/gpu" in row["reason"], row
    code, out, err = jsctl("cluster", "status", "--json")
    assert code == 0, out + err
    (c,) = [c for c in json.loads(out)["clusters"] if c["cluster"] == "ci"]
    assert c["gpus_total"] == 32 and c["gpus_free"] == 0 and c["gpus_queued"] >= 8, c
    code, out, err = jsctl("cluster", "status")
    assert code == 0 and "ci" in out, out + err
    assert rows["fill"]["phase"] == "RUNNING"


# ---- drift and a killed apply -----------------------------------------------------------------------------------

def test_job_deleted_behind_jsctls_back_is_drift(ws, namespace, jsctl):
    (ws / "long.yaml").write_text(small_job("long", ["sleep", "600"], labels={"kwok-run": "long"}))
    assert jsctl("apply", "-f", "long.yaml", "--auto-approve")[0] == 0
    wait_phases(jsctl, {"long": "RUNNING"})
    job_id = record(ws, "job.long")["job_id"]
    kubectl("delete", "job", job_id, "-n", namespace, "--wait=true", namespace=None)
    code, out, err = jsctl("plan", "-f", "long.yaml")
    assert code == 0, out + err
    assert "changed outside of jsctl" in out and "# job.long has changed" in out, out
    assert '"RUNNING" -> "UNKNOWN"' in out, out
    assert "-/+" in out or "replace" in out, out


def test_describe_shows_the_engines_events_and_survives_when_they_cannot_be_read(ws, namespace, jsctl, monkeypatch):
    (ws / "ev.yaml").write_text(small_job("ev", ["sleep", "600"], labels={"kwok-run": "long"}))
    assert jsctl("apply", "-f", "ev.yaml", "--auto-approve")[0] == 0
    wait_phases(jsctl, {"ev": "RUNNING"})
    job_id = record(ws, "job.ev")["job_id"]

    def described():
        code, out, err = jsctl("describe", "ev")
        assert code == 0, out + err
        return out if "Scheduled" in out and "SuccessfulCreate" in out else None

    out = wait_for(described, 30, what="the scheduler's and the Job controller's events")
    engine = out.split("Engine events:\n", 1)[1].split("Artifact:", 1)[0].splitlines()
    assert any("SuccessfulCreate" in line and f"Job/{job_id}:" in line for line in engine), engine
    assert any("Scheduled" in line and f"Pod/{job_id}-" in line for line in engine), engine

    from jsctl.errors import ProviderError
    from jsctl.providers.kubernetes.client import KubernetesClient

    def refuse(self, handle):
        raise ProviderError("listing events: 403 Forbidden\n(no right to list events)")

    monkeypatch.setattr(KubernetesClient, "events", refuse)
    code, out, err = jsctl("describe", "ev")
    assert code == 0, out + err
    assert "Engine events: not read (listing events: 403 Forbidden (no right to list events))\n" in out, out
    assert "Phase:      RUNNING" in out and "Artifact:" in out


def test_killed_apply_converges_without_duplicates(ws, namespace):
    (ws / "a.yaml").write_text(small_job("a", ["python", "prep.py"]))
    (ws / "b.yaml").write_text(small_job("b", ["python", "train.py"]))
    (ws / "wf.yaml").write_text("version: jetstream.v1\nworkflow:\n  name: wf\n  jobs:\n"
                                "    - {name: a, spec: a.yaml}\n    - {name: b, spec: b.yaml, dependsOn: [a]}\n")
    proc = subprocess.Popen([sys.executable, "-m", "jsctl.cli", "apply", "-f", "wf.yaml", "--auto-approve"],
                            cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    state_file = ws / ".jsctl" / "state.json"
    try:
        wait_for(lambda: state_file.exists() and "workflow.wf.job.a" in state_file.read_text(), 60,
                 every=0.05, what="a in state")
    finally:
        proc.send_signal(signal.SIGKILL)  # apply is now waiting for a to succeed before it submits b
        proc.wait()
    assert "workflow.wf.job.b" not in json.loads(state_file.read_text())["resources"]
    res = cli("apply", "-f", "wf.yaml", "--auto-approve", "--lock-timeout", "30s", cwd=ws)
    assert res.returncode == 0, res.stdout + res.stderr
    res = cli("status", "--json", cwd=ws)
    phases = {j["name"]: j["phase"] for j in json.loads(res.stdout)["jobs"]}
    assert phases["a"] == "SUCCEEDED" and phases["b"] in ("PENDING", "RUNNING", "SUCCEEDED"), phases
    ids = sorted(o["metadata"]["labels"]["jsctl.dev/job-id"] for o in objects("jobs.batch", namespace))
    assert len(ids) == 2 and len(set(ids)) == 2, ids  # each job once
    assert len(objects("services", namespace, "jsctl.dev/job-id")) == 2
    res = cli("plan", "-f", "wf.yaml", "--detailed-exitcode", cwd=ws)
    assert res.returncode == 0 and "No changes" in res.stdout, res.stdout + res.stderr


# ---- hostile values -------------------------------------------------------------------------------------------

def test_hostile_values_read_back_exactly(ws, namespace, jsctl):
    from kubelet import container_argv, container_env, run_container

    from hostile import DUMP

    env = {f"V{i}": v for i, v in enumerate(HOSTILE)}
    labels = {f"l{i}": v for i, v in enumerate(HOSTILE)}
    labels["team"] = "ml-infra"
    dump = ws / "dump.json"
    env_all = {"WANT": ",".join(env), "DUMP": str(dump), **env}
    (ws / "quoting.yaml").write_text(small_job("quoting", [sys.executable, "-c", DUMP, *HOSTILE], labels=labels,
                                               env=env_all))
    code, out, err = jsctl("apply", "-f", "quoting.yaml", "--auto-approve")
    assert code == 0, out + err
    job_id = record(ws, "job.quoting")["job_id"]
    wait_for(lambda: job_pods(namespace, job_id), 30, what="the pod")
    (pod,) = job_pods(namespace, job_id)

    def read(kind, name):
        return get(kind.lower() + "s", name, "-n", namespace, namespace=None)

    seen = container_env(pod, read)
    assert {k: seen[k] for k in env} == env
    assert container_argv(pod, seen) == [sys.executable, "-c", DUMP, *HOSTILE]
    notes = pod["metadata"]["annotations"]
    assert json.loads(notes["jsctl.dev/labels"]) == labels
    assert pod["metadata"]["labels"]["team"] == "ml-infra"
    assert notes["jsctl.dev/address"] == "job.quoting"
    res = run_container(pod, read, cwd=str(ws))  # and what the program itself receives
    assert res.returncode == 0, res.stderr
    got = json.loads(dump.read_text())
    assert got["argv"] == HOSTILE and got["env"] == env
    assert not list(ws.rglob("PWNED*"))
