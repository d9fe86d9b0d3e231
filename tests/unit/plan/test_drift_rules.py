"""Drift (issue 14, item 2): only the compared fields count (never elapsed time, queue position, the
PENDING reason or the node list); a finished job its engine forgot stays finished; a refresh-only plan
records and changes nothing else; a recovery replacement keeps its checkpoint directory."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import replace

import pytest

from jsctl.apply import new_record
from jsctl.config import workspace
from jsctl.config.variables import Variables
from jsctl.model.state import RecordStatus, State
from jsctl.model.status import JobHandle, LiveStatus
from jsctl.plan import drift, output, planfile
from jsctl.plan.model import Plan
from jsctl.plan.planner import PlanInputs, make_plan
from jsctl.plan.resolve import load_sources

JOB = """\
version: jetstream.v1
job: {name: train}
lifecycle: {command: ["true"]}
storage:
  outputs:
    - name: checkpoints
      path: out/${JOB_ID}/checkpoints
      policy: {save_frequency: 50steps, keep_latest: 2}
    - name: results
      path: out/${JOB_ID}/results
"""
HANDLE = JobHandle("local", "local", "js-train-x")


def _record(phase="RUNNING", **status):
    from jsctl.model.state import StateRecord

    return StateRecord("job.train", "train", 1, "local", "local", "js-train-x", HANDLE,
                       status=RecordStatus(phase, **status))


@pytest.mark.parametrize("before, after", [
    (dict(phase="PENDING", reason="Priority"), LiveStatus("PENDING", "PENDING", "Resources")),  # queue reason
    (dict(phase="PENDING", reason="Priority"), LiveStatus("PENDING", "PENDING", "Priority", started_at=1e9)),
    (dict(phase="RUNNING", started_at=1.0), LiveStatus("RUNNING", "RUNNING", None, 1.0, nodes=("n1", "n2"))),
    (dict(phase="RUNNING"), LiveStatus("RUNNING", "COMPLETING", None, restarts=2, step=300)),
])
def test_fields_that_change_by_themselves_are_never_drift(before, after):
    assert drift.COMPARED == ("phase",)
    assert set(drift.IGNORED) >= {"reason", "started_at", "ended_at", "nodes", "restarts", "step", "engine_state"}
    assert drift.detect(_record(**before), after) is None
    assert drift.unexpected(_record(**before), after) is None


def test_phase_changes_and_jobs_gone_are_drift():
    found = drift.detect(_record("RUNNING"), LiveStatus("CANCELLED", "CANCELLED", "by user"))
    assert found.text() == 'status = "RUNNING" -> "CANCELLED" (local: CANCELLED, by user)' and not found.gone
    gone = drift.detect(_record("RUNNING"), LiveStatus("UNKNOWN", "missing", "run directory is gone"))
    assert gone.gone and gone.after == "UNKNOWN"
    assert drift.detect(_record("PENDING"), LiveStatus("RUNNING", "RUNNING")).after == "RUNNING"
    # what a plain plan notes: stopped or lost behind jsctl's back, not a job that ended on its own
    assert drift.unexpected(_record("RUNNING"), LiveStatus("FAILED", "FAILED")) is None
    assert drift.unexpected(_record("RUNNING", stopped_by_jsctl=True), LiveStatus("CANCELLED", "CANCELLED")) is None
    assert drift.unexpected(_record("RUNNING"), LiveStatus("UNKNOWN", "gone")).gone


def test_a_finished_job_its_engine_forgot_is_finished_not_drift():
    gone = LiveStatus("UNKNOWN", "gone", "Slurm no longer knows job 7")
    assert drift.finished(_record("SUCCEEDED"), gone) and drift.finished(_record("SUCCEEDED"), None)
    # `jsctl status` recorded UNKNOWN over it: the phase before still says it finished
    assert drift.finished(_record("UNKNOWN", previous_phase="SUCCEEDED"), gone)
    assert not drift.finished(_record("RUNNING"), gone) and not drift.finished(_record("FAILED"), gone)
    assert drift.detect(_record("SUCCEEDED"), gone) is None and drift.unexpected(_record("SUCCEEDED"), gone) is None
    state = State()
    state.put("job.train", _record("SUCCEEDED"))
    assert drift.observations(state, {"job.train": gone}) == ()


def test_recording_observations_bumps_the_serial_once():
    state = State()
    state.put("job.train", _record("PENDING"))
    serial = state.serial
    observed = drift.observations(state, {"job.train": LiveStatus("CANCELLED", "CANCELLED")})
    assert [o.drift.after for o in observed] == ["CANCELLED"]
    assert drift.record(state, observed, 1.0) == 1 and state.serial == serial + 1
    assert state.record("job.train").status.phase == "CANCELLED"
    assert drift.record(state, observed, 2.0) == 0 and state.serial == serial + 1  # nothing new: no bump


def _plan(tmp_path, state=None, live=None, checkpoints=None):
    (tmp_path / "train.yaml").write_text(JOB)
    sources, diags = load_sources([str(tmp_path / "train.yaml")], Variables({}))
    assert not [d for d in diags if d.severity == "error"], diags
    return make_plan(PlanInputs(sources, state or State(), workspace.load(None), live=live or {},
                                checkpoints=checkpoints or {}))


def _applied(tmp_path, phase, **status) -> State:
    created = _plan(tmp_path).changes[0]
    state = State()
    state.put(created.address, replace(new_record(created, HANDLE, 1.0), status=RecordStatus(phase, **status)))
    return state


@pytest.mark.parametrize("recorded", [dict(phase="SUCCEEDED"), dict(phase="UNKNOWN", previous_phase="SUCCEEDED")])
@pytest.mark.parametrize("live", [LiveStatus("UNKNOWN", "gone", "purged"), LiveStatus("SUCCEEDED", "COMPLETED"), None])
def test_a_finished_job_is_never_run_again(tmp_path, recorded, live):
    state = _applied(tmp_path, **recorded)
    change = _plan(tmp_path, state, {"job.train": live} if live else {}).changes[0]
    assert change.action == "no-op" and change.why.drift is None


def test_a_vanished_job_is_replaced_and_resumes_from_its_checkpoint_directory(tmp_path):
    state = _applied(tmp_path, "RUNNING")
    before = state.record("job.train").outputs
    change = _plan(tmp_path, state, {"job.train": LiveStatus("UNKNOWN", "missing", "run directory is gone")},
                   {"job.train": 150}).changes[0]
    assert change.action == "replace" and change.generation == 2 and change.why.drift
    assert change.outputs["checkpoints"] == before["checkpoints"]  # kept: jsruntime restores from it
    assert change.outputs["results"] != before["results"]  # the rest is the new generation's
    assert "resumes from step 150 (the newest complete checkpoint in " + before["checkpoints"] in change.why.reasons[0]
    env = json.dumps(change.artifact.to_dict())
    assert before["checkpoints"] in env


def test_resume_text_says_where_a_replacement_starts():
    keep = ("checkpoints", "out/js-a/checkpoints")
    assert drift.resume_text(None, 5) == ""
    assert "resumes from step 5 " in drift.resume_text(keep, 5)
    assert "from the start (no complete checkpoint" in drift.resume_text(keep, None)
    assert "resumes from the newest complete checkpoint in out/js-a" in drift.resume_text(keep)


def test_latest_step_counts_only_complete_checkpoints(tmp_path):
    for step, complete in ((50, True), (100, True), (150, False)):
        (tmp_path / f"step-{step:08d}").mkdir()
        if complete:
            (tmp_path / f"step-{step:08d}" / "COMPLETE").write_text("{}")
    (tmp_path / ".tmp-step-00000200-x").mkdir()
    assert drift.latest_step(str(tmp_path)) == 100
    assert drift.latest_step(str(tmp_path / "none")) is None


def _refresh_only_plan() -> Plan:
    observed = (drift.Observation("job.a", LiveStatus("CANCELLED", "CANCELLED", "by root"),
                                  drift.Drift("job.a", "RUNNING", "CANCELLED", "slurm", "CANCELLED", "by root")),
                drift.Observation("job.b", LiveStatus("RUNNING", "RUNNING", nodes=("n1",))))
    return Plan((), 4, "lineage", True, refreshed="Refreshing state (--refresh-only)... 2 jobs on hpc",
                refresh_only=True, observed=observed)


def test_refresh_only_plan_reads_like_terraforms_and_round_trips(tmp_path):
    plan = _refresh_only_plan()
    assert plan.has_changes and plan.count() == (0, 0, 0)
    text = output.render_text(plan)
    assert "Objects have changed outside of jsctl" in text and "# job.a has changed" in text
    assert "job.b" not in text and "refresh-only plan" in text
    data = output.to_json(plan)
    assert data["refresh_only"] is True and data["resource_changes"] == []
    assert [d["drift"] for d in data["resource_drift"]] == [plan.observed[0].drift.text(), None]
    path = tmp_path / "plan.json"
    planfile.save(plan, str(path))
    back = planfile.load(str(path))
    assert back.refresh_only and [dataclasses.asdict(o) for o in back.observed] == \
        [dataclasses.asdict(o) for o in plan.observed]
    quiet = replace(plan, observed=plan.observed[1:])
    assert not quiet.has_changes and "No changes." in output.render_text(quiet)


def test_the_kept_directory_stays_with_the_job_and_its_later_replacements(tmp_path):
    state = _applied(tmp_path, "RUNNING")
    first = state.record("job.train").outputs["checkpoints"]
    replaced = _plan(tmp_path, state, {"job.train": LiveStatus("FAILED", "failed")}).changes[0]
    assert replaced.action == "replace" and replaced.outputs["checkpoints"] == first
    state = State()
    state.put(replaced.address, replace(new_record(replaced, HANDLE, 2.0), status=RecordStatus("RUNNING")))
    running = _plan(tmp_path, state, {"job.train": LiveStatus("RUNNING", "running")}).changes[0]
    assert running.action == "no-op", running.why  # the kept path is no change to plan
    again = _plan(tmp_path, state, {"job.train": LiveStatus("CANCELLED", "cancelled")}).changes[0]
    assert again.action == "replace" and again.generation == 3 and again.outputs["checkpoints"] == first
    # a job file that changed: the replacement starts over in its own directory
    (tmp_path / "train.yaml").write_text(JOB.replace('["true"]', '["false"]'))
    sources, _ = load_sources([str(tmp_path / "train.yaml")], Variables({}))
    changed = make_plan(PlanInputs(sources, state, workspace.load(None),
                                   live={"job.train": LiveStatus("FAILED", "failed")})).changes[0]
    assert changed.action == "replace" and changed.outputs["checkpoints"] != first
    assert "resumes" not in changed.why.reasons[0]
