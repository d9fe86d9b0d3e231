"""The provider contract: what every provider must do, run once per provider (see conftest.py).

1. rendering is deterministic;
2. the digest in a saved plan is the digest of what the engine received;
3. submit, refresh and cancel are idempotent, and a saved plan applies once;
4. a lost state write adopts the submitted job instead of submitting it again;
5. hostile values in env values, arguments and labels arrive literally;
6. secret values reach the job and appear in no artifact, plan file or state file;
7. the launch-contract environment is complete.
"""
from __future__ import annotations

import dataclasses
import json
import secrets as pysecrets
import time
from pathlib import Path

import pytest

from contractkit import (INSTALLED, LAUNCH_NAMES, PET_NAMES, PROVIDERS, Harness, record, state, wait_for,
                         wait_record, write_job)
from hostile import HOSTILE
from jsctl.config import workspace
from jsctl.config.spec import build
from jsctl.model.artifact import RenderedArtifact, Request
from jsctl.model.job import JobContext
from jsctl.model.status import JobHandle
from jsctl.plan import planfile
from jsctl.providers import registry


# ---- helpers --------------------------------------------------------------------------------------

def saved_plan(h: Harness, jsctl, job: Path, out: str = "plan.json", env: dict | None = None):
    code, stdout, stderr = jsctl("plan", "-f", str(job), "-out", out, env=env)
    assert code == 0, stdout + stderr
    plan = planfile.load(str(h.ws / out))
    (change,) = plan.changes
    assert change.action == "create" and change.provider == h.provider and change.cluster == h.cluster, change
    return plan, change


def context(h: Harness, change, job: Path) -> JobContext:
    """The JobContext the planner rendered `change` from, rebuilt from the saved plan."""
    w = workspace.load(str(h.ws / "jsctl.yaml"))
    spec = build(change.spec, str(job))
    fields = {f.name for f in dataclasses.fields(JobContext)}
    extra = {"runtime_names": registry.get(h.provider).runtime_names()} if "runtime_names" in fields else {}
    return JobContext(change.address, change.job_id, change.generation, spec, change.placement, change.depends_on,
                      dict(change.strategy or {}),
                      str(job.parent), w.cluster(change.cluster), **extra)


def read_dump(prefix: Path) -> dict:
    """What the dump job wrote (node 0's file)."""
    files = sorted(prefix.parent.glob(prefix.name + ".*"))
    assert files, f"the job wrote no {prefix}.*"
    return json.loads(files[0].read_text(encoding="utf-8"))


def run_dump_job(h: Harness, jsctl, name: str, want: list[str], **kw) -> tuple[dict, dict]:
    """Apply a dump job through the CLI, wait for it; (what it wrote, its state record)."""
    text, prefix = h.dump_job(name, want, **kw)
    job = write_job(h, name, text)
    code, out, err = jsctl("apply", "-f", str(job), "--auto-approve")
    assert code == 0, out + err
    handle, live = wait_record(h, f"job.{name}")
    assert live.phase == "SUCCEEDED", (live, "".join(h.client().logs(handle)))
    h.emulate_node(handle)
    return read_dump(prefix), record(h, f"job.{name}")


# ---- 1. deterministic rendering ---------------------------------------------------------------------

def test_render_is_deterministic(harness, jsctl):
    h = harness
    job = write_job(h, "det", h.job("det", ["python", "-c", "print('hi')", "--flag=${JOB_ID}"], gpus=True,
                                    env={"A": "1", "B": "two words"}, labels={"team": "x", "cost-center": "42"}))
    _, first = saved_plan(h, jsctl, job, "one.json")
    _, second = saved_plan(h, jsctl, job, "two.json")
    assert first.artifact.files == second.artifact.files and first.artifact.digest == second.artifact.digest
    assert first.artifact.request == second.artifact.request

    provider = registry.get(h.provider)
    request_type = provider.request_type()
    assert issubclass(request_type, Request) and isinstance(first.artifact.request, request_type)
    assert dataclasses.is_dataclass(request_type) and request_type.__dataclass_params__.frozen
    assert request_type.from_dict(first.artifact.request.to_dict()) == first.artifact.request
    again = RenderedArtifact.from_dict(json.loads(json.dumps(first.artifact.to_dict())), request_type)
    assert again.digest == first.artifact.digest  # the plan file keeps the digest

    ctx = context(h, first, job)
    one = provider.render(ctx, None)
    assert one.digest == first.artifact.digest  # what the planner rendered, from the same inputs
    two = provider.render(ctx, None)
    fresh = type(provider)().render(ctx, None)
    for other in (two, fresh):
        assert [(n, c.encode()) for n, c in other.files] == [(n, c.encode()) for n, c in one.files]
        assert other.request == one.request and other.digest == one.digest


# ---- 2. the saved plan's digest is what the engine received ----------------------------------------

def test_saved_plan_digest_is_what_the_engine_received(harness, jsctl):
    h = harness
    job = write_job(h, "digest", h.sleeper("digest"))
    _, change = saved_plan(h, jsctl, job)
    planned = json.loads((h.ws / "plan.json").read_text())
    (rc,) = planned["resource_changes"]
    code, out, err = jsctl("apply", "plan.json")
    assert code == 0, out + err
    rec = record(h, change.address)
    assert rec["artifact_digest"] == change.artifact.digest
    if rc["change"]["after"].get("artifact_digest"):
        assert rc["change"]["after"]["artifact_digest"] == change.artifact.digest
    handle = JobHandle.parse(rec["handle"])
    assert h.received(handle, change.artifact) == change.artifact.digest

    # applied once: the same plan file again is refused as stale (or changes nothing)
    code, out, err = jsctl("apply", "plan.json")
    assert (code == 1 and "stale" in (out + err)) or (code == 0 and "No changes" in out), out + err
    assert len(h.jobs_named(change.job_id)) == 1  # one job in the engine
    assert record(h, change.address)["handle"] == rec["handle"]


# ---- 3. idempotent client ----------------------------------------------------------------------------

def test_submit_refresh_cancel_are_idempotent(harness, jsctl):
    h = harness
    job = write_job(h, "idem", h.sleeper("idem"))
    _, change = saved_plan(h, jsctl, job)
    client = h.client()
    handle = client.submit(change.artifact, {}, {})
    h.submitted.append(str(handle))
    assert handle.provider == h.provider and handle.cluster == h.cluster
    assert JobHandle.parse(str(handle)) == handle

    first = client.refresh([handle, handle])  # a handle twice: one answer
    assert set(first) == {handle} and first[handle].phase in ("PENDING", "RUNNING")
    h.wait(client, handle, ("RUNNING",))
    assert client.refresh([handle])[handle].phase == "RUNNING"

    client.cancel(handle)
    client.cancel(handle)  # again: fine
    cancelled = h.wait(client, handle, ("CANCELLED", "FAILED"))
    assert cancelled.terminal
    client.cancel(handle)  # and after it ended
    assert client.refresh([handle])[handle].phase == cancelled.phase

    unknown = h.unknown_handle()
    answers = client.refresh([unknown, handle])  # one batched call: an unknown handle answers too
    assert answers[unknown].phase in ("UNKNOWN", "SUCCEEDED", "FAILED", "CANCELLED")
    assert answers[handle].phase == cancelled.phase
    client.cancel(unknown)  # cancelling what the engine does not know is not an error
    assert client.refresh([]) == {}


# ---- 4. a lost state write adopts ----------------------------------------------------------------------

def test_adopt_finds_what_was_submitted(harness, jsctl):
    h = harness
    job = write_job(h, "adoptme", h.sleeper("adoptme"))
    _, change = saved_plan(h, jsctl, job)
    client = h.client()
    assert client.adopt(change.artifact) is None  # nothing submitted yet
    handle = client.submit(change.artifact, {}, {})
    h.submitted.append(str(handle))
    assert client.adopt(change.artifact) == handle
    assert h.client().adopt(change.artifact) == handle  # a fresh client (another jsctl process) too


def test_lost_state_write_adopts_instead_of_resubmitting(harness, jsctl):
    h = harness
    job = write_job(h, "lost", h.sleeper("lost"))
    code, out, err = jsctl("apply", "-f", str(job), "--auto-approve")
    assert code == 0, out + err
    first = record(h, "job.lost")
    assert h.jobs_named(first["job_id"]) != []
    doc = state(h)
    doc["resources"], doc["generations"] = {}, {}  # as if apply died between submit and recording it
    (h.ws / ".jsctl" / "state.json").write_text(json.dumps(doc))
    code, out, err = jsctl("apply", "-f", str(job), "--auto-approve")
    assert code == 0, out + err
    assert "adopting it" in out, out
    again = record(h, "job.lost")
    assert again["handle"] == first["handle"] and again["job_id"] == first["job_id"]
    assert len(h.jobs_named(first["job_id"])) == 1  # submitted once


# ---- 5. hostile values arrive literally ------------------------------------------------------------------

def test_hostile_values_arrive_literally(harness, jsctl):
    h = harness
    env = {f"V{i}": v for i, v in enumerate(HOSTILE)}
    labels = {f"l{i}": v for i, v in enumerate(HOSTILE)}
    want = [*env, *([h.labels_variable] if h.labels_variable else [])]
    dump, rec = run_dump_job(h, jsctl, "quoting", want, args=list(HOSTILE), env=env, labels=labels)
    assert dump["argv"] == HOSTILE
    assert {k: dump["env"][k] for k in env} == env
    assert dict(rec["spec"]["job"]["labels"]) == labels
    if h.labels_variable:
        assert json.loads(dump["env"][h.labels_variable]) == labels
    pwned = [str(p) for p in h.ws.rglob("PWNED*")]
    assert not pwned, pwned


# ---- 6. secrets: to the job, never to disk --------------------------------------------------------------

def test_secrets_reach_the_job_and_no_file(harness, jsctl):
    h = harness
    value = f"s3cr3t-{pysecrets.token_hex(12)}-'\"$(x)`y`;z"
    text, prefix = h.dump_job("secretive", ["JS_CONTRACT_TOKEN"], secrets=("JS_CONTRACT_TOKEN",))
    job = write_job(h, "secretive", text)
    code, out, err = jsctl("plan", "-f", str(job), "-out", "plan.json", env={"JS_CONTRACT_TOKEN": value})
    assert code == 0, out + err
    assert value not in out + err
    code, out, err = jsctl("apply", "plan.json", env={"JS_CONTRACT_TOKEN": value})
    assert code == 0, out + err
    assert value not in out + err
    handle, live = wait_record(h, "job.secretive")
    assert live.phase == "SUCCEEDED", (live, "".join(h.client().logs(handle)))
    h.emulate_node(handle)
    dump = read_dump(prefix)
    assert dump["env"]["JS_CONTRACT_TOKEN"] == value
    dumps = set(prefix.parent.glob(prefix.name + ".*"))
    searched = [p for p in h.files_to_search() if p not in dumps]
    assert any(p.name == "plan.json" for p in searched) and any(p.name == "state.json" for p in searched)
    leaked = [str(p) for p in searched if value.encode() in p.read_bytes()]
    assert not leaked, leaked
    assert value not in json.dumps(record(h, "job.secretive"))


# ---- 7. the launch contract's environment -------------------------------------------------------------

def _pet_names() -> tuple[str, ...]:
    """torchrun's PET_* defaults, as far as this jsctl's launch contract sets them (render/launch.py)."""
    from jsctl.render import launch

    if hasattr(launch, "torchrun_environment"):
        return tuple(sorted(launch.torchrun_environment()))
    doc = Path(__file__).resolve().parents[2] / "docs" / "launch-contract.md"
    text = doc.read_text(encoding="utf-8") if doc.exists() else ""
    return tuple(n for n in PET_NAMES if n in text)


def test_launch_environment_is_complete(harness, jsctl):
    h = harness
    names = [*LAUNCH_NAMES, *_pet_names()]
    dump, rec = run_dump_job(h, jsctl, "launchenv", names, gpus=True)
    env = dump["env"]
    missing = [n for n in names if not env.get(n)]
    assert not missing, (missing, env)
    p = rec["placement"]
    assert env["JOB_ID"] == env["JETSTREAM_JOB_ID"] == rec["job_id"]
    assert env["JETSTREAM_ADDRESS"] == rec["address"] == "job.launchenv"
    assert int(env["JETSTREAM_NNODES"]) == p["nodes"]
    assert int(env["JETSTREAM_GPUS_PER_NODE"]) == max(p["gpus_per_node"], 1)
    assert int(env["JETSTREAM_WORLD_SIZE"]) == p["nodes"] * max(p["gpus_per_node"], 1)
    assert env["MASTER_PORT"].isdigit() and 0 < int(env["MASTER_PORT"]) < 65536
    unexpanded = {k: v for k, v in env.items() if "${" in v}
    assert not unexpanded, unexpanded  # `${NAME}` in a value expands when the job runs
    expected = {"PET_NNODES": env["JETSTREAM_NNODES"], "PET_NPROC_PER_NODE": env["JETSTREAM_GPUS_PER_NODE"],
                "PET_RDZV_ENDPOINT": f"{env['MASTER_ADDR']}:{env['MASTER_PORT']}", "PET_RDZV_ID": env["JOB_ID"],
                "PET_RDZV_BACKEND": "c10d"}
    assert {k: env[k] for k in expected if k in env} == {k: v for k, v in expected.items() if k in env}


def test_every_installed_provider_has_a_harness():
    missing = sorted(set(INSTALLED) - set(PROVIDERS))
    assert not missing, (f"installed providers without a contract harness: {missing}; add one to "
                         "tests/contract/contractkit.py (HARNESSES)")


# ---- the lifecycle verbs reach every provider through the SDK --------------------------------------------

def test_status_logs_and_stop_through_the_cli(harness, jsctl):
    h = harness
    job = write_job(h, "verbs", h.job("verbs", ["sh", "-c", "echo started-$JOB_ID; sleep 60"]))
    code, out, err = jsctl("apply", "-f", str(job), "--auto-approve")
    assert code == 0, out + err
    handle, _ = wait_record(h, "job.verbs", ("RUNNING",))
    job_id = record(h, "job.verbs")["job_id"]

    def status() -> dict:
        code, out, err = jsctl("status", "verbs", "--json")
        assert code == 0, out + err
        (row,) = json.loads(out)["jobs"]
        return row

    assert status()["phase"] == "RUNNING"
    if h.logs_unavailable is None:
        wait_for(lambda: f"started-{job_id}" in jsctl("logs", "verbs")[1], h.timeout, what="the job's log")
    else:
        code, out, err = jsctl("logs", "verbs")
        assert code == 0, out + err  # the engine answers, but not with what the job printed
    code, out, err = jsctl("stop", "verbs")
    assert code == 0, out + err
    wait_for(lambda: status()["phase"] == "CANCELLED", h.timeout, what="CANCELLED in jsctl status")
    code, out, err = jsctl("stop", "verbs")  # idempotent
    assert code == 0, out + err
    if h.logs_unavailable:
        pytest.skip(f"status and stop checked; the log check does not apply to {h.provider}: {h.logs_unavailable}")


# ---- isolation: a job id names a job within one workspace only ------------------------------------------

def test_jobs_of_another_workspace_are_untouched(harness, jsctl, monkeypatch):
    """Job ids are a pure function of address and generation, so two workspaces (two checkouts, two CI
    runs on one machine) have the same id for `job.twin`: stopping one must not touch the other."""
    h = harness
    job = write_job(h, "twin", h.sleeper("twin"))
    assert jsctl("apply", "-f", str(job), "--auto-approve")[0] == 0
    mine, _ = wait_record(h, "job.twin", ("RUNNING",))

    other = type(h)(h.ws / "other")
    other.ws.mkdir()
    other.setup()
    other.submitted = []
    monkeypatch.chdir(other.ws)
    theirs = None
    try:
        job = write_job(other, "twin", other.sleeper("twin"))
        code, out, err = jsctl("apply", "-f", str(job), "--auto-approve")
        assert code == 0, out + err
        theirs, _ = wait_record(other, "job.twin", ("RUNNING",))
        assert record(other, "job.twin")["job_id"] == record(h, "job.twin")["job_id"]  # the same id
        code, out, err = jsctl("stop", "twin")
        assert code == 0, out + err
        other.wait(other.client(), theirs, ("CANCELLED",))
    finally:
        other.cleanup([str(theirs)] if theirs else [])
        monkeypatch.chdir(h.ws)
    assert h.client().refresh([mine])[mine].phase == "RUNNING"
    time.sleep(1.0)
    assert h.client().refresh([mine])[mine].phase == "RUNNING"
