"""Jobs apply did not submit (issue 10): kept in the state document's `not_submitted` section, apart
from the resources, so plans never see them (the next plan creates them) and old files load."""
from __future__ import annotations

import json

import pytest

from jsctl import api
from jsctl.config import workspace
from jsctl.errors import UsageError
from jsctl.model.state import FORMAT_VERSION, NotSubmitted, State, StateRecord
from jsctl.state.store import StateStore

ENTRY = NotSubmitted("workflow.wf.job.c", "c", "dependency workflow.wf.job.b ended FAILED", 5.0, "js-c-1abc", 1,
                     "local", "local", ("workflow.wf.job.b",))


def test_the_section_round_trips_and_is_written_only_when_there_is_something_in_it():
    state = State()
    assert "not_submitted" not in state.to_dict()  # files of jobs that all ran look as they always did
    serial = state.serial
    state.mark_not_submitted(ENTRY)
    assert state.serial == serial  # not configuration: a saved plan does not go stale
    back = State.from_dict(json.loads(json.dumps(state.to_dict())))
    assert back.unsubmitted() == {ENTRY.address: ENTRY} and back.resources == {}
    assert back.to_dict()["format_version"] == FORMAT_VERSION


def test_an_old_state_file_loads_without_the_section():
    old = {"format_version": FORMAT_VERSION, "serial": 3, "lineage": "l", "resources": {}, "generations": {}}
    assert State.from_dict(old).unsubmitted() == {}


def test_submitting_or_removing_the_address_forgets_it():
    state = State()
    state.mark_not_submitted(ENTRY)
    state.put(ENTRY.address, StateRecord(ENTRY.address, "c", 1))
    assert state.unsubmitted() == {}
    state.mark_not_submitted(ENTRY)
    state.remove(ENTRY.address)
    assert state.unsubmitted() == {} and state.resources == {}


def test_find_knows_it_by_name_address_and_job_id():
    state = State()
    state.mark_not_submitted(ENTRY)
    for ref in ("c", ENTRY.address, "js-c-1abc"):
        assert state.find(ref) == [ENTRY.address]


WF = ("version: jetstream.v1\nworkflow:\n  name: wf\n  jobs:\n"
      "    - {name: b, spec: b.yaml}\n    - {name: c, spec: c.yaml, dependsOn: [b]}\n")


def _job(name: str) -> str:
    return f"version: jetstream.v1\njob:\n  name: {name}\nlifecycle:\n  command: [\"true\"]\n"


@pytest.fixture
def wf(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, text in (("b.yaml", _job("b")), ("c.yaml", _job("c")), ("wf.yaml", WF)):
        (tmp_path / name).write_text(text)
    return workspace.default(str(tmp_path))


def test_apply_records_a_job_it_did_not_submit_status_shows_it_and_the_next_plan_creates_it(wf):
    # only c is applied: its dependency b was never submitted, so c is not submitted either (no job runs)
    the_plan = api.plan(["wf.yaml"], ws=wf, targets=["workflow.wf.job.c"])
    result = api.apply(the_plan, wf)
    assert not result.ok and result.added == 0
    assert result.not_submitted == {"workflow.wf.job.c": "dependency workflow.wf.job.b was not submitted"}
    state = StateStore(wf.state_path).read()
    assert state.resources == {} and list(state.unsubmitted()) == ["workflow.wf.job.c"]
    (row,) = api.status(wf)
    assert (row.address, row.phase, row.reason, row.handle) == (
        "workflow.wf.job.c", "NOT SUBMITTED", "dependency workflow.wf.job.b was not submitted", None)
    assert row.to_dict()["phase"] == "NOT SUBMITTED"
    assert api.status(wf, "c") == (row,)  # `jsctl status c` finds it
    detail = api.describe(wf, "c")
    assert detail.record is None and detail.not_submitted.reason == row.reason
    with pytest.raises(UsageError, match="was not submitted: dependency"):
        api.logs(wf, "c")
    again = api.plan(["wf.yaml"], ws=wf, targets=["workflow.wf.job.c"])
    assert [(c.address, c.action) for c in again.changes] == [("workflow.wf.job.c", "create")]
