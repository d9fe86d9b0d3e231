"""Drift on the local provider (issue 14, item 2): `plan/apply --refresh-only` record what changed
outside jsctl and nothing else; a finished job is never run again once its engine forgot it; a job
killed behind jsctl's back is replaced and resumes from its newest complete checkpoint."""
import json
import os
import shutil
import signal
import time

import pytest

from localjobs import job_yaml, run_cli
from paths import EXAMPLES

from jsctl.providers.local.runs import job_processes


def _state(ws) -> dict:
    return json.loads((ws / ".jsctl" / "state.json").read_text())


def _run_dir(ws, name):
    return next(p for p in (ws / ".jsctl" / "runs").iterdir() if p.name.startswith(f"js-{name}-"))


def _wait_file_phase(ws, name, phases=("SUCCEEDED",), timeout=60) -> None:
    """Wait on the run's own status file: `jsctl status` would record the phase in state."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if json.loads((_run_dir(ws, name) / "status.json").read_text()).get("phase") in phases:
                return
        except (StopIteration, OSError, ValueError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"{name} did not reach {phases}")


def _kill_behind_jsctls_back(run_dir) -> None:
    status = json.loads((run_dir / "status.json").read_text())
    for pid in [int(status["supervisor_pid"]), *job_processes(str(run_dir))]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.time() + 10
    while job_processes(str(run_dir)) and time.time() < deadline:
        time.sleep(0.1)


def test_refresh_only_records_drift_and_changes_nothing(ws):
    (ws / "a.yaml").write_text(job_yaml("a", ["sleep", "60"]))
    (ws / "b.yaml").write_text(job_yaml("b", ["true"]))
    code, out, err = run_cli("apply", "-f", "a.yaml", "-f", "b.yaml", "--auto-approve")
    assert code == 0, err
    _wait_file_phase(ws, "b")
    _wait_file_phase(ws, "a", ("RUNNING",))
    _kill_behind_jsctls_back(_run_dir(ws, "a"))
    runs_before = sorted(p.name for p in (ws / ".jsctl" / "runs").iterdir())
    serial = _state(ws)["serial"]

    code, out, err = run_cli("plan", "--refresh-only", "--detailed-exitcode")
    assert code == 2, err
    assert "Objects have changed outside of jsctl" in out and "refresh-only plan" in out
    assert '# job.a has changed' in out and '"PENDING" -> "FAILED"' in out
    assert '# job.b has changed' in out and '"PENDING" -> "SUCCEEDED"' in out
    assert "will perform the following actions" not in out
    doc = json.loads(run_cli("plan", "--refresh-only", "--json")[1])
    assert doc["refresh_only"] is True and doc["resource_changes"] == []
    assert {d["address"]: d["after"]["phase"] for d in doc["resource_drift"]} == \
        {"job.a": "FAILED", "job.b": "SUCCEEDED"}
    assert _state(ws)["serial"] == serial  # a plan records nothing

    code, out, err = run_cli("apply", "--refresh-only", "--auto-approve")
    assert code == 0, err
    assert "2 jobs changed outside jsctl recorded in state" in out and "0 added, 0 changed, 0 destroyed" in out
    state = _state(ws)
    assert state["serial"] == serial + 1
    assert {a: r["status"]["phase"] for a, r in state["resources"].items()} == \
        {"job.a": "FAILED", "job.b": "SUCCEEDED"}
    assert sorted(p.name for p in (ws / ".jsctl" / "runs").iterdir()) == runs_before  # nothing submitted
    code, out, err = run_cli("plan", "--refresh-only", "--detailed-exitcode")
    assert code == 0 and "No changes." in out, out + err
    # the plain plan still proposes what it would do about it (run a again); b stays finished
    out = run_cli("plan", "-f", "a.yaml", "-f", "b.yaml")[1]
    assert "job.a must be replaced" in out and "job.b" not in out.split("will perform")[1]

    code, out, err = run_cli("apply", "--refresh-only", "--refresh=false", "--auto-approve")
    assert code == 1 and "contradict" in err


@pytest.mark.parametrize("observed_by", ["apply", "status"])
def test_a_finished_job_is_never_run_again_after_its_engine_forgot_it(ws, observed_by):
    (ws / "b.yaml").write_text(job_yaml("b", ["true"]))
    assert run_cli("apply", "-f", "b.yaml", "--auto-approve")[0] == 0
    _wait_file_phase(ws, "b")
    assert _state(ws)["resources"]["job.b"]["status"]["phase"] == "PENDING"  # nobody has looked yet
    if observed_by == "apply":  # a later apply refreshes it (under its own lock) and remembers it finished
        code, out, err = run_cli("apply", "-f", "b.yaml", "--auto-approve")
        assert code == 0 and "No changes." in out, out + err
    else:
        assert run_cli("status")[0] == 0
    assert _state(ws)["resources"]["job.b"]["status"]["phase"] == "SUCCEEDED"
    shutil.rmtree(ws / ".jsctl" / "runs")  # the engine forgets it (Slurm's purge, a Kubernetes TTL)
    assert run_cli("status")[0] == 0  # records UNKNOWN: the phase before it stays in state
    code, out, err = run_cli("plan", "-f", "b.yaml", "--detailed-exitcode")
    assert code == 0 and "No changes." in out and "changed outside" not in out, out + err
    code, out, err = run_cli("apply", "-f", "b.yaml", "--auto-approve")
    assert code == 0 and "submitted" not in out, out + err
    assert not (ws / ".jsctl" / "runs").exists()


def test_killed_job_is_replaced_and_resumes_from_its_newest_checkpoint(ws):
    pytest.importorskip("torch", reason="the quickstart needs torch==2.13.0 (pip install -e '.[runtime]')")
    shutil.copy(os.path.join(EXAMPLES, "quickstart.yaml"), ws / "quickstart.yaml")
    shutil.copytree(os.path.join(EXAMPLES, "quickstart"), ws / "quickstart")
    code, _, err = run_cli("apply", "-f", "quickstart.yaml", "--auto-approve", "-v", "STEPS=5000")
    assert code == 0, err
    first = _state(ws)["resources"]["job.quickstart"]
    ckpt = ws / first["outputs"]["checkpoints"]
    deadline = time.time() + 120
    while time.time() < deadline and not list(ckpt.glob("step-*/COMPLETE")):
        time.sleep(0.2)
    assert list(ckpt.glob("step-*/COMPLETE")), "no checkpoint was written"
    _kill_behind_jsctls_back(_run_dir(ws, "quickstart"))
    step = max(int(p.parent.name.removeprefix("step-")) for p in ckpt.glob("step-*/COMPLETE"))

    code, out, err = run_cli("plan", "-f", "quickstart.yaml", "-v", "STEPS=5000")
    assert code == 0, err
    assert "job.quickstart must be replaced" in out, out
    assert f"resumes from step {step} (the newest complete checkpoint in {first['outputs']['checkpoints']})" in out

    code, out, err = run_cli("apply", "-f", "quickstart.yaml", "--auto-approve", "-v", "STEPS=5000")
    assert code == 0, err
    second = _state(ws)["resources"]["job.quickstart"]
    assert second["generation"] == 2 and second["job_id"] != first["job_id"]
    assert second["outputs"]["checkpoints"] == first["outputs"]["checkpoints"]
    deadline, restored = time.time() + 120, []
    while time.time() < deadline and not restored:
        log = run_cli("logs", "quickstart", "--metrics")[1]
        events = [json.loads(line) for line in log.splitlines() if line.startswith('{"jetstream": "event"')]
        restored = [e for e in events if e.get("event") == "restore"]
        time.sleep(0.5)
    assert restored and restored[0]["step"] == step, log[-3000:]
    assert run_cli("destroy", "-f", "quickstart.yaml", "--auto-approve", "-v", "STEPS=5000")[0] == 0
