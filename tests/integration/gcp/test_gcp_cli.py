"""The CLI on gcp-batch: the seed workflow applies in order (Batch has no dependencies: apply waits for
each upstream to succeed), a failed upstream stops its dependents, hostile values arrive literally, and
secret values reach only Secret Manager (never a Batch request body, plan or state)."""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from fakebatch import task_environment
from hostile import HOSTILE, hostile_job
from paths import EXAMPLES

PIPELINE = ("pipeline.yaml", "data-prep-job.yaml", "fine-tune-job.yaml", "evaluate-job.yaml")


def copy_pipeline(ws: Path) -> None:
    for name in PIPELINE:
        shutil.copy(os.path.join(EXAMPLES, name), ws / name)


def created(fake) -> list[tuple[float, str, object]]:
    return sorted((j.created, name.rsplit("/", 1)[1], j) for name, j in fake.jobs.items())


def test_seed_workflow_applies_in_order(fake, ws, jsctl):
    copy_pipeline(ws)
    code, out, err = jsctl("apply", "-f", "pipeline.yaml", "--auto-approve")
    assert code == 0, out + err
    jobs = created(fake)
    assert [j[1].rsplit("-", 1)[0] for j in jobs] == ["js-data-prep", "js-fine-tune", "js-evaluate"]
    for (_, _, up), (when, _, down) in zip(jobs, jobs[1:]):
        ended = [t for t, s in up.timeline(when) if s == "SUCCEEDED"]
        assert ended and ended[0] <= when  # submitted only after its upstream succeeded
    shapes = [(j.body["allocationPolicy"]["instances"][0]["policy"]["machineType"],
               j.body["taskGroups"][0]["taskCount"]) for _, _, j in jobs]
    assert shapes[1] == ("a2-ultragpu-8g", "2") and shapes[2] == ("a2-highgpu-1g", "1")
    code, out, err = jsctl("status", "--json")
    assert code == 0, out + err
    assert {row["phase"] for row in json.loads(out)["jobs"]} <= {"SUCCEEDED", "PENDING", "RUNNING"}


def test_a_failed_upstream_stops_the_workflow(fake, ws, jsctl):
    copy_pipeline(ws)
    code, out, err = jsctl("plan", "-f", "pipeline.yaml", "-out", "plan.json")
    assert code == 0, out + err
    plan = json.loads((ws / "plan.json").read_text())
    ids = {rc["address"].rsplit(".", 1)[1]: rc["change"]["after"]["job_id"] for rc in plan["resource_changes"]}
    fake.fail[ids["data-prep"]] = 1
    code, out, err = jsctl("apply", "plan.json")
    assert code != 0 and "dependency workflow.llama-full-pipeline.job.data-prep ended FAILED" in out + err, out + err
    assert [j[1] for j in created(fake)] == [ids["data-prep"]]  # its dependents were never created


def test_hostile_values_arrive_literally(fake, ws, jsctl):
    text = hostile_job("", ()).replace("environment:\n", "environment:\n  image: python:3.11-slim\n", 1)
    (ws / "quoting.yaml").write_text(text)
    code, out, err = jsctl("apply", "-f", "quoting.yaml", "--auto-approve")
    assert code == 0, out + err
    (name, job), = fake.jobs.items()
    container = job.body["taskGroups"][0]["taskSpec"]["runnables"][0]["container"]
    assert container["entrypoint"] == "/bin/sh" and container["commands"][0] == "-c"
    env = {**os.environ, **task_environment(job.body, fake, 0, ws, job.uid), "DUMP": str(ws / "dump.json")}
    res = subprocess.run([container["entrypoint"], *container["commands"]], env=env, cwd=ws, capture_output=True,
                         text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    dump = json.loads((ws / "dump.json").read_text())
    assert dump["argv"] == HOSTILE
    assert {f"V{i}": v for i, v in enumerate(HOSTILE)} == {k: v for k, v in dump["env"].items() if k.startswith("V")}
    assert not list(ws.rglob("PWNED*"))


def test_secret_values_reach_secret_manager_only(fake, ws, jsctl):
    value = "hf_s3cr3t-'\"$(x)`y`;z"
    job = ("version: jetstream.v1\njob:\n  name: secretive\ncompute:\n  resources:\n    cpu:\n      count: 1\n"
           "environment:\n  image: python:3.11-slim\n  secrets: [HF_TOKEN, WANDB_API_KEY]\n"
           "lifecycle:\n  command: [python, -c, 'import os; print(len(os.environ[\"HF_TOKEN\"]))']\n")
    (ws / "job.yaml").write_text(job)
    code, out, err = jsctl("plan", "-f", "job.yaml", "-out", "plan.json", env={"HF_TOKEN": value})
    assert code == 0, out + err
    code, out, err = jsctl("apply", "plan.json", env={"HF_TOKEN": value})
    assert code == 0, out + err
    (name, fj), = fake.jobs.items()
    assert fj.body["taskGroups"][0]["taskSpec"]["environment"] == {"secretVariables": {
        "HF_TOKEN": "projects/jsctl-ci/secrets/hf-token/versions/latest",
        "WANDB_API_KEY": "projects/jsctl-ci/secrets/wandb-api-key/versions/3"}}
    assert fake.secret_value("projects/jsctl-ci/secrets/hf-token/versions/latest") == value
    encoded = base64.b64encode(value.encode()).decode()
    for r in fake.requests:
        text = json.dumps(r)
        assert value not in text and json.dumps(value)[1:-1] not in text
        assert (encoded in text) == r["path"].endswith(":addVersion"), r["path"]
    for path in ws.rglob("*"):
        if path.is_file():
            assert value.encode() not in path.read_bytes() and encoded.encode() not in path.read_bytes(), path
    assert value not in out + err


def test_the_cli_and_a_gcp_plan_import_no_cloud_sdk(ws):
    code = ("import sys; from click.testing import CliRunner; from jsctl.cli import cli; r = CliRunner(); "
            "assert r.invoke(cli, ['--help']).exit_code == 0; (open('j.yaml', 'w').write("
            "'version: jetstream.v1\\njob:\\n  name: a\\ncompute:\\n  resources:\\n    gpu:\\n      type: a100-80gb\\n"
            "      count: 8\\nenvironment:\\n  image: x\\nlifecycle:\\n  command: [\"true\"]\\n')); "
            "res = r.invoke(cli, ['plan', '-f', 'j.yaml']); assert res.exit_code in (0, 2) and 'a2-ultragpu-8g' in res.output, res.output; "
            "heavy = sorted(m for m in sys.modules if m.startswith(('google.cloud', 'google.api_core', 'grpc'))); "
            "assert not heavy, heavy")
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "runtime")])}
    res = subprocess.run([sys.executable, "-c", code], cwd=ws, capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
