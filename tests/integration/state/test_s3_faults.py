"""Faults on the S3 backend (moto), through the real CLI: nothing is lost, nothing is mixed."""
import json
import os
import signal
import subprocess
import sys
import time

import boto3
import pytest
from s3state import s3_workspace
from localjobs import job_yaml, run_cli

from jsctl.state.s3 import S3Backend


@pytest.fixture
def s3ws(tmp_path, monkeypatch, moto_url, bucket):
    monkeypatch.chdir(tmp_path)
    s3_workspace(tmp_path, moto_url, bucket)
    yield tmp_path
    for status in tmp_path.glob(".jsctl/runs/*/status.json"):  # never leave jobs running
        try:
            data = json.loads(status.read_text())
            if data.get("child_pgid") and data.get("phase") in ("RUNNING", "PAUSED"):
                os.killpg(int(data["child_pgid"]), 9)
        except (ValueError, ProcessLookupError, PermissionError):
            pass


def _state(moto_url, bucket) -> dict:
    s3 = boto3.client("s3", endpoint_url=moto_url, region_name="us-east-1")
    return json.loads(s3.get_object(Bucket=bucket, Key="jsctl/state.json")["Body"].read())


def _apply(*args):
    return subprocess.Popen([sys.executable, "-m", "jsctl.cli", "apply", *args, "--auto-approve"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_apply_records_in_s3_and_nothing_local(s3ws, moto_url, bucket):
    (s3ws / "a.yaml").write_text(job_yaml("a", ["true"]))
    code, out, err = run_cli("apply", "-f", "a.yaml", "--auto-approve")
    assert code == 0, err
    assert list(_state(moto_url, bucket)["resources"]) == ["job.a"]
    assert not (s3ws / ".jsctl" / "state.json").exists()
    code, out, err = run_cli("plan", "-f", "a.yaml", "--refresh=false")
    assert code == 0 and "No changes" in out, out + err
    s3 = boto3.client("s3", endpoint_url=moto_url, region_name="us-east-1")
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket, Prefix="jsctl/state.json.lock")  # released


def test_two_applies_at_once_one_writes(s3ws, moto_url, bucket):
    (s3ws / "a.yaml").write_text(job_yaml("a", ["true"]))
    procs = [_apply("-f", "a.yaml") for _ in range(2)]
    results = [p.communicate(timeout=90) + (p.returncode,) for p in procs]
    submitted = sum(r[0].count("submitted local://") for r in results)
    assert submitted == 1, results
    for out, err, code in results:
        assert "Traceback" not in err
        if code:
            assert "the state is locked by another operation" in err and "ID:" in err and "Who:" in err, err
    state = _state(moto_url, bucket)
    assert list(state["resources"]) == ["job.a"] and state["serial"] == 1


def test_second_apply_waits_for_the_lease(s3ws, moto_url, bucket):
    (s3ws / "a.yaml").write_text(job_yaml("a", ["true"]))
    (s3ws / "b.yaml").write_text(job_yaml("b", ["true"]))
    held = S3Backend(bucket, "jsctl/state.json", "us-east-1", moto_url).lock("apply")
    try:
        code, _, err = run_cli("apply", "-f", "a.yaml", "--auto-approve")
        assert code == 1 and f"ID:        {held.id}" in err and "Operation: apply" in err
        first = _apply("-f", "a.yaml", "--lock-timeout", "60s")
        said = ""
        while "Waiting..." not in said:  # it saw the lock and waits (its stderr, line by line)
            line = first.stderr.readline()
            assert line, said
            said += line
        assert "Acquiring state lock" in said and held.id in said
        held.release()
        out, err = first.communicate(timeout=90)
        assert first.returncode == 0, said + err
    finally:
        held.release()
    code, out, err = run_cli("apply", "-f", "a.yaml", "-f", "b.yaml", "--auto-approve")
    assert code == 0, err
    assert sorted(_state(moto_url, bucket)["resources"]) == ["job.a", "job.b"]


def test_killed_holder_lease_expires_and_next_command_proceeds(s3ws, moto_url, bucket):
    (s3ws / "a.yaml").write_text(job_yaml("a", ["sleep", "30"]))
    (s3ws / "b.yaml").write_text(job_yaml("b", ["true"]))
    (s3ws / "wf.yaml").write_text("version: jetstream.v1\nworkflow:\n  name: wf\n  jobs:\n"
                                  "    - {name: a, spec: a.yaml}\n    - {name: b, spec: b.yaml, dependsOn: [a]}\n")
    env = {**os.environ, "JSCTL_LOCK_LEASE": "2"}
    proc = subprocess.Popen([sys.executable, "-m", "jsctl.cli", "apply", "-f", "wf.yaml", "--auto-approve"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if "workflow.wf.job.a" in _state(moto_url, bucket)["resources"]:
                break
        except Exception:  # noqa: BLE001 - not written yet
            pass
        time.sleep(0.2)
    time.sleep(0.5)  # apply now waits for a, holding the lock
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    backend = S3Backend(bucket, "jsctl/state.json", "us-east-1", moto_url)
    dead = backend.lock_info()
    assert dead and dead["Operation"] == "apply"
    # the holder is on "another machine" for this check: only its lease can free the lock
    s3 = boto3.client("s3", endpoint_url=moto_url, region_name="us-east-1")
    s3.put_object(Bucket=bucket, Key="jsctl/state.json.lock",
                  Body=json.dumps({**dead, "host": "elsewhere", "expires": time.time() + 2}).encode())
    code, out, err = run_cli("stop", "a", "--lock-timeout", "30s", env={"JSCTL_LOCK_LEASE": "2"})
    assert code == 0, err
    assert f"Took over the state lock {dead['ID']}" in err and dead["Who"] in err
    state = _state(moto_url, bucket)
    assert sorted(state["resources"]) == ["workflow.wf.job.a"]  # what the dead apply recorded is kept
    assert state["resources"]["workflow.wf.job.a"]["status"]["stopped_by_jsctl"] is True
    assert backend.lock_info() is None


def test_late_writer_after_takeover_loses_nothing(moto_url, bucket, monkeypatch):
    """A holder whose lease was taken over writes late: its conditional write fails, it re-reads and
    re-applies its record; the new holder's record stays."""
    monkeypatch.setenv("JSCTL_LOCK_LEASE", "1")
    make = lambda: S3Backend(bucket, "k/state.json", "us-east-1", moto_url)  # noqa: E731
    slow, fast = make(), make()
    s = slow.read()
    s.put("job.slow", {"name": "slow", "generation": 1})
    slow.write(s)
    slow_state = slow.read()
    fresh = fast.read()
    fresh.put("job.fast", {"name": "fast", "generation": 1})
    fast.write(fresh)
    slow_state.put("job.slow2", {"name": "slow2", "generation": 1})
    slow.write(slow_state)
    assert sorted(make().read().resources) == ["job.fast", "job.slow", "job.slow2"]


def test_force_unlock_on_s3(s3ws, moto_url, bucket):
    held = S3Backend(bucket, "jsctl/state.json", "us-east-1", moto_url).lock("apply")
    try:
        code, _, err = run_cli("force-unlock", "wrong-id")
        assert code == 1 and "does not match" in err
        code, out, err = run_cli("force-unlock", held.id)
        assert code == 0 and "Released the lock" in out, err
        assert S3Backend(bucket, "jsctl/state.json", "us-east-1", moto_url).lock_info() is None
    finally:
        held.release()
