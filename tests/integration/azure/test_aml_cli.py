"""jsctl's verbs against the fake Azure ML service: the seed workflow in order (the service orders
nothing: apply waits for each upstream job to complete), secrets (Key Vault only, never in a job
request, plan or state), hostile values (run as Azure ML would run the recorded command)."""
from __future__ import annotations

import json
import os
import secrets as pysecrets
import sys

from amlnode import run_node
from amlkit import EXAMPLES, job_file
from hostile import HOSTILE

PIPELINE = os.path.join(EXAMPLES, "pipeline.yaml")
ORDER = ["data-prep", "fine-tune", "evaluate"]


def test_seed_workflow_applies_in_order(jsctl, ws, fake):
    code, out, err = jsctl("apply", "-f", PIPELINE, "--auto-approve")
    assert code == 0, out + err
    puts = fake.job_requests()
    assert [r["body"]["properties"]["displayName"] for r in puts] == ORDER
    ends = {}
    for r in puts:  # each job is created after its upstream job completed (by the service's clock)
        props = r["body"]["properties"]
        upstream = ORDER.index(props["displayName"]) - 1
        if upstream >= 0:
            assert r["t"] >= ends[ORDER[upstream]], (props["displayName"], "submitted before upstream completed")
        ends[props["displayName"]] = r["t"] + fake.queued_s + fake.run_s
    fine_tune = puts[1]["body"]["properties"]
    assert fine_tune["inputs"]["dataset"]["uri"] == puts[0]["body"]["properties"]["outputs"]["processed_data"]["uri"]
    assert fine_tune["resources"]["instanceCount"] == 2 and fine_tune["computeId"].endswith("/a100-ib-cluster")


def test_failed_upstream_stops_the_workflow(jsctl, ws, fake):
    code, out, err = jsctl("plan", "-f", PIPELINE, "-out", "plan.json")
    assert code == 0, out + err
    plan = json.loads((ws / "plan.json").read_text())
    first = next(rc for rc in plan["resource_changes"] if rc["address"].endswith(".data-prep"))
    fake.fail.add(first["change"]["after"]["job_id"])
    code, out, err = jsctl("apply", "plan.json")
    assert [r["body"]["properties"]["displayName"] for r in fake.job_requests()] == ["data-prep"]
    assert "FAILED" in out + err, out + err


def test_secrets_reach_the_job_through_key_vault_only(jsctl, ws, fake):
    value = f"s3cr3t-{pysecrets.token_hex(8)}-'\"$(x)`y`;z"
    dump = ws / "dump.json"
    command = json.dumps([sys.executable, "-c", f"import os; open({str(dump)!r}, 'w').write(os.environ['HF_TOKEN'])"])
    path = job_file(ws, "secretive", command, extra="  secrets: [HF_TOKEN]\n")
    code, out, err = jsctl("plan", "-f", path, "-out", "plan.json", env={"HF_TOKEN": value})
    assert code == 0 and "Key Vault" in out, out + err
    code, out, err = jsctl("apply", "plan.json", env={"HF_TOKEN": value})
    assert code == 0, out + err
    vault_puts = [r for r in fake.requests if r["path"].startswith("/vault/")]
    assert len(vault_puts) == 1 and vault_puts[0]["body"]["value"] == value
    others = [r for r in fake.requests if r not in vault_puts]
    assert others and not [r for r in others if value in json.dumps(r)]
    for name in ("plan.json", ".jsctl/state.json"):
        assert value not in (ws / name).read_text()
    (put,) = fake.job_requests()
    assert vault_puts[0]["path"].rsplit("/", 1)[1] in put["body"]["properties"]["command"]  # only its URL
    res = run_node(put["body"], str(ws), fake.url)
    assert res.returncode == 0, res.stderr
    assert dump.read_text() == value


def test_secrets_need_a_key_vault(jsctl, ws):
    text = (ws / "jsctl.yaml").read_text()
    (ws / "jsctl.yaml").write_text("\n".join(line for line in text.splitlines() if "key_vault" not in line) + "\n")
    code, out, err = jsctl("plan", "-f", job_file(ws, "secretive", extra="  secrets: [HF_TOKEN]\n"))
    assert code == 1 and "no secret injection" in out + err and "key_vault:" in out + err, out + err


def test_hostile_values_arrive_literally(jsctl, ws, fake):
    dump = ws / "hostile.json"
    env = "".join(f"    V{i}: {json.dumps(v)}\n" for i, v in enumerate(HOSTILE))
    code = ("import json, os, sys; json.dump({'argv': sys.argv[1:], 'env': [os.environ['V%d' % i] for i in "
            f"range({len(HOSTILE)})]}}, open({str(dump)!r}, 'w'))")
    labels = "  labels:\n" + "".join(f"    l{i}: {json.dumps(v)}\n" for i, v in enumerate(HOSTILE))
    path = job_file(ws, "quoting", json.dumps([sys.executable, "-c", code, *HOSTILE]),
                    extra=f"  env_vars:\n{env}", labels=labels)
    code, out, err = jsctl("apply", "-f", path, "--auto-approve")
    assert code == 0, out + err
    (put,) = fake.job_requests()
    tags = put["body"]["properties"]["tags"]
    assert {f"l{i}": tags[f"l{i}"] for i in range(len(HOSTILE))} == {f"l{i}": v for i, v in enumerate(HOSTILE)}
    res = run_node(put["body"], str(ws), fake.url)
    assert res.returncode == 0, res.stderr
    got = json.loads(dump.read_text())
    assert got == {"argv": HOSTILE, "env": HOSTILE}
    assert not list(ws.rglob("PWNED*"))
