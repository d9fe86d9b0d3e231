"""aws-batch through the CLI against moto_server (simple mode; awsci.py, motobatch.py): the seed's
workflow with dependsOn, a failing job, cancel, drift, logs, hostile values and secrets."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import awsci
from awsci import job_file, record
from hostile import HOSTILE
from jsctl.model.status import JobHandle

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def status(jsctl) -> dict[str, dict]:
    code, out, err = jsctl("status", "--json")
    assert code == 0, out + err
    return {row["name"]: row for row in json.loads(out)["jobs"]}


def apply(jsctl, path: str, env: dict | None = None) -> str:
    code, out, err = jsctl("apply", "-f", path, "--auto-approve", env=env)
    assert code == 0, out + err
    return out


def test_seed_pipeline_submits_with_depends_on_and_succeeds(ws, moto, jsctl):
    for name in ("pipeline", "data-prep-job", "fine-tune-job", "evaluate-job"):
        shutil.copy(EXAMPLES / f"{name}.yaml", ws / f"{name}.yaml")
    apply(jsctl, "pipeline.yaml")
    rows = status(jsctl)
    assert {n: r["phase"] for n, r in rows.items()} == \
        {"data-prep": "SUCCEEDED", "fine-tune": "SUCCEEDED", "evaluate": "SUCCEEDED"}, rows
    ids = {n: JobHandle.parse(r["handle"]).id for n, r in rows.items()}
    jobs = {j["jobId"]: j for j in moto.boto("batch").describe_jobs(jobs=list(ids.values()))["jobs"]}
    assert jobs[ids["data-prep"]]["dependsOn"] == []
    assert jobs[ids["fine-tune"]]["dependsOn"] == [{"jobId": ids["data-prep"]}]
    assert jobs[ids["evaluate"]]["dependsOn"] == [{"jobId": ids["fine-tune"]}]
    assert jobs[ids["fine-tune"]]["nodeProperties"]["numNodes"] == 2  # 16 A100s: multinode parallel
    assert "containerProperties" not in jobs[ids["fine-tune"]]
    tags = jobs[ids["evaluate"]]["tags"]
    assert tags["jsctl:address"] == "workflow.llama-full-pipeline.job.evaluate"
    assert tags["jsctl:job-id"] == rows["evaluate"]["job_id"]
    code, out, err = jsctl("plan", "-f", "pipeline.yaml")  # nothing left to do
    assert code == 0 and "No changes" in out, out + err


def test_failing_job_shows_failed_with_the_reason(ws, jsctl):
    (ws / "bad.yaml").write_text(job_file("bad", ["false"], labels={"moto-exit": "3"}))
    apply(jsctl, "bad.yaml")
    row = status(jsctl)["bad"]
    assert (row["phase"], row["engine_state"], row["exit_code"]) == ("FAILED", "FAILED", 3), row
    assert "Essential container in task exited" in row["reason"], row


def test_moto_fail_after_fails_every_job(tmp_path, monkeypatch, jsctl):
    """moto's own knob (MOTO_SIMPLE_BATCH_FAIL_AFTER=0 in the server's environment, a second server):
    the job fails without a reason, and jsctl says so."""
    server = awsci.start({"MOTO_SIMPLE_BATCH_FAIL_AFTER": "0"})
    try:
        (tmp_path / "jsctl.yaml").write_text(server.inventory())
        monkeypatch.chdir(tmp_path)
        (tmp_path / "f.yaml").write_text(job_file("f", ["true"]))
        apply(jsctl, "f.yaml")
        row = status(jsctl)["f"]
        assert row["phase"] == "FAILED" and row["reason"] == "AWS Batch gave no reason", row
    finally:
        server.stop()


def test_cancel_is_idempotent(ws, moto, jsctl):
    (ws / "long.yaml").write_text(job_file("long", ["sleep", "600"], labels={"moto-run": "long"}))
    apply(jsctl, "long.yaml")
    assert status(jsctl)["long"]["phase"] == "RUNNING"
    for _ in range(2):
        code, out, err = jsctl("stop", "long")
        assert code == 0, out + err
    row = status(jsctl)["long"]
    assert (row["phase"], row["engine_state"], row["reason"]) == ("CANCELLED", "FAILED", "jsctl: cancelled"), row


def test_job_terminated_behind_jsctls_back_is_drift(ws, moto, jsctl):
    (ws / "long.yaml").write_text(job_file("long", ["sleep", "600"], labels={"moto-run": "long"}))
    apply(jsctl, "long.yaml")
    assert status(jsctl)["long"]["phase"] == "RUNNING"
    job = JobHandle.parse(record(ws, "job.long")["handle"]).id
    moto.boto("batch").terminate_job(jobId=job, reason="terminated by an operator")
    code, out, err = jsctl("plan", "-f", "long.yaml")
    assert code == 0, out + err
    assert "job is FAILED (terminated by an operator); it runs again" in out and "-/+" in out, out
    row = status(jsctl)["long"]
    assert (row["phase"], row["reason"]) == ("FAILED", "terminated by an operator"), row


def test_logs_come_from_cloudwatch_logs(ws, moto, jsctl):
    """moto's simple mode writes no log events; awsci.run_container plays the container and the awslogs
    driver (it puts what the command printed into the stream the job names), and jsctl logs reads it."""
    (ws / "hello.yaml").write_text(job_file("hello", ["sh", "-c", "echo hello-from-$JOB_ID"]))
    apply(jsctl, "hello.yaml")
    code, out, err = jsctl("logs", "hello")
    assert code == 0 and "hello-from" not in out, out + err  # no stream yet: nothing, no error
    rec = record(ws, "job.hello")
    (res,) = awsci.run_container(moto, JobHandle.parse(rec["handle"]).id, str(ws))
    assert res.returncode == 0, res.stderr
    code, out, err = jsctl("logs", "hello")
    assert code == 0 and f"hello-from-{rec['job_id']}" in out, out + err


def test_hostile_values_and_secrets(ws, moto, jsctl):
    value = "s3cr3t-'\"$(touch PWNED_secret)`x`;y"
    env = {f"V{i}": v for i, v in enumerate(HOSTILE)}
    dump = ws / "dump.json"
    code = ("import json, os, sys; json.dump({'argv': sys.argv[1:], 'env': dict(os.environ)}, "
            f"open({str(dump)!r}, 'w'))")
    (ws / "quoting.yaml").write_text(job_file("quoting", ["python3", "-c", code, *HOSTILE], env=env,
                                              secrets=("API_TOKEN",), gpus=2))
    start = len(moto.requests())
    code_, out, err = jsctl("plan", "-f", "quoting.yaml", "-out", "plan.json", env={"API_TOKEN": value})
    assert code_ == 0 and value not in out + err, out + err
    code_, out, err = jsctl("apply", "plan.json", env={"API_TOKEN": value})
    assert code_ == 0 and value not in out + err, out + err
    rec = record(ws, "job.quoting")
    results = awsci.run_container(moto, JobHandle.parse(rec["handle"]).id, str(ws))
    assert [r.returncode for r in results] == [0, 0], [r.stderr for r in results]  # two nodes
    got = json.loads(dump.read_text())
    assert got["argv"] == HOSTILE
    assert {k: got["env"][k] for k in env} == env
    assert got["env"]["API_TOKEN"] == value
    assert got["env"]["MASTER_ADDR"] and got["env"]["NODE_RANK"] == "1"  # the last node wrote last
    assert not list(ws.rglob("PWNED*"))
    # what moto received: the value only in the SSM PutParameter body, never in a Batch request
    sent = moto.requests()[start:]
    carrying = [r for r in sent if value in r["body"] or json.dumps(value)[1:-1] in r["body"]]
    assert [r["headers"].get("X-Amz-Target") for r in carrying] == ["AmazonSSM.PutParameter"], carrying
    assert any("/v1/registerjobdefinition" in r["url"] for r in sent)
    for path in [p for p in ws.rglob("*") if p.is_file() and p != dump]:
        assert value.encode() not in path.read_bytes(), path
    (job,) = moto.boto("batch").describe_jobs(jobs=[JobHandle.parse(rec["handle"]).id])["jobs"]
    secrets = job["nodeProperties"]["nodeRangeProperties"][0]["container"]["secrets"]
    assert secrets == [{"name": "API_TOKEN", "valueFrom": f"/jsctl/{rec['job_id']}/API_TOKEN"}]


def test_a_secret_mapped_to_an_arn_is_referenced_not_written(ws, moto, jsctl):
    """`secrets: {NAME: arn}` in jsctl.yaml: the job definition names the Secrets Manager ARN and submit
    writes nothing (the value never passes through jsctl)."""
    arn = moto.boto("secretsmanager").create_secret(Name="team/hf-token", SecretString="from-the-vault")["ARN"]
    (ws / "jsctl.yaml").write_text(moto.inventory(extra=f"    secrets: {{HF_TOKEN: {json.dumps(arn)}}}\n"))
    dump = ws / "env.json"
    code = f"import json, os; json.dump(os.environ.get('HF_TOKEN'), open({str(dump)!r}, 'w'))"
    (ws / "m.yaml").write_text(job_file("mapped", ["python3", "-c", code], secrets=("HF_TOKEN",)))
    start = len(moto.requests())
    code_, out, err = jsctl("apply", "-f", "m.yaml", "--auto-approve")
    assert code_ == 0, out + err
    sent = moto.requests()[start:]
    assert not [r for r in sent if r["headers"].get("X-Amz-Target", "").startswith("AmazonSSM.")]
    rec = record(ws, "job.mapped")
    (res,) = awsci.run_container(moto, JobHandle.parse(rec["handle"]).id, str(ws))
    assert res.returncode == 0, res.stderr
    assert json.loads(dump.read_text()) == "from-the-vault"
