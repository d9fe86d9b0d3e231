"""Typed state records (StateRecord) keep the state file's JSON shape: old files load, nothing is lost."""
from __future__ import annotations

import copy
import json

from jsctl.model.state import CostBasis, PastRun, RecordStatus, State, StateRecord
from jsctl.model.status import JobHandle, LiveStatus
from jsctl.state.store import StateStore

# A record as jsctl wrote it before StateRecord existed (apply.record_for, then one replace).
OLD = {
    "address": "job.a", "name": "a", "provider": "local", "cluster": "local", "job_id": "js-a-2b3c",
    "generation": 2, "handle": "local://local/js-a-2b3c", "spec": {"job": {"name": "a"}},
    "artifact_digest": "abc", "artifact": {"kind": "local-run", "summary": "run", "files": [["run.json", "{}"]]},
    "placement": {"cluster": "local", "provider": "local", "pool": "this machine", "nodes": 1, "gpus_per_node": 2,
                  "gpu_type": "*", "cpus_per_task": 1, "memory_per_node": 1, "interconnect": None,
                  "capacity": "on-demand", "price_per_hour": 0.0, "emulated": True},
    "strategy": {"JETSTREAM_STRATEGY": "ddp"}, "depends_on": ["job.up"], "outputs": {"out": "/o"},
    "status": {"phase": "PENDING", "engine_state": "submitted"},
    "created_at": 10.0, "updated_at": 10.0, "submitted_at": 10.0,
    "cost_basis": {"price_per_hour": 0.0, "capacity": "on-demand", "bound": 1.5, "estimate": 1.5},
    "events": [{"time": 1.0, "event": "submitted as local://local/js-a-1zzz"},
               {"time": 10.0, "event": "submitted as local://local/js-a-2b3c"}],
    "history": [{"job_id": "js-a-1zzz", "status": {"phase": "FAILED", "engine_state": "exit 1", "reason": "boom",
                                                    "started_at": 2.0, "ended_at": 3.0, "exit_code": 1,
                                                    "restarts": 0, "previous_phase": "RUNNING"},
                 "cost_basis": {"price_per_hour": 0.0, "capacity": "on-demand", "bound": None, "estimate": None}}],
}


def test_an_old_record_round_trips_exactly():
    record = StateRecord.from_dict(copy.deepcopy(OLD), "job.a")
    assert record.handle == JobHandle("local", "local", "js-a-2b3c") and record.gpus == 2
    assert record.status == RecordStatus("PENDING", "submitted")
    assert record.history[0] == PastRun("js-a-1zzz", RecordStatus("FAILED", "exit 1", "boom", 2.0, 3.0, 1, 0,
                                                                   "RUNNING"),
                                        CostBasis(0.0, "on-demand", None, None))
    assert json.dumps(record.to_dict(), sort_keys=True) == json.dumps(OLD, sort_keys=True)


def test_unknown_keys_survive_and_missing_ones_default():
    record = StateRecord.from_dict({"generation": 3, "future_field": [1], "status": {"phase": "RUNNING", "x": 1},
                                    "cost_basis": {"price_per_hour": 2, "duration_s": 3600}}, "workflow.w.job.b")
    assert (record.address, record.name, record.handle, record.status.phase) == ("workflow.w.job.b", "b", None,
                                                                                 "RUNNING")
    assert record.cost_basis.expected() == 2.0  # price × the recorded duration
    d = record.to_dict()
    assert d["future_field"] == [1] and d["cost_basis"]["duration_s"] == 3600 and d["generation"] == 3


def test_state_stores_records_in_the_file_shape(tmp_path):
    store = StateStore(str(tmp_path / "state.json"))
    state = store.read()
    state.put("job.a", StateRecord.from_dict(copy.deepcopy(OLD), "job.a"))
    store.write(state)
    doc = json.loads((tmp_path / "state.json").read_text())
    assert doc["format_version"] == 1 and doc["resources"]["job.a"] == OLD and doc["generations"] == {"job.a": 2}
    again = store.read()
    assert again.record("job.a") == state.record("job.a") and again.record("job.b") is None
    assert list(again.records()) == ["job.a"] and again.find("js-a-2b3c") == ["job.a"]
    assert again.find("local://local/js-a-2b3c") == ["job.a"] and again.find("a") == ["job.a"]


def test_observe_merges_what_the_engine_says_and_notes_phase_changes():
    state = State()
    state.put("job.a", copy.deepcopy(OLD))
    serial = state.serial
    assert state.observe("job.a", LiveStatus("RUNNING", "R", started_at=20.0), 21.0)
    r = state.record("job.a")
    assert (r.status.phase, r.status.engine_state, r.status.started_at, r.status.previous_phase) == \
        ("RUNNING", "R", 20.0, "PENDING")
    assert r.events[-1].event == "PENDING -> RUNNING" and r.updated_at == 21.0 and state.serial == serial
    assert not state.observe("job.a", LiveStatus("RUNNING", "R", started_at=20.0), 22.0)  # nothing new
    assert state.observe("job.a", LiveStatus("FAILED", "F", reason="exit 3", ended_at=30.0, exit_code=3), 31.0)
    r = state.record("job.a")
    assert r.status.started_at == 20.0 and r.status.exit_code == 3  # what the engine did not say is kept
    assert r.events[-1].event == "RUNNING -> FAILED (exit 3)"
    assert not state.observe("job.nope", LiveStatus("RUNNING", "R"), 1.0)


def test_a_stop_is_remembered_through_observations():
    state = State()
    stopped = StateRecord.from_dict(copy.deepcopy(OLD), "job.a")
    from dataclasses import replace

    state.put("job.a", replace(stopped, status=replace(stopped.status, phase="CANCELLED", stopped_by_jsctl=True)))
    assert state.resources["job.a"]["status"]["stopped_by_jsctl"] is True
    state.observe("job.a", LiveStatus("CANCELLED", "CA"), 5.0)
    assert state.record("job.a").status.stopped_by_jsctl
