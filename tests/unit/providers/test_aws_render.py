"""aws-batch's pure half: settings, the job definition (container / multinode), retry, timeout,
secrets, tags, the entry script's prologue on each kind of node, status mapping, lazy boto3."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from goldens import plan_of, planned
from jsctl.config.diagnostics import Diagnostic
from jsctl.errors import ProviderError
from jsctl.model.cluster import Cluster
from jsctl.providers import registry
from jsctl.providers.aws_batch import status
from jsctl.providers.aws_batch.request import AwsBatchRequest
from jsctl.providers.aws_batch.settings import AwsSettings

INVENTORY = """version: jetstream.v1
clusters:
  - name: aws
    provider: aws-batch
    region: us-east-1
    instance_types: [g5.xlarge, p4de.24xlarge]
    job_queues: {on-demand: od, spot: sp}
    secrets: {MAPPED: "arn:aws:secretsmanager:us-east-1:123456789012:secret:mapped-AbCdEf"}
"""


def job(name="t", gpus=0, extra="", command='["python", "-c", "print(1)"]', labels="", env=""):
    compute = (f"compute:\n  resources:\n    gpu: {{type: a10g, count: {gpus}, per_node: 1}}\n  time_limit: 30s\n"
               if gpus else "compute:\n  resources:\n    cpu: {count: 2}\n    memory: {total: 3Gi}\n")
    return (f"version: jetstream.v1\njob:\n  name: {name}\n{labels}{compute}{extra}"
            f"environment:\n  image: img:1\n{env}lifecycle:\n  command: {command}\n")


def change(tmp_path, text, inventory=INVENTORY):
    (tmp_path / "jsctl.yaml").write_text(inventory)
    (tmp_path / "j.yaml").write_text(text)
    (c,) = planned(str(tmp_path / "jsctl.yaml"), str(tmp_path / "j.yaml"))
    return c


def test_a_cpu_job_is_a_container_job(tmp_path):
    c = change(tmp_path, job())
    r = c.artifact.request
    assert isinstance(r, AwsBatchRequest) and r.job_queue == "od" and r.region == "us-east-1"
    d = r.to_dict()["definition"]
    assert d["type"] == "container" and "nodeProperties" not in d
    cont = d["containerProperties"]
    assert cont["resourceRequirements"] == [{"type": "VCPU", "value": "2"}, {"type": "MEMORY", "value": "3072"}]
    assert cont["command"][:2] == ["sh", "-c"] and cont["image"] == "img:1"
    assert "timeout" not in d
    body = json.loads(dict(c.artifact.files)[r.file])
    assert body == {"registerJobDefinition": d, "submitJob": r.to_dict()["submit"]}


def test_two_nodes_are_a_multinode_parallel_job_with_gpus_and_a_timeout(tmp_path):
    d = change(tmp_path, job(gpus=2)).artifact.request.to_dict()["definition"]
    assert d["type"] == "multinode" and "containerProperties" not in d
    props = d["nodeProperties"]
    assert (props["numNodes"], props["mainNode"], props["nodeRangeProperties"][0]["targetNodes"]) == (2, 0, "0:")
    assert {"type": "GPU", "value": "1"} in props["nodeRangeProperties"][0]["container"]["resourceRequirements"]
    assert d["timeout"] == {"attemptDurationSeconds": 60}  # 30s, raised to AWS's minimum


def test_retry_strategy_from_recovery(tmp_path):
    d = change(tmp_path, job()).artifact.request.to_dict()["definition"]
    assert d["retryStrategy"] == {"attempts": 2, "evaluateOnExit": [
        {"onStatusReason": "Host EC2*", "action": "RETRY"}, {"onExitCode": "75", "action": "RETRY"},
        {"onExitCode": "*", "action": "EXIT"}]}
    d = change(tmp_path, job(extra="recovery:\n  max_restarts: 3\n  restart_on_exit_codes: [1, 137]\n")) \
        .artifact.request.to_dict()["definition"]
    assert d["retryStrategy"]["attempts"] == 4
    assert [r.get("onExitCode") for r in d["retryStrategy"]["evaluateOnExit"]] == [None, "75", "1", "137", "*"]
    d = change(tmp_path, job(extra="recovery:\n  max_restarts: 2\n")).artifact.request.to_dict()["definition"]
    assert [r.get("onExitCode") for r in d["retryStrategy"]["evaluateOnExit"]] == [None, "75"]  # any failure retries


def test_secrets_are_references_never_values(tmp_path, monkeypatch):
    monkeypatch.setenv("MINE", "value-that-must-not-leak")
    c = change(tmp_path, job(env="  secrets: [MINE, MAPPED]\n"))
    r = c.artifact.request
    cont = r.to_dict()["definition"]["containerProperties"]
    assert cont["secrets"] == [{"name": "MINE", "valueFrom": f"/jsctl/{c.job_id}/MINE"},
                               {"name": "MAPPED", "valueFrom": INVENTORY.split('MAPPED: "')[1].split('"')[0]}]
    assert r.secret_parameters == (("MINE", f"/jsctl/{c.job_id}/MINE"),)
    assert "value-that-must-not-leak" not in json.dumps(c.artifact.to_dict())
    assert c.artifact.secrets == ("MINE",)  # the values apply reads: the mapped one ECS reads by its ARN


def test_tags_carry_address_and_job_id_and_valid_labels(tmp_path):
    c = change(tmp_path, job(labels='  labels: {team: ml, "bad key!": x, note: "a;b"}\n'))
    r = c.artifact.request.to_dict()
    tags = r["submit"]["tags"]
    assert tags["jsctl:address"] == "job.t" and tags["jsctl:job-id"] == c.job_id and tags["jsctl:generation"] == "1"
    assert tags["team"] == "ml" and "bad key!" not in tags and "note" not in tags
    assert tags["jsctl:content-hash"] == r["content_hash"] == r["definition"]["tags"]["jsctl:content-hash"]
    # said once, as the plan's warning (AWS06), not again in the artifact's notes
    assert not any("bad key!" in n for n in c.artifact.notes)
    plan = plan_of(str(tmp_path / "jsctl.yaml"), str(tmp_path / "j.yaml"))
    assert len([w for w in plan.warnings if "bad key!" in w]) == 1, plan.warnings


def test_content_hash_changes_with_the_definition_only(tmp_path):
    one = change(tmp_path, job()).artifact.request.content_hash
    assert change(tmp_path, job()).artifact.request.content_hash == one
    assert change(tmp_path, job(command='["python", "-c", "print(2)"]')).artifact.request.content_hash != one


def test_settings_and_queues():
    s = AwsSettings.of(Cluster("aws", "aws-batch", {"region": "eu-west-1", "job_queues": {"on-demand": "q"}}))
    assert s.queue("on-demand") == "q" and s.log_group == "/aws/batch/job"
    with pytest.raises(ProviderError, match="no `spot` queue"):
        s.queue("spot")
    with pytest.raises(ProviderError, match="job_queues"):
        AwsSettings.of(Cluster("aws", "aws-batch", {"region": "eu-west-1"}))


def test_the_schema_rejects_bad_settings(tmp_path):
    from jsctl.api.live import open_workspace
    from jsctl.errors import ConfigError

    for bad, word in (("    job_queues: {spot: s}\n", "on-demand"),
                      ("    job_queues: {on-demand: q}\n    secrets: {A: not-an-arn}\n", "not-an-arn"),
                      ("    job_queues: {on-demand: q}\n    zone: x\n", "zone")):
        (tmp_path / "jsctl.yaml").write_text("version: jetstream.v1\nclusters:\n  - name: aws\n    provider: aws-batch\n"
                                             "    region: us-east-1\n" + bad)
        with pytest.raises(ConfigError) as info:
            open_workspace(str(tmp_path / "jsctl.yaml"))
        assert word in str([d.message for d in info.value.diagnostics])


def test_plan_refuses_a_job_without_an_image(tmp_path, jsctl):
    (tmp_path / "jsctl.yaml").write_text(INVENTORY)
    (tmp_path / "j.yaml").write_text(job().replace("  image: img:1\n", "  env_vars: {A: b}\n"))
    code, out, err = jsctl("plan", "-f", str(tmp_path / "j.yaml"), "--workspace", str(tmp_path / "jsctl.yaml"))
    assert code == 1 and "an AWS Batch job needs environment.image" in out + err, out + err


PROBE = 'echo "$MASTER_ADDR|$NODE_RANK|$JETSTREAM_RESTART_COUNT|$PET_RDZV_ENDPOINT"'


@pytest.mark.parametrize("node,want", [
    ({}, "127.0.0.1|0|0|127.0.0.1:29500"),
    ({"AWS_BATCH_JOB_NUM_NODES": "2", "AWS_BATCH_JOB_NODE_INDEX": "1", "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0",
      "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS": "10.0.0.7", "AWS_BATCH_JOB_ATTEMPT": "3"},
     "10.0.0.7|1|2|10.0.0.7:29500"),
])
def test_the_prologue_sets_the_rendezvous_on_each_node(tmp_path, node, want):
    c = change(tmp_path, job(gpus=2, command=json.dumps(["sh", "-c", PROBE])))
    cmd = c.artifact.request.to_dict()["definition"]["nodeProperties"]["nodeRangeProperties"][0]["container"]["command"]
    res = subprocess.run(cmd, env={"PATH": os.environ["PATH"], **node}, capture_output=True, text=True, timeout=30)
    assert res.returncode == 0 and res.stdout.strip() == want, res.stdout + res.stderr


def test_the_main_node_uses_its_own_address_and_a_worker_needs_the_main_ones(tmp_path):
    c = change(tmp_path, job(gpus=2, command=json.dumps(["sh", "-c", PROBE])))
    cmd = c.artifact.request.to_dict()["definition"]["nodeProperties"]["nodeRangeProperties"][0]["container"]["command"]
    main = {"AWS_BATCH_JOB_NUM_NODES": "2", "AWS_BATCH_JOB_NODE_INDEX": "0", "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0"}
    res = subprocess.run(cmd, env={"PATH": os.environ["PATH"], **main}, capture_output=True, text=True, timeout=30)
    addr, rank = res.stdout.split("|")[:2]
    assert res.returncode == 0 and addr and rank == "0", res.stdout + res.stderr  # `hostname -i`, else the name
    worker = {**main, "AWS_BATCH_JOB_NODE_INDEX": "1"}  # without the main node's address: stops
    res = subprocess.run(cmd, env={"PATH": os.environ["PATH"], **worker}, capture_output=True, text=True, timeout=30)
    assert res.returncode != 0 and "not set on a worker node" in res.stderr


def test_status_mapping():
    assert status.live({"status": "RUNNABLE"}).phase == "PENDING"
    assert status.live({"status": "RUNNING", "startedAt": 2000}).started_at == 2.0
    s = status.live({"status": "FAILED", "statusReason": "jsctl: cancelled", "stoppedAt": 3000})
    assert (s.phase, s.engine_state, s.ended_at) == ("CANCELLED", "FAILED", 3.0)
    s = status.live({"status": "FAILED", "attempts": [{"container": {"exitCode": 3, "reason": "Essential container"}},
                                                       {"container": {"exitCode": 4, "reason": "OutOfMemory"}}]})
    assert (s.phase, s.exit_code, s.reason, s.restarts) == ("FAILED", 4, "OutOfMemory", 1)
    assert status.live({"status": "FAILED"}).reason == "AWS Batch gave no reason"
    assert status.live({"status": "WHAT"}).phase == "UNKNOWN"


def test_capabilities_and_runtime_names():
    p = registry.get("aws-batch")
    assert p.capabilities().dependencies and "AWS_BATCH_JOB_NODE_INDEX" in p.runtime_names()
    from jsctl.plan.catalog import builtin

    (d,) = p.check_cluster(Cluster("a", "aws-batch", {"instance_types": ["p4de.24xlarg"]}), builtin())
    assert isinstance(d, Diagnostic) and d.code == "AWS01" and "p4de.24xlarge" in d.message


def test_help_and_plans_import_no_boto3(tmp_path):
    """--help, a local plan and an aws-batch plan (empty state: nothing to refresh) import no boto3/botocore."""
    (tmp_path / "jsctl.yaml").write_text(INVENTORY)
    (tmp_path / "a.yaml").write_text(job())
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "jsctl.yaml").write_text("version: jetstream.v1\nclusters:\n  - {name: l, provider: local}\n")
    (tmp_path / "l.yaml").write_text("version: jetstream.v1\njob:\n  name: l\nlifecycle:\n  command: ['true']\n")
    code = textwrap.dedent("""
        import sys
        from click.testing import CliRunner
        from jsctl.cli import cli
        r = CliRunner()
        assert r.invoke(cli, ["--help"]).exit_code == 0
        for f, w in (("l.yaml", "local/jsctl.yaml"), ("a.yaml", "jsctl.yaml")):
            res = r.invoke(cli, ["plan", "-f", f, "--workspace", w])
            assert res.exit_code in (0, 2), res.output
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("boto3", "botocore"))
        assert not heavy, heavy
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def test_spot_capacity_goes_to_the_spot_queue(tmp_path):
    """The catalog prices no AWS spot capacity; a workspace catalog file does (as a user's would)."""
    (tmp_path / "catalog.yaml").write_text("instances:\n  - {cloud: aws, name: g5.xlarge, spot: 0.4, source: test fixture, date: 2026-11-30}\n")
    inventory = INVENTORY.replace("clusters:", "catalog: catalog.yaml\nclusters:").replace(
        "    job_queues:", "    spot: true\n    job_queues:")
    text = job().replace("compute:\n", "compute:\n  capacity: spot\n")
    (tmp_path / "jsctl.yaml").write_text(inventory)
    (tmp_path / "j.yaml").write_text(text)
    from click.testing import CliRunner

    from jsctl.cli import cli

    res = CliRunner().invoke(cli, ["plan", "-f", str(tmp_path / "j.yaml"), "--workspace", str(tmp_path / "jsctl.yaml"),
                                   "--show-artifacts"])
    assert res.exit_code in (0, 2), res.output
    assert "on queue sp" in res.output and '"jobQueue": "sp"' in res.output, res.output
