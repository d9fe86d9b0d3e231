"""Drift on the real CI Slurm cluster (issue 14, item 2): `plan/apply --refresh-only` record a job
scancelled behind jsctl's back and submit nothing; a job that finished is never run again once Slurm
has purged it (no accounting on the CI cluster: it forgets a job MinJobAge after it ends)."""
from __future__ import annotations

import json
import subprocess

from slurmit import wait_for

QUICK = """\
version: jetstream.v1
job:
  name: quick
compute:
  resources:
    cpu:
      count: 1
    memory:
      total: 64Mi
  time_limit: 5m
lifecycle:
  command: [sh, -c, 'echo quick done']
"""


def _state(ws) -> dict:
    return json.loads((ws / ".jsctl" / "state.json").read_text())


def _slurm_id(record: dict) -> str:
    return record["handle"].rsplit("/", 1)[1]


def _queue(name: str = "") -> set[str]:
    """Slurm ids in the queue, of the jobs whose name starts with `name` (other tests may share the cluster)."""
    out = subprocess.run(["squeue", "-h", "-o", "%i %j"], capture_output=True, text=True, check=True).stdout
    return {i for i, _, j in (line.partition(" ") for line in out.splitlines()) if j.startswith(name)}


def test_refresh_only_records_a_scancel_and_submits_nothing(ws, jsctl):
    code, out, err = jsctl("apply", "--auto-approve", "-f", "sleeper.yaml")
    assert code == 0, out + err
    record = _state(ws)["resources"]["job.sleeper"]
    subprocess.run(["scancel", _slurm_id(record)], check=True)  # pending or running: either is drift
    wait_for(lambda: _slurm_id(record) not in _queue() or "CANCELLED" in subprocess.run(
        ["scontrol", "-o", "show", "job", _slurm_id(record)], capture_output=True, text=True).stdout,
        30, what="the scancel")
    serial = _state(ws)["serial"]

    code, out, err = jsctl("plan", "--refresh-only", "--detailed-exitcode")
    assert code == 2, out + err
    assert "Objects have changed outside of jsctl" in out and "# job.sleeper has changed" in out
    assert '-> "CANCELLED" (slurm: CANCELLED' in out and "refresh-only plan" in out

    queue = _queue("js-sleeper-")
    code, out, err = jsctl("apply", "--refresh-only", "--auto-approve")
    assert code == 0, out + err
    assert "1 job changed outside jsctl recorded in state" in out and "submitted" not in out
    state = _state(ws)
    assert state["serial"] == serial + 1
    assert state["resources"]["job.sleeper"]["status"]["phase"] == "CANCELLED"
    assert _queue("js-sleeper-") <= queue  # nothing was submitted
    assert "No changes." in jsctl("plan", "--refresh-only")[1]
    code, out, err = jsctl("plan", "-f", "sleeper.yaml")
    assert "job.sleeper must be replaced" in out, out + err


def test_a_finished_job_is_not_run_again_once_slurm_forgot_it(ws, jsctl):
    (ws / "quick.yaml").write_text(QUICK)
    code, out, err = jsctl("apply", "--auto-approve", "-f", "quick.yaml")
    assert code == 0, out + err
    job = _slurm_id(_state(ws)["resources"]["job.quick"])

    def finished():
        shown = subprocess.run(["scontrol", "-o", "show", "job", job], capture_output=True, text=True).stdout
        return "JobState=COMPLETED" in shown

    wait_for(finished, 240, what="the quick job to complete")
    code, out, err = jsctl("apply", "--auto-approve", "-f", "quick.yaml")  # refreshes: remembers it finished
    assert code == 0 and "No changes." in out, out + err
    state = _state(ws)
    assert state["resources"]["job.quick"]["status"]["phase"] == "SUCCEEDED"
    # Slurm purges it MinJobAge (300 s here) after it ended, and the CI cluster keeps no accounting:
    # the job's id then names nothing Slurm knows. Waiting 5 minutes is too long for a test, so the
    # record is pointed at an id Slurm never gave out, which Slurm answers exactly as a purged one.
    record = state["resources"]["job.quick"]
    record["handle"] = record["handle"].rsplit("/", 1)[0] + "/99999999"
    (ws / ".jsctl" / "state.json").write_text(json.dumps(state))
    code, out, err = jsctl("status", "--json")
    assert code == 0 and json.loads(out)["jobs"][0]["engine_state"] == "gone", out + err

    code, out, err = jsctl("plan", "-f", "quick.yaml", "--detailed-exitcode")
    assert code == 0 and "No changes." in out and "changed outside" not in out, out + err
    queue = _queue("js-quick-")
    code, out, err = jsctl("apply", "--auto-approve", "-f", "quick.yaml")
    assert code == 0 and "submitted" not in out, out + err
    assert _queue("js-quick-") <= queue
    assert "No changes." in jsctl("plan", "--refresh-only")[1]
