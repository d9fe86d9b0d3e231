"""The gcp-batch provider's pure half: the Job body (task group, container, allocation, recovery,
labels, secrets), validation, settings and the status mapping."""
from __future__ import annotations

import json

import pytest

import gcpkit
from gcpkit import GPU_JOB, plan_one
from jsctl.config.diagnostics import Diagnostic
from jsctl.errors import ConfigError, PlanError
from jsctl.providers import registry
from jsctl.providers.gcp_batch.settings import label_value, valid_label


def body(change) -> dict:
    return change.artifact.request.to_dict()["job"]


def test_multi_node_body(tmp_path):
    c = plan_one(tmp_path)
    b = body(c)
    (group,) = b["taskGroups"]
    assert {k: group[k] for k in ("taskCount", "parallelism", "taskCountPerNode", "requireHostsFile",
                                   "permissiveSsh")} == {"taskCount": "2", "parallelism": "2", "taskCountPerNode": "1",
                                                         "requireHostsFile": True, "permissiveSsh": True}
    task = group["taskSpec"]
    (runnable,) = task["runnables"]
    container = runnable["container"]
    assert (container["imageUri"], container["entrypoint"], container["commands"][0]) == \
        ("us-docker.pkg.dev/p/r/train:1", "/bin/sh", "-c")
    script = container["commands"][1]
    assert 'read -r MASTER_ADDR _ < "$BATCH_HOSTS_FILE" || true' in script
    assert 'export NODE_RANK="${BATCH_TASK_INDEX:-0}"' in script and script.rstrip().endswith("exec python train.py")
    assert task["maxRunDuration"] == "7200s"
    (instance,) = b["allocationPolicy"]["instances"]
    assert instance == {"installGpuDrivers": True, "policy": {
        "machineType": "a2-ultragpu-8g", "provisioningModel": "STANDARD",
        "accelerators": [{"type": "nvidia-a100-80gb", "count": "8"}]}}
    assert b["allocationPolicy"]["serviceAccount"] == {"email": "jsctl-batch@jsctl-ci.iam.gserviceaccount.com"}
    assert b["labels"] == {"jsctl-address": "job-train", "jsctl-generation": "1", "jsctl-job-id": c.job_id}
    assert c.artifact.request.parent == "projects/jsctl-ci/locations/us-central1"
    ((name, text),) = c.artifact.files
    assert json.loads(text) == b and name == f"{c.job_id}.json"


def test_one_node_needs_no_hosts_file_and_spot_retries_preemption(tmp_path):
    job = GPU_JOB.replace("count: 16", "count: 8").replace("  time_limit: 2h\n", "  time_limit: 2h\n  capacity: spot\n")
    c = plan_one(tmp_path, job)
    (group,) = body(c)["taskGroups"]
    assert "requireHostsFile" not in group and group["taskCount"] == "1"
    assert body(c)["allocationPolicy"]["instances"][0]["policy"]["provisioningModel"] == "SPOT"
    assert group["taskSpec"]["lifecyclePolicies"] == [{"action": "RETRY_TASK",
                                                       "actionCondition": {"exitCodes": [75, 50001]}}]


@pytest.mark.parametrize("recovery, retries, codes", [
    ("", 1, [75]),
    ("recovery:\n  max_restarts: 3\n", 3, None),
    ("recovery:\n  max_restarts: 3\n  restart_on_exit_codes: [1, 137]\n", 3, [1, 75, 137]),
    ("recovery:\n  max_restarts: 30\n", 10, None),
])
def test_recovery(tmp_path, recovery, retries, codes):
    c = plan_one(tmp_path, GPU_JOB + recovery)
    task = body(c)["taskGroups"][0]["taskSpec"]
    assert task["maxRetryCount"] == retries
    assert (task["lifecyclePolicies"][0]["actionCondition"]["exitCodes"] if codes else task.get("lifecyclePolicies")) \
        == codes


def test_labels_are_label_safe():
    assert label_value("workflow.My_Pipe.job.Train") == "workflow-my_pipe-job-train"
    long = label_value("workflow." + "x" * 80 + ".job.a")
    assert len(long) == 63 and long != label_value("workflow." + "x" * 80 + ".job.b")
    assert valid_label("team", "ml-infra") and not valid_label("Team", "x") and not valid_label("goog-x", "y")
    assert not valid_label("team", "it's")


def test_user_labels_and_hostile_ones(tmp_path):
    job = GPU_JOB.replace("  name: train\n", "  name: train\n  labels:\n    team: ml\n    bad: \"it's $(x)\"\n")
    c = plan_one(tmp_path, job)
    assert body(c)["labels"]["team"] == "ml" and "bad" not in body(c)["labels"]
    assert any("labels bad are not valid GCP labels" in n for n in c.artifact.notes)


def test_secrets_are_references(tmp_path):
    job = GPU_JOB.replace("  image:", "  secrets: [HF_TOKEN, WANDB_API_KEY]\n  image:")
    c = plan_one(tmp_path, job)
    env = body(c)["taskGroups"][0]["taskSpec"]["environment"]
    assert env == {"secretVariables": {"HF_TOKEN": "projects/jsctl-ci/secrets/hf-token/versions/latest",
                                       "WANDB_API_KEY": "projects/jsctl-ci/secrets/wandb-api-key/versions/3"}}
    assert c.artifact.secrets == ("HF_TOKEN",)  # only the unversioned one is uploaded by apply
    assert c.artifact.request.secret_uploads == ({"env": "HF_TOKEN", "secret": "projects/jsctl-ci/secrets/hf-token"},)


def test_validation_errors(tmp_path):
    job = GPU_JOB.replace("  image: us-docker.pkg.dev/p/r/train:1\n", "  secrets: [NOPE]\n")
    with pytest.raises((ConfigError, PlanError)) as exc:
        plan_one(tmp_path, job)
    text = str(exc.value) + " ".join(d.message for d in getattr(exc.value, "diagnostics", ()) if
                                     isinstance(d, Diagnostic))
    assert "environment.image" in text and "NOPE not mapped to Secret Manager" in text


def test_settings_schema_requires_project_and_region():
    import jsonschema

    schema = registry.get("gcp-batch").settings_schema()
    jsonschema.validate({"project": "my-project", "region": "us-central1"}, schema)
    for bad in ({"region": "us-central1"}, {"project": "P!", "region": "r"},
                {"project": "my-project", "region": "r", "secrets": {"A": "not-a-secret"}}, {"zone": "x"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_status_mapping():
    from google.cloud import batch_v1

    from jsctl.providers.gcp_batch.livestatus import live_status

    def job(state: str, events=()) -> batch_v1.Job:
        return batch_v1.Job.from_json(json.dumps({"status": {"state": state, "statusEvents": list(events)}}))

    expect = {"QUEUED": "PENDING", "SCHEDULED": "PENDING", "RUNNING": "RUNNING", "SUCCEEDED": "SUCCEEDED",
              "FAILED": "FAILED", "CANCELLATION_IN_PROGRESS": "RUNNING", "CANCELLED": "CANCELLED",
              "DELETION_IN_PROGRESS": "CANCELLED"}
    for state, phase in expect.items():
        assert (live_status(job(state)).phase, live_status(job(state)).engine_state) == (phase, state)
    failed = live_status(job("FAILED", [{"description": "Job state is set from QUEUED to RUNNING",
                                         "eventTime": "2026-01-01T00:00:00Z"},
                                        {"description": "task failed with exit code 7", "taskExecution":
                                         {"exitCode": 7}, "eventTime": "2026-01-01T00:01:00Z"}]))
    assert (failed.exit_code, failed.ended_at - failed.started_at, failed.reason) == \
        (7, 60.0, "task failed with exit code 7")


def test_the_provider_module_imports_no_sdk():
    import subprocess
    import sys

    code = ("import sys; from jsctl.providers import registry; p = registry.get('gcp-batch'); p.settings_schema(); "
            "heavy = [m for m in sys.modules if m.startswith(('google.cloud', 'google.api_core'))]; "
            "assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(gcpkit.ROOT))


def test_the_script_reads_the_hosts_file_and_task_index(tmp_path):
    import os
    import subprocess

    job = GPU_JOB.replace("[python, train.py]", "[sh, -c, 'echo \"$MASTER_ADDR $NODE_RANK $PET_RDZV_ENDPOINT\"']")
    script = body(plan_one(tmp_path, job))["taskGroups"][0]["taskSpec"]["runnables"][0]["container"]["commands"][1]
    hosts = tmp_path / "hosts"
    hosts.write_text("10.0.0.2 vm-0\n10.0.0.3 vm-1")  # no newline at the end
    env = {"PATH": os.environ["PATH"], "BATCH_HOSTS_FILE": str(hosts), "BATCH_TASK_INDEX": "1"}
    res = subprocess.run(["/bin/sh", "-c", script], env=env, capture_output=True, text=True, timeout=30)
    assert (res.returncode, res.stdout) == (0, "10.0.0.2 1 10.0.0.2:29500\n"), res.stderr
    res = subprocess.run(["/bin/sh", "-c", script], env={"PATH": os.environ["PATH"]}, capture_output=True, text=True)
    assert res.stdout == "127.0.0.1 0 127.0.0.1:29500\n", res.stderr
