"""Plan and apply on the local provider, end to end through the real CLI."""
import json
import os

from paths import EXAMPLES
from localjobs import job_yaml, run_cli, wait_phase

ECHO = ["bash", "-c", "echo hello from $JOB_ID; echo $JETSTREAM_NNODES x $JETSTREAM_GPUS_PER_NODE"]


def test_plan_apply_noop_replace_destroy(ws):
    (ws / "job.yaml").write_text(job_yaml("hello", ECHO))
    code, out, err = run_cli("plan", "-f", "job.yaml", "--detailed-exitcode")
    assert code == 2, err
    assert '+ job "hello"' in out and "Plan: 1 to add, 0 to change, 0 to destroy." in out
    code, out, err = run_cli("apply", "-f", "job.yaml", "--auto-approve")
    assert code == 0, err
    assert "Apply complete! Resources: 1 added" in out
    row = wait_phase("hello")
    assert row["phase"] == "SUCCEEDED"
    code, out, _ = run_cli("logs", "hello")
    assert f"hello from {row['job_id']}" in out and "1 x 1" in out
    code, out, _ = run_cli("plan", "-f", "job.yaml", "--detailed-exitcode")
    assert code == 0 and "No changes." in out
    (ws / "job.yaml").write_text(job_yaml("hello", ["echo", "changed"]))
    code, out, _ = run_cli("plan", "-f", "job.yaml")
    assert "-/+ job \"hello\"" in out and "lifecycle.command" in out and "forces replacement" in out
    assert "Plan: 1 to add, 0 to change, 1 to destroy." in out
    (ws / "other.yaml").write_text(job_yaml("other", ["true"]))
    code, out, _ = run_cli("plan", "-f", "other.yaml")
    assert "# job.hello will be destroyed" in out and "Plan: 1 to add, 0 to change, 1 to destroy." in out


def test_labels_update_in_place(ws):
    (ws / "job.yaml").write_text(job_yaml("lab", ["true"]))
    assert run_cli("apply", "-f", "job.yaml", "--auto-approve")[0] == 0
    wait_phase("lab")
    (ws / "job.yaml").write_text(job_yaml("lab", ["true"]).replace("  name: lab\n", "  name: lab\n  labels: {team: a}\n"))
    code, out, _ = run_cli("plan", "-f", "job.yaml")
    assert '~ job "lab"' in out and "Plan: 0 to add, 1 to change, 0 to destroy." in out


def test_seed_finetune_has_no_feasible_placement_locally(ws):
    code, out, err = run_cli("plan", "-f", os.path.join(EXAMPLES, "finetune-llama.yaml"))
    assert code == 1 and "Traceback" not in err
    assert "no feasible placement" in err and "job.llama-7b-sft" in err
    assert "needs 32 GPUs per node" in err or "needs 1 node" in err or "nodes" in err


def test_plan_json_markdown_and_saved_plan(ws):
    (ws / "job.yaml").write_text(job_yaml("js", ["true"]))
    code, out, _ = run_cli("plan", "-f", "job.yaml", "--json")
    doc = json.loads(out)
    assert doc["format_version"] == "1.0" and doc["prior_state"]["serial"] == 0
    rc = doc["resource_changes"][0]
    assert rc["address"] == "job.js" and rc["change"]["actions"] == ["create"] and rc["change"]["before"] is None
    assert rc["change"]["after"]["artifact"]["kind"] == "local-run"
    code, out, _ = run_cli("plan", "-f", "job.yaml", "--format", "markdown")
    assert "| `+` | `job.js` |" in out and "<details>" in out
    assert run_cli("plan", "-f", "job.yaml", "-out", "p.json")[0] == 0
    code, out, err = run_cli("apply", "p.json")
    assert code == 0, err
    wait_phase("js")


def test_stale_plan_refused(ws):
    (ws / "a.yaml").write_text(job_yaml("a", ["true"]))
    assert run_cli("plan", "-f", "a.yaml", "-out", "old.json")[0] == 0
    assert run_cli("apply", "-f", "a.yaml", "--auto-approve")[0] == 0
    code, _, err = run_cli("apply", "old.json")
    assert code == 1 and "stale" in err and "plan again" in err and "Traceback" not in err


def test_no_terminal_no_auto_approve_is_an_error(ws):
    (ws / "a.yaml").write_text(job_yaml("a", ["true"]))
    code, _, err = run_cli("apply", "-f", "a.yaml", input="")
    assert code == 1 and "--auto-approve" in err  # usage errors exit 1: 2 means "changes" for plan
    assert not (ws / ".jsctl" / "state.json").exists()


def test_command_not_found_fails_clearly(ws):
    (ws / "a.yaml").write_text(job_yaml("nocmd", ["definitely-not-a-command-xyz", "--flag"]))
    assert run_cli("apply", "-f", "a.yaml", "--auto-approve")[0] == 0
    row = wait_phase("nocmd")
    assert row["phase"] == "FAILED" and "command not found: definitely-not-a-command-xyz" in row["reason"]
    code, out, _ = run_cli("status", "nocmd")
    assert code == 0 and "command not found" in out
    assert "command not found" in run_cli("logs", "nocmd")[1]


def test_workflow_order_and_failed_dependency(ws):
    (ws / "a.yaml").write_text(job_yaml("a", ["bash", "-c", "echo A > $JETSTREAM_MOUNT_OUT/a.txt"],
                                        "storage:\n  outputs:\n    - {name: out, path: 'out/${JOB_ID}'}\n"))
    (ws / "b.yaml").write_text(job_yaml("b", ["bash", "-c", "cat $JETSTREAM_MOUNT_IN/a.txt; exit 3"],
                                        "storage:\n  inputs:\n    - {name: in, path: '{{jobs.a.outputs.out}}'}\n"))
    (ws / "c.yaml").write_text(job_yaml("c", ["true"]))
    (ws / "wf.yaml").write_text("version: jetstream.v1\nworkflow:\n  name: wf\n  jobs:\n"
                                "    - {name: a, spec: a.yaml}\n    - {name: b, spec: b.yaml}\n"
                                "    - {name: c, spec: c.yaml, dependsOn: [b]}\n")
    code, out, err = run_cli("apply", "-f", "wf.yaml", "--auto-approve")
    assert code == 1, out
    assert "workflow.wf.job.c: not submitted: dependency workflow.wf.job.b ended FAILED" in out
    assert "A" in run_cli("logs", "b")[1]
    code, out, _ = run_cli("status", "--json")
    phases = {r["name"]: r["phase"] for r in json.loads(out)["jobs"]}
    assert phases == {"a": "SUCCEEDED", "b": "FAILED"}


def test_secrets_reach_the_job_but_never_disk(ws):
    (ws / "s.yaml").write_text(job_yaml("sec", ["bash", "-c", "echo token-length=${#API_TOKEN}"],
                                        "environment:\n  secrets: [API_TOKEN]\n"))
    value = "s3cr3t-value-123"
    code, out, err = run_cli("plan", "-f", "s.yaml", "-out", "p.json", env={"API_TOKEN": value})
    code, out, err = run_cli("apply", "p.json", env={"API_TOKEN": value})
    assert code == 0, err
    wait_phase("sec")
    assert f"token-length={len(value)}" in run_cli("logs", "sec")[1]
    for path in ws.rglob("*"):
        if path.is_file():
            assert value not in path.read_text(errors="replace"), path


def test_missing_secret_stops_before_submitting(ws):
    (ws / "s.yaml").write_text(job_yaml("sec", ["true"], "environment:\n  secrets: [NOT_SET_ANYWHERE]\n"))
    env = {k: v for k, v in os.environ.items() if k != "NOT_SET_ANYWHERE"}
    code, _, err = run_cli("apply", "-f", "s.yaml", "--auto-approve", env=env)
    assert code == 1 and "NOT_SET_ANYWHERE" in err
    assert not (ws / ".jsctl" / "runs").exists()


def test_target_destroy_describe_logs(ws):
    (ws / "a.yaml").write_text(job_yaml("a", ["bash", "-c", "for i in 1 2 3; do echo line$i; done"]))
    (ws / "b.yaml").write_text(job_yaml("b", ["true"]))
    code, out, _ = run_cli("plan", "-f", "a.yaml", "-f", "b.yaml", "--target", "job.b")
    assert "Plan: 1 to add" in out and "job.a" not in out
    assert run_cli("apply", "-f", "a.yaml", "-f", "b.yaml", "--auto-approve")[0] == 0
    wait_phase("a")
    code, out, _ = run_cli("logs", "--tail", "2", "a")
    assert code == 0 and "line3" in out and "line1" not in out
    code, out, _ = run_cli("logs", "-f", "a", timeout=30)
    assert "line1" in out and "line3" in out
    code, out, _ = run_cli("describe", "a")
    assert code == 0 and "job.a" in out and "local-run" not in out and "run.json" in out and "Events:" in out
    code, out, err = run_cli("destroy", "-f", "a.yaml", "-f", "b.yaml", "--auto-approve")
    assert code == 0, err
    assert "Destroy complete! Resources: 0 added, 0 changed, 2 destroyed." in out
    assert json.loads((ws / ".jsctl" / "state.json").read_text())["resources"] == {}
    code, _, err = run_cli("status", "a")
    assert code == 1 and "no job 'a' in state" in err


def test_pause_resume(ws):
    (ws / "a.yaml").write_text(job_yaml("p", ["sleep", "30"]))
    assert run_cli("apply", "-f", "a.yaml", "--auto-approve")[0] == 0
    wait_phase("p", ("RUNNING",))
    import time

    time.sleep(0.5)
    assert run_cli("pause", "p")[0] == 0
    assert wait_phase("p", ("PAUSED",))["phase"] == "PAUSED"
    assert run_cli("resume", "p")[0] == 0
    assert wait_phase("p", ("RUNNING",))["phase"] == "RUNNING"
    assert run_cli("stop", "p")[0] == 0


def test_scale_needs_the_launcher(ws):
    (ws / "a.yaml").write_text(job_yaml("sc", ["sleep", "5"]))
    assert run_cli("apply", "-f", "a.yaml", "--auto-approve")[0] == 0
    code, _, err = run_cli("scale", "sc", "--gpu-count", "2")
    assert code == 1 and "not launched by torchrun" in err and "Traceback" not in err
    run_cli("stop", "sc")


def test_usage_errors_exit_1_not_2(ws):
    """2 is "changes present" under plan --detailed-exitcode; a mistyped command line must not look like it."""
    for args in (("plan", "--no-such-option"), ("no-such-verb",), ("scale", "x"), ("status", "nope")):
        code, _, err = run_cli(*args)
        assert code == 1 and "Error:" in err and "Traceback" not in err, (args, err)
    code, _, err = run_cli("apply", "--json", "-f", "a.yaml")
    assert code == 1 and "--json needs --auto-approve" in err


def test_apply_and_destroy_stream_json_lines(ws):
    (ws / "a.yaml").write_text(job_yaml("a", ["true"]))
    (ws / "b.yaml").write_text(job_yaml("b", ["bash", "-c", "exit 3"]))
    (ws / "c.yaml").write_text(job_yaml("c", ["true"]))
    (ws / "wf.yaml").write_text("version: jetstream.v1\nworkflow:\n  name: wf\n  jobs:\n"
                                "    - {name: b, spec: b.yaml}\n    - {name: c, spec: c.yaml, dependsOn: [b]}\n")
    code, out, err = run_cli("apply", "--json", "--auto-approve", "-f", "a.yaml")
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]  # stdout is JSON lines and nothing else
    assert [e["type"] for e in lines] == ["submitted", "summary"] and "Plan: 1 to add" in err  # plan: stderr
    assert lines[0]["address"] == "job.a" and lines[0]["handle"].startswith("local://local/")
    assert lines[0]["job_id"].startswith("js-a-") and lines[1]["ok"] is True and lines[1]["added"] == 1
    wait_phase("a")
    code, out, err = run_cli("apply", "--json", "--auto-approve", "-f", "a.yaml")
    assert code == 0, err
    assert [json.loads(line)["type"] for line in out.splitlines()] == ["summary"]  # nothing to do
    code, out, err = run_cli("apply", "--json", "--auto-approve", "-f", "a.yaml", "-f", "wf.yaml")
    assert code == 1, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [e["type"] for e in lines] == ["submitted", "waiting", "skipped", "summary"], lines
    assert lines[0]["address"] == "workflow.wf.job.b"
    assert lines[1] == {"type": "waiting", "address": "workflow.wf.job.c", "dependency": "workflow.wf.job.b"}
    assert lines[2]["reason"].startswith("dependency workflow.wf.job.b ended FAILED")
    summary = lines[-1]
    assert summary["ok"] is False and summary["added"] == 1 and summary["format_version"]
    assert list(summary["skipped"]) == ["workflow.wf.job.c"] and summary["failed"] == {}
    code, out, err = run_cli("destroy", "--json", "--auto-approve", "-f", "a.yaml", "-f", "wf.yaml")
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert {e["address"] for e in lines if e["type"] == "destroyed"} == {"job.a", "workflow.wf.job.b"}
    assert {e["address"] for e in lines if e["type"] == "stopping"} == {"job.a", "workflow.wf.job.b"}
    assert lines[-1]["type"] == "summary" and lines[-1]["destroyed"] == 2 and lines[-1]["ok"] is True
