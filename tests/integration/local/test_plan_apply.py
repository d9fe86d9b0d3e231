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
    # the summary says what did not happen (issue 10), not "Apply complete!"
    assert "Apply complete!" not in out
    assert ("Apply incomplete! Resources: 2 added, 0 changed, 0 destroyed; 1 not submitted "
            "(workflow.wf.job.c: dependency workflow.wf.job.b ended FAILED") in out
    assert "1 job was not submitted (workflow.wf.job.c)" in err
    assert "A" in run_cli("logs", "b")[1]
    code, out, _ = run_cli("status", "--json")
    rows = {r["name"]: r for r in json.loads(out)["jobs"]}
    assert {n: r["phase"] for n, r in rows.items()} == {"a": "SUCCEEDED", "b": "FAILED", "c": "NOT SUBMITTED"}
    assert rows["c"]["reason"].startswith("dependency workflow.wf.job.b ended FAILED") and rows["c"]["handle"] is None
    code, out, _ = run_cli("status")
    assert code == 0 and "NOT SUBMITTED" in out and "c: dependency workflow.wf.job.b ended FAILED" in out
    code, out, err = run_cli("status", "c")  # was: "no job 'c' in state"
    assert code == 0 and "NOT SUBMITTED" in out, err
    code, out, err = run_cli("describe", "c")
    assert code == 0 and "Phase:      NOT SUBMITTED" in out and "dependency workflow.wf.job.b ended FAILED" in out
    code, out, _ = run_cli("plan", "-f", "wf.yaml")  # the job that did not run is planned again
    assert "# workflow.wf.job.c will be created" in out, out
    code, out, err = run_cli("destroy", "-f", "wf.yaml", "--auto-approve")
    assert code == 0, err
    code, out, _ = run_cli("status", "--json")  # destroying the workflow forgets what it did not submit
    assert json.loads(out)["jobs"] == []


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
    assert "Engine events" not in out  # the local provider keeps none (ProviderClient.events' default)
    # state keeps each file's digest; describe shows its text as the run directory holds it
    recorded = json.loads((ws / ".jsctl" / "state.json").read_text())["resources"]["job.a"]["artifact"]["files"]
    assert [name for name, _ in recorded] == ["run.json"] and recorded[0][1].startswith("sha256:")
    assert "---- run.json ----\n{" in out and "line$i" in out
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
    assert run_cli("pause", "p")[0] == 1  # no checkpoints: refused (issue 16)
    assert run_cli("pause", "p", "--force")[0] == 0  # stopped in place (SIGSTOP)
    assert wait_phase("p", ("PAUSED",))["phase"] == "PAUSED"
    assert run_cli("resume", "p")[0] == 0
    assert wait_phase("p", ("RUNNING",))["phase"] == "RUNNING"
    assert run_cli("stop", "p")[0] == 0


def test_scale_needs_the_launcher(ws):
    (ws / "a.yaml").write_text(job_yaml("sc", ["sleep", "5"]))
    assert run_cli("apply", "-f", "a.yaml", "--auto-approve")[0] == 0
    code, _, err = run_cli("scale", "sc", "--gpu-count", "2", "--auto-approve")
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


def test_f_takes_several_paths_and_directories_for_every_verb(ws):
    """`-f jobs/*.yaml` as the shell expands it, and `-f DIR` (its *.yaml; -R for below), for plan, apply
    and destroy; a workflow's job files in the same directory are planned once, as its jobs (issue 10)."""
    (ws / "a.yaml").write_text(job_yaml("a", ["true"]))
    (ws / "b.yaml").write_text(job_yaml("b", ["true"]))
    code, out, err = run_cli("plan", "-f", "a.yaml", "b.yaml")
    assert code == 0, err
    assert '+ job "a"' in out and '+ job "b"' in out and "Plan: 2 to add, 0 to change, 0 to destroy." in out
    (ws / "pipe").mkdir()
    (ws / "pipe" / "c.yaml").write_text(job_yaml("c", ["true"]))
    (ws / "pipe" / "d.yaml").write_text(job_yaml("d", ["true"]))
    (ws / "pipe" / "wf.yaml").write_text("version: jetstream.v1\nworkflow:\n  name: wf\n  jobs:\n"
                                         "    - {name: c, spec: c.yaml}\n    - {name: d, spec: d.yaml, dependsOn: [c]}\n")
    code, out, err = run_cli("plan", "-f", "pipe", "--json")
    assert code == 0, err
    assert sorted(rc["address"] for rc in json.loads(out)["resource_changes"]) == \
        ["workflow.wf.job.c", "workflow.wf.job.d"]
    code, out, err = run_cli("plan", "-f", ".")  # not recursive unless -R, as kubectl
    assert code == 0 and "Plan: 2 to add" in out, err
    code, out, err = run_cli("plan", "-f", ".", "-R", "--json")
    assert code == 0, err
    assert len(json.loads(out)["resource_changes"]) == 4
    code, out, err = run_cli("apply", "-f", "a.yaml", "b.yaml", "--auto-approve")
    assert code == 0 and "Resources: 2 added" in out, err
    wait_phase("a"), wait_phase("b")
    code, out, err = run_cli("destroy", "-f", ".", "--auto-approve")
    assert code == 0 and "Destroy complete! Resources: 0 added, 0 changed, 2 destroyed." in out, err
    code, _, err = run_cli("apply", "-f", "a.yaml", "plan.json")
    assert code == 1 and "not both" in err
    (ws / "empty").mkdir()
    for verb in ("plan", "apply", "destroy"):
        code, out, err = run_cli(verb, "-f", "nope.yaml", "empty", *(["--auto-approve"] if verb != "plan" else []))
        assert code == 1 and "Traceback" not in err, (verb, err)
        assert "nope.yaml: error: no such file or directory" in err, (verb, err)
        assert "empty: error: directory holds no .yaml or .yml files" in err, (verb, err)


def test_name_from_a_variable_is_the_address_and_id(ws):
    (ws / "job.yaml").write_text(job_yaml("${NAME}", ["true"]).replace("name: ${NAME}", 'name: "${NAME}"'))
    code, out, err = run_cli("plan", "-f", "job.yaml", "-v", "NAME=abc")
    assert code == 0, err
    assert '+ job "abc"' in out and "# job.abc will be created" in out and '"js-abc-' in out
    assert "${NAME}" not in out


SLURM_WORKSPACE = """\
version: jetstream.v1
clusters:
  - name: hpc
    provider: slurm
    access: {mode: local}
    container_runtime: none
    shared_dir: shared
    partitions:
      - name: gpu
        gpu_type: a100-80gb
        gpus_per_node: 8
        nodes: 4
        cpus_per_node: 128
        memory_per_node: 2Ti
        max_time: 72h
        gpu_hour_rate: 2.5
"""


def test_failed_plan_still_prints_its_json_and_markdown_documents(ws):
    """Issue 10: CI posts the document, error included, on the pull request; the exit code stays 1."""
    seed = os.path.join(EXAMPLES, "finetune-llama.yaml")
    code, out, err = run_cli("plan", "-f", seed, "--json")
    assert code == 1 and "no feasible placement" in err and "Traceback" not in err
    doc = json.loads(out)
    assert "no feasible placement" in doc["errors"][0]["message"] and doc["errors"][0]["hint"]
    rc = doc["resource_changes"][0]
    assert rc["address"] == "job.llama-7b-sft" and rc["change"]["after"]["placement"] is None and rc["candidates"]
    code, out, err = run_cli("plan", "-f", seed, "--format", "markdown")
    assert code == 1 and out.startswith("### jsctl plan") and "**Error:**" in out and "no feasible placement" in out
    (ws / "jsctl.yaml").write_text(SLURM_WORKSPACE)
    (ws / "a.yaml").write_text(job_yaml("a", ["true"], "compute:\n  resources: {gpu: {type: a100-80gb, count: 8}}\n"
                                        "  time_limit: 2h\n"))
    code, out, err = run_cli("plan", "-f", "a.yaml", "--max-cost", "10", "--json")
    assert code == 1 and "over the budget" in err
    doc = json.loads(out)
    assert doc["errors"][0]["message"].startswith("the plan is over the budget of $10.00")
    assert doc["cost"]["over_budget"] == ["job.a"] and doc["resource_changes"][0]["address"] == "job.a"
    code, out, _ = run_cli("plan", "-f", "a.yaml", "--max-cost", "10", "--format", "markdown")
    assert code == 1 and "over the budget of $10.00" in out and "| `+` | `job.a` |" in out


def test_seed_finetune_locally_says_what_it_asked_and_how_to_add_a_cluster(ws):
    code, _, err = run_cli("plan", "-f", os.path.join(EXAMPLES, "finetune-llama.yaml"))
    assert code == 1
    assert "it asks for 32 a100-80gb GPUs" in err and "worker processes on this machine's CPU" in err
    assert "`clusters:` in jsctl.yaml" in err and "this machine has 1 node × 2" not in err


def test_plan_cost_and_command_read_right_and_describe_a_cpu_job(ws):
    (ws / "jsctl.yaml").write_text(SLURM_WORKSPACE)
    (ws / "a.yaml").write_text(job_yaml("a", ["bash", "-c", "echo hi; sleep 2"],
                                        "compute:\n  resources: {gpu: {type: a100-80gb, count: 8}}\n"))
    (ws / "prep.yaml").write_text(job_yaml("prep", ["true"], "compute:\n  resources: {cpu: {count: 4}}\n"
                                           "  time_limit: 1h\n"))
    code, out, err = run_cli("plan", "-f", "a.yaml", "-f", "prep.yaml")
    assert code == 0, err
    assert "command     = bash -c 'echo hi; sleep 2'" in out
    assert "run bound unknown: no time_limit for job.a" in out and "run bound $0.00" not in out
    assert "the engine may apply the pool's default or maximum time limit, at most 72h" in out
    assert "Warning: job.prep uses no GPU but is placed on hpc / gpu" in out
    (ws / "a.yaml").write_text(job_yaml("a", ["true"], "compute:\n  resources: {gpu: {type: a100-80gb, count: 8}}\n"
                                        "  time_limit: 2h\n"))
    code, out, err = run_cli("plan", "-f", "a.yaml", "--duration", "10h")
    assert code == 0 and "at most $40.00 for time_limit 2h (not --duration 10h" in out, err
    code, out, _ = run_cli("plan", "-f", "a.yaml", "--format", "markdown")
    assert "| 20.00 | new |" in out and "Estimated: +$20.00/h (run bound $40.00)." in out
    (ws / "jsctl.yaml").unlink()
    (ws / "c.yaml").write_text(job_yaml("c", ["true"]))
    assert run_cli("apply", "-f", "c.yaml", "--auto-approve")[0] == 0
    wait_phase("c")
    code, out, err = run_cli("describe", "c")
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("Placement:"))
    assert line == "Placement:  local / this machine : 1 node, CPU only", line


def test_target_matching_nothing_is_an_error_and_a_bare_name_works(ws):
    (ws / "job.yaml").write_text(job_yaml("llama-7b-sft", ["true"]))
    (ws / "other.yaml").write_text(job_yaml("other", ["true"]))
    code, out, err = run_cli("plan", "-f", "job.yaml", "-f", "other.yaml", "--target", "llama-7b-sft")
    assert code == 0, err
    assert '+ job "llama-7b-sft"' in out and '"other"' not in out and "Plan: 1 to add" in out
    code, out, err = run_cli("plan", "-f", "job.yaml", "-f", "other.yaml", "--target", "job.llama-7b-stf")
    assert code == 1 and "Traceback" not in err and "No changes" not in out
    assert "--target job.llama-7b-stf matches no job (did you mean 'job.llama-7b-sft'?)" in err
    assert "job.llama-7b-sft, job.other" in err
    code, _, err = run_cli("apply", "-f", "job.yaml", "--target", "nothing", "--auto-approve")
    assert code == 1 and "matches no job" in err and not (ws / ".jsctl" / "state.json").exists()


def test_unused_variable_warns_and_var_file_format_is_explained(ws):
    (ws / "job.yaml").write_text(job_yaml("v", ["echo", "${GREETING}"]))
    code, out, err = run_cli("plan", "-f", "job.yaml", "-v", "GREETING=hi", "-v", "GRETING=hi")
    assert code == 0, err
    assert "warning: -v GRETING=... is set but no file given uses ${GRETING} (did you mean 'GREETING'?)" in err
    assert "GREETING=..." not in err
    (ws / "vars.env").write_text("GREETING=hi\n")
    code, out, err = run_cli("plan", "-f", "job.yaml", "--var-file", "vars.env")
    assert code == 1 and "Traceback" not in err
    assert "vars.env:1:1: error: expected a mapping" in err and "    GREETING=hi" in err
    assert "a --var-file is a YAML mapping of NAME: value" in err
    code, out, err = run_cli("plan", "-f", "job.yaml", "-v", "GREETNG=hi")
    assert code == 1 and "undefined variable 'GREETING' (did you mean 'GREETNG'?)" in err


def test_the_seeds_submit_and_describe_job_verbs(ws):
    """`jsctl submit -f FILE -v K=V` plans and applies without asking (no terminal, no --auto-approve);
    `jsctl describe job ID` reads as the product description writes it."""
    (ws / "sub.yaml").write_text(job_yaml("sub-${EXP}", ["echo", "hi"]))
    code, out, err = run_cli("submit", "-f", "sub.yaml", "-v", "EXP=one")
    assert code == 0, err
    assert "Plan: 1 to add" in out and "Apply complete!" in out
    job_id = json.loads(run_cli("status", "--json")[1])["jobs"][0]["job_id"]
    assert job_id.startswith("js-sub-one-")
    code, out, err = run_cli("describe", "job", job_id)
    assert code == 0 and "job.sub-one" in out, err
    assert run_cli("describe", "job", "a", "b")[0] == 1
    assert run_cli("submit")[0] == 1
