"""Faults: concurrent applies, a killed apply, a lost state write, corrupt state, locks."""
import json
import os
import signal
import subprocess
import sys
import threading
import time

from localjobs import job_yaml, run_cli, wait_phase

from jsctl.state.lock import StateLock


def test_second_apply_fails_with_lock_info(ws):
    (ws / "a.yaml").write_text(job_yaml("a", ["true"]))
    os.makedirs(".jsctl", exist_ok=True)
    lock = StateLock(str(ws / ".jsctl" / "state.json.lock"), "apply").acquire()
    try:
        code, out, err = run_cli("apply", "-f", "a.yaml", "--auto-approve")
        assert code == 1 and "Traceback" not in err
        assert "the state is locked by another operation" in err
        assert f"ID:        {lock.id}" in err and "Operation: apply" in err and "Who:" in err
        assert f"jsctl force-unlock {lock.id}" in err
        assert not (ws / ".jsctl" / "state.json").exists()
        threading.Timer(1.0, lock.release).start()
        code, out, err = run_cli("apply", "-f", "a.yaml", "--auto-approve", "--lock-timeout", "20s")
        assert code == 0, err
        assert "Acquiring state lock" in err
    finally:
        lock.release()


def test_two_applies_at_once_never_both_write(ws):
    (ws / "a.yaml").write_text(job_yaml("a", ["true"]))
    procs = [subprocess.Popen([sys.executable, "-m", "jsctl.cli", "apply", "-f", "a.yaml", "--auto-approve"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [p.communicate(timeout=60) + (p.returncode,) for p in procs]
    codes = sorted(r[2] for r in results)
    submitted = sum(r[0].count("submitted local://") for r in results)
    assert submitted == 1, results
    assert codes in ([0, 0], [0, 1]), results  # the second either saw No changes or the lock
    state = json.loads((ws / ".jsctl" / "state.json").read_text())
    assert list(state["resources"]) == ["job.a"]


def test_killed_apply_leaves_true_state(ws):
    (ws / "a.yaml").write_text(job_yaml("a", ["sleep", "30"]))
    (ws / "b.yaml").write_text(job_yaml("b", ["true"]))
    (ws / "wf.yaml").write_text("version: jetstream.v1\nworkflow:\n  name: wf\n  jobs:\n"
                                "    - {name: a, spec: a.yaml}\n    - {name: b, spec: b.yaml, dependsOn: [a]}\n")
    proc = subprocess.Popen([sys.executable, "-m", "jsctl.cli", "apply", "-f", "wf.yaml", "--auto-approve"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    state_file = ws / ".jsctl" / "state.json"
    deadline = time.time() + 30
    while time.time() < deadline:
        if state_file.exists() and "workflow.wf.job.a" in state_file.read_text():
            break
        time.sleep(0.1)
    time.sleep(0.5)  # apply is now waiting for a to succeed before submitting b
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    code, out, err = run_cli("plan", "-f", "wf.yaml")
    assert code == 0, err
    assert "# workflow.wf.job.b will be created" in out and "# workflow.wf.job.a" not in out
    assert "Plan: 1 to add, 0 to change, 0 to destroy." in out
    runs = os.listdir(ws / ".jsctl" / "runs")
    assert len(runs) == 1  # a was submitted once
    assert run_cli("stop", "a", "--lock-timeout", "10s")[0] == 0  # the dead apply's lock is taken over


def test_lost_state_write_adopts_instead_of_submitting_twice(ws):
    (ws / "a.yaml").write_text(job_yaml("a", ["bash", "-c", "echo started; sleep 2"]))
    assert run_cli("apply", "-f", "a.yaml", "--auto-approve")[0] == 0
    state_file = ws / ".jsctl" / "state.json"
    state = json.loads(state_file.read_text())
    state["resources"] = {}  # as if apply died between submit and recording it
    state["generations"] = {}
    state_file.write_text(json.dumps(state))
    code, out, err = run_cli("apply", "-f", "a.yaml", "--auto-approve")
    assert code == 0, err
    assert "adopting it" in out
    wait_phase("a")
    assert run_cli("logs", "a")[1].count("\nstarted\n") == 1


def test_corrupt_state_is_never_overwritten(ws):
    (ws / "a.yaml").write_text(job_yaml("a", ["true"]))
    assert run_cli("apply", "-f", "a.yaml", "--auto-approve")[0] == 0
    (ws / "b.yaml").write_text(job_yaml("b", ["true"]))
    assert run_cli("apply", "-f", "a.yaml", "-f", "b.yaml", "--auto-approve")[0] == 0  # makes a backup
    state_file = ws / ".jsctl" / "state.json"
    truncated = state_file.read_text()[:100]
    state_file.write_text(truncated)
    for args in (("plan", "-f", "a.yaml"), ("apply", "-f", "a.yaml", "--auto-approve"), ("status",)):
        code, _, err = run_cli(*args)
        assert code == 1 and "Traceback" not in err, err
        assert "corrupt or truncated" in err and "state.json.backup" in err
    assert state_file.read_text() == truncated
    assert json.loads((ws / ".jsctl" / "state.json.backup").read_text())["resources"]


def test_force_unlock(ws):
    os.makedirs(".jsctl", exist_ok=True)
    lock = StateLock(str(ws / ".jsctl" / "state.json.lock"), "apply").acquire()
    code, _, err = run_cli("force-unlock", "wrong-id")
    assert code == 1 and "does not match" in err
    code, out, _ = run_cli("force-unlock", lock.id)
    assert code == 0 and "Released the lock" in out
    assert not (ws / ".jsctl" / "state.json.lock").exists()
    lock.release()


def test_dead_holder_lock_is_taken_over(ws):
    os.makedirs(".jsctl", exist_ok=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    info = {"ID": "dead", "Operation": "apply", "Who": "x", "Created": "then", "Path": "p",
            "host": os.uname().nodename, "pid": dead.pid, "expires": time.time() + 600}
    (ws / ".jsctl" / "state.json.lock").write_text(json.dumps(info))
    (ws / "a.yaml").write_text(job_yaml("a", ["true"]))
    code, _, err = run_cli("apply", "-f", "a.yaml", "--auto-approve")
    assert code == 0, err


def test_stop_and_status(ws):
    (ws / "a.yaml").write_text(job_yaml("sl", ["sleep", "60"]))
    assert run_cli("apply", "-f", "a.yaml", "--auto-approve")[0] == 0
    wait_phase("sl", ("RUNNING",))
    code, out, _ = run_cli("stop", "sl")
    assert code == 0 and "Stopped" in out
    row = wait_phase("sl", ("CANCELLED",), timeout=20)
    assert row["reason"] == "stopped by jsctl stop"
    assert run_cli("stop", "sl")[0] == 0  # idempotent
