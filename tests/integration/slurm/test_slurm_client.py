"""The Slurm client against the real CI cluster, without the CLI: probe and offers, sbatch
--test-only, submit/adopt/refresh/logs/pause/resume/cancel, dependency checks, the job completion
log, and the shell-quoting test with secrets."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from hostile import HOSTILE, hostile_job
from slurmit import inventory, wait_for
from jsctl.config import workspace
from jsctl.config.spec import build
from jsctl.config.variables import Variables
from jsctl.errors import ProviderError
from jsctl.plan.catalog import builtin
from jsctl.plan.planner import PlanInputs, make_plan
from jsctl.plan.resolve import load_sources
from jsctl.providers import registry
from jsctl.model.job import JobContext
from jsctl.model.status import JobHandle
from jsctl.model.state import State


def plan(ws: Path, files: list[str], variables: dict | None = None, facts=None):
    w = workspace.load(str(ws / "jsctl.yaml"))
    paths = [str(ws / f) for f in files]
    sources, diags = load_sources(paths, Variables(variables or {}))
    assert not diags, diags
    return w, make_plan(PlanInputs(sources, State(), w, facts or {}, {}, (), False, False, tuple(paths))).changes


@pytest.fixture
def client(ws):
    w = workspace.load(str(ws / "jsctl.yaml"))
    return registry.get("slurm").client(w.cluster("ci"), str(ws))


def wait_phase(client, handle, phases, timeout=60):
    return wait_for(lambda: (s := client.refresh([handle])[handle]).phase in phases and s, timeout,
                    what=f"{handle} to be {'/'.join(phases)}")


def test_probe_offers_from_the_cluster(ws, client):
    facts = client.probe()
    part = facts.data["partitions"]["debug"]
    assert part["state"] == "UP" and part["nodes"] == ["jsn1", "jsn2"] and part["usable_nodes"] == 2
    assert facts.data["version"].startswith("22.05") or facts.data["version"]
    (ws / "jsctl.yaml").write_text(inventory(ws / "shared", partitions=False))  # no partitions listed
    w = workspace.load(str(ws / "jsctl.yaml"))
    (offer,) = registry.get("slurm").offers(w.cluster("ci"), facts, builtin())
    assert (offer.pool, offer.gpus_per_node, offer.max_nodes, offer.gpu_type, offer.available) == \
        ("debug", 4, 2, "*", True)
    _, (change,) = plan(ws, ["quickstart-2x2.yaml"], facts={"ci": facts})
    assert (change.placement.nodes, change.placement.gpus_per_node) == (2, 2)


def test_check_remote(ws, client):
    _, (change,) = plan(ws, ["quickstart-4gpu.yaml"])
    assert "to start at" in client.check(change.artifact)
    too_big = ws / "jsctl.yaml"
    too_big.write_text(too_big.read_text().replace("gpus_per_node: 4", "gpus_per_node: 8"))
    _, (change,) = plan(ws, ["quickstart-2x2.yaml"], {"X": "1"})
    art = change.artifact
    art = dataclasses.replace(art, files=((art.files[0][0], art.files[0][1].replace(
        "--gpus-per-node=2", "--gpus-per-node=8")),))
    with pytest.raises(ProviderError, match="Requested node configuration is not available"):
        client.check(art)


def test_submit_adopt_refresh_logs_pause_resume_cancel(ws, client, submitted):
    _, (change,) = plan(ws, ["sleeper.yaml"], {"SECONDS_TO_SLEEP": "120"})
    assert client.adopt(change.artifact) is None
    handle = client.submit(change.artifact, {}, {})
    submitted.append(handle.id)
    assert str(handle) == f"slurm://ci/{handle.id}"
    assert client.adopt(change.artifact) == handle  # a re-apply after a crash finds it
    live = wait_phase(client, handle, ("RUNNING",))
    assert live.nodes and live.started_at
    wait_for(lambda: "sleeper started\n" in list(client.logs(handle)), 30, what="the first log line")
    with pytest.raises(ProviderError, match="writes no checkpoints"):  # it would lose its progress
        client.pause(handle)
    forced = client.pause(handle, force=True)
    assert forced.step is None  # requeued and held: no GPUs, starts over on resume
    assert "requeued and held (GPUs held: none)" in forced.how and "progress is lost" in forced.how
    paused = client.refresh([handle])[handle]
    assert (paused.phase, paused.engine_state, paused.restarts) == ("PAUSED", "PENDING", 1)
    assert "GPUs held: none" in paused.reason and not paused.nodes
    client.resume(handle)  # released: it runs again once Slurm schedules it
    assert client.refresh([handle])[handle].phase in ("PENDING", "RUNNING")
    client.cancel(handle)
    gone = wait_phase(client, handle, ("CANCELLED",))
    assert gone.engine_state == "CANCELLED"
    client.cancel(handle)  # idempotent
    assert client.adopt(change.artifact) is None  # a cancelled job is not adopted


def test_pending_job_holds_and_releases(ws, client, submitted):
    _, (change,) = plan(ws, ["sleeper.yaml"], {"SECONDS_TO_SLEEP": "1"})
    blocker = subprocess.run(["sbatch", "--parsable", "--hold", "-o", "/dev/null", "--wrap", "true"],
                             capture_output=True, text=True, check=True).stdout.strip()
    submitted.append(blocker)
    handle = client.submit(change.artifact, {}, {"job.blocker": JobHandle("slurm", "ci", blocker)})
    submitted.append(handle.id)
    first = client.refresh([handle])[handle]
    assert first.phase == "PENDING" and "waiting for afterok:" in first.reason
    client.pause(handle)  # pending: scontrol hold
    assert client.refresh([handle])[handle].phase == "PAUSED"
    client.resume(handle)
    assert client.refresh([handle])[handle].phase == "PENDING"
    subprocess.run(["scontrol", "release", blocker], check=True)
    done = wait_phase(client, handle, ("SUCCEEDED", "FAILED", "CANCELLED"))
    assert done.phase == "SUCCEEDED" and done.exit_code == 0


def test_dependencies_are_checked_before_submit(ws, client, submitted):
    _, (change,) = plan(ws, ["sleeper.yaml"], {"SECONDS_TO_SLEEP": "0"})
    failed = subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", "--wrap", "exit 4"],
                            capture_output=True, text=True, check=True).stdout.strip()
    up = JobHandle("slurm", "ci", failed)
    s = wait_phase(client, up, ("FAILED",))
    assert s.exit_code == 4
    with pytest.raises(ProviderError, match="upstream job.up .* ended FAILED"):
        client.submit(change.artifact, {}, {"job.up": up})
    with pytest.raises(ProviderError, match="not on Slurm cluster ci"):
        client.submit(change.artifact, {}, {"job.x": JobHandle("local", "local", "1")})
    # finished jobs Slurm no longer holds are read from the job completion log (no slurmdbd here)
    assert client._sacct([failed])[failed].phase == "FAILED"
    assert client.refresh([JobHandle("slurm", "ci", "999999")])[JobHandle("slurm", "ci", "999999")].phase == \
        "UNKNOWN"


SECRET = "s3cr3t 'quoted' \"dq\" $(touch PWNED_secret) `x`; end\n"


def test_quoting_on_the_real_cluster(ws, client, submitted):
    """Name, env values, command and hooks with quotes, $(), backticks and ; arrive unchanged and run
    nothing; the secret travels through sbatch's environment and lands in no file."""
    dump = f"    DUMP: {json.dumps(str(ws / 'dump.json'))}"
    (ws / "quoting.yaml").write_text(hostile_job(dump, ("TOKEN",), "  secrets: [TOKEN]\n"))
    _, (change,) = plan(ws, ["quoting.yaml"])
    spec = dataclasses.replace(build(change.spec, change.file), name="q'u;o$(touch PWNED_name)`x`")
    ctx = JobContext(change.address, "js-q'u;o$(touch PWNED_id)`x`", 1, spec, change.placement, (), {}, str(ws))
    art = registry.get("slurm").render(ctx, None)
    assert "s3cr3t" not in json.dumps(art.to_dict())
    handle = client.submit(art, {"TOKEN": SECRET, "OTHER": "not this job's"}, {})
    submitted.append(handle.id)
    done = wait_phase(client, handle, ("SUCCEEDED", "FAILED", "CANCELLED"))
    log = "".join(client.logs(handle))
    assert done.phase == "SUCCEEDED", log
    got = json.loads((ws / "dump.json").read_text())
    assert got["argv"] == HOSTILE
    assert [got["env"][f"V{i}"] for i in range(len(HOSTILE))] == HOSTILE
    assert got["env"]["TOKEN"] == SECRET
    assert (ws / "pre.txt").read_text() == "it's $(touch PWNED_pre); `id`"
    job = json.loads(subprocess.run(["squeue", "--json"], capture_output=True, text=True).stdout)
    (mine,) = [j for j in job["jobs"] if str(j["job_id"]) == handle.id]
    assert mine["name"] == "js-q'u;o$(touch PWNED_id)`x`"
    assert "jsctl: js-q'u;o$(touch PWNED_id)`x` is Slurm job" in log
    assert not list(ws.rglob("PWNED*")) and not list(Path.home().glob("PWNED*"))
    for f in ws.rglob("*"):  # the secret is in no file (the dump aside, which the job wrote)
        if f.is_file() and f.name != "dump.json":
            assert "s3cr3t" not in f.read_text(errors="replace"), f


def test_logs_per_node_and_follow(ws, client, submitted):
    (ws / "nodes.yaml").write_text("""\
version: jetstream.v1
job:
  name: nodes
compute:
  resources:
    gpu:
      count: 2
      per_node: 1
lifecycle:
  command: [sh, -c, 'sleep 1; echo "hello from $SLURMD_NODENAME"; sleep 1; echo bye']
""")
    _, (change,) = plan(ws, ["nodes.yaml"])
    handle = client.submit(change.artifact, {}, {})
    submitted.append(handle.id)
    t0 = time.monotonic()
    followed = list(client.logs(handle, follow=True))  # ends by itself once the job ended
    assert time.monotonic() - t0 < 60
    text = "".join(followed)
    assert "0: hello from jsn1\n" in text and "1: hello from jsn2\n" in text
    assert text.rstrip().endswith("jsctl: the command ended with exit 0")
    assert list(client.logs(handle, node="jsn2")) == ["hello from jsn2\n", "bye\n"]
    assert list(client.logs(handle, node="0")) == ["hello from jsn1\n", "bye\n"]
    assert list(client.logs(handle, tail=1)) == ["jsctl: the command ended with exit 0\n"]
    with pytest.raises(ProviderError, match="has no node 'jsn9'"):
        list(client.logs(handle, node="jsn9"))


FAKE_SSH = r"""#!/bin/sh
# stand-in for ssh to a login node: run the remote line with sh, as sshd would with the login shell
while [ $# -gt 0 ]; do
  case $1 in --) shift; break ;; -o|-p|-i|-l) shift 2 ;; *) shift ;; esac
done
shift
exec sh -c "$1"
"""


def test_ssh_access(ws, submitted, monkeypatch):
    """access.mode ssh: every command is one quoted remote line; the secret rides stdin ahead of the
    script (a stand-in ssh runs the line here, against the same cluster)."""
    bin_dir = ws / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(FAKE_SSH)
    (bin_dir / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    text = (ws / "jsctl.yaml").read_text().replace(
        "      mode: local            # sbatch, squeue, ... run here; SLURM_CONF says which cluster",
        f"      mode: ssh\n      host: login.example\n      slurm_conf: {os.environ['SLURM_CONF']}")
    assert "mode: ssh" in text
    (ws / "jsctl.yaml").write_text(text)
    (ws / "secret.yaml").write_text("""\
version: jetstream.v1
job:
  name: secret
compute:
  resources:
    cpu:
      count: 1
environment:
  secrets: [TOKEN]
lifecycle:
  command: [sh, -c, 'printf "%s" "$TOKEN" > "$0"', 'token.txt']
""")
    w, (change,) = plan(ws, ["secret.yaml"])
    assert change.artifact.request.access == "ssh" and change.artifact.request.workdir == str(ws / "shared")
    client = registry.get("slurm").client(w.cluster("ci"), str(ws))
    assert "debug" in client.probe().data["partitions"]
    handle = client.submit(change.artifact, {"TOKEN": SECRET}, {})
    submitted.append(handle.id)
    done = wait_phase(client, handle, ("SUCCEEDED", "FAILED", "CANCELLED"))
    assert done.phase == "SUCCEEDED", "".join(client.logs(handle))
    assert (ws / "shared" / "token.txt").read_text() == SECRET
    assert "jsctl: the command ended with exit 0\n" in list(client.logs(handle))
