"""Slurm's job states → jsctl phases (Slurm's word kept), and reading squeue/sacct output."""
from __future__ import annotations

import json

import pytest

from jsctl.model.status import PHASES
from jsctl.providers.slurm import parse, states

ALL_WORDS = {
    "PENDING": "PENDING", "RUNNING": "RUNNING", "SUSPENDED": "PAUSED", "COMPLETED": "SUCCEEDED",
    "CANCELLED": "CANCELLED", "FAILED": "FAILED", "TIMEOUT": "FAILED", "NODE_FAIL": "FAILED",
    "PREEMPTED": "PREEMPTED", "BOOT_FAIL": "FAILED", "DEADLINE": "FAILED", "OUT_OF_MEMORY": "FAILED",
    "COMPLETING": "RUNNING", "CONFIGURING": "RUNNING", "RESIZING": "RUNNING", "SIGNALING": "RUNNING",
    "STAGE_OUT": "RUNNING", "POWER_UP_NODE": "PENDING", "UPDATE_DB": "RUNNING", "LAUNCH_FAILED": "FAILED",
    "RECONFIG_FAIL": "FAILED", "REQUEUED": "PREEMPTED", "REQUEUE_FED": "PREEMPTED", "REQUEUE_HOLD": "PAUSED",
    "SPECIAL_EXIT": "PAUSED", "RESV_DEL_HOLD": "PAUSED", "STOPPED": "PAUSED", "REVOKED": "CANCELLED",
}


@pytest.mark.parametrize("word, phase", sorted(ALL_WORDS.items()))
def test_every_state_word(word, phase):
    assert states.phase(word) == phase
    assert states.engine_word(word) == word


def test_table_is_complete_and_valid():
    assert set(states.STATE_PHASE) == set(ALL_WORDS)
    assert set(states.STATE_PHASE.values()) <= set(PHASES)


def test_variants():
    assert states.phase("CANCELLED by 0") == "CANCELLED"  # sacct
    assert states.phase("cancelled+") == "CANCELLED"  # sacct, truncated
    assert states.phase("PENDING", "JobHeldUser") == "PAUSED"
    assert states.phase("PENDING", "Dependency") == "PENDING"
    assert states.phase(["PENDING", "REQUEUED"]) == "PREEMPTED"  # 23.02+ JSON lists
    assert states.phase(["RUNNING", "COMPLETING"]) == "RUNNING"
    assert states.engine_word(["PENDING", "REQUEUED"]) == "PENDING+REQUEUED"
    assert states.phase("SOMETHING_NEW") == "UNKNOWN" and states.phase(None) == "UNKNOWN"


def test_reasons():
    assert "upstream job did not succeed (afterok:5(failed))" in states.describe(
        "CANCELLED", "DependencyNeverSatisfied", "afterok:5(failed)")
    assert states.describe("PENDING", "Dependency", "afterok:5(unfulfilled)") == "waiting for afterok:5(unfulfilled)"
    assert "jsctl resume starts it sooner" in states.describe("PENDING", "BeginTime", restarts=1)
    assert states.describe("TIMEOUT", "None") == "time limit reached"
    assert states.describe("COMPLETED", "None") is None
    assert states.describe("PENDING", "Resources") == "Resources"


def job(**kw):
    base = {"job_id": 12, "name": "js-x-abcd", "job_state": "RUNNING", "state_reason": "None", "exit_code": 0,
            "restart_cnt": 0, "nodes": "jsn[1-2]", "start_time": 1700000000, "end_time": 1700003600,
            "dependency": "", "comment": "jsctl:job.x@1", "standard_output": "/logs/js-x-abcd-%j.log"}
    base.update(kw)
    return base


def test_live_from_squeue_2205():
    s = parse.live_from_squeue(job())
    assert (s.phase, s.engine_state, s.nodes, s.started_at, s.ended_at, s.exit_code) == \
        ("RUNNING", "RUNNING", ("jsn1", "jsn2"), 1700000000.0, None, None)
    s = parse.live_from_squeue(job(job_state="FAILED", state_reason="NonZeroExitCode", exit_code=768))
    assert (s.phase, s.exit_code, s.ended_at, s.reason) == ("FAILED", 3, 1700003600.0, "NonZeroExitCode")
    s = parse.live_from_squeue(job(job_state="FAILED", exit_code=9))
    assert s.exit_code == 137  # killed by SIGKILL
    s = parse.live_from_squeue(job(job_state="PENDING", state_reason="BeginTime", restart_cnt=1, nodes=""))
    assert (s.phase, s.restarts, s.nodes, s.started_at) == ("PENDING", 1, (), None)
    s = parse.live_from_squeue(job(job_state="CANCELLED", state_reason="DependencyNeverSatisfied",
                                   dependency="afterok:11(failed)"))
    assert s.phase == "CANCELLED" and "upstream job did not succeed" in s.reason


def test_live_from_squeue_newer_shapes():
    s = parse.live_from_squeue(job(job_state=["COMPLETED"], exit_code={"status": ["SUCCESS"], "return_code":
                                   {"set": True, "number": 0}}, start_time={"set": True, "number": 5},
                                   end_time={"set": True, "number": 9}, restart_cnt={"set": True, "number": 2}))
    assert (s.phase, s.exit_code, s.started_at, s.ended_at, s.restarts) == ("SUCCEEDED", 0, 5.0, 9.0, 2)
    s = parse.live_from_squeue(job(job_state=["FAILED"], exit_code={"return_code": 0, "signal": {"id": 15}}))
    assert s.exit_code == 143


def test_squeue_jobs():
    text = json.dumps({"meta": {}, "errors": [], "jobs": [job(), job(job_id=13)]})
    assert sorted(parse.squeue_jobs(text)) == ["12", "13"]


def test_sacct():
    text = "5|FAILED|2:0|2026-11-30T01:41:00|2026-11-30T01:41:01|jsn1\n" \
           "5.batch|FAILED|2:0|||jsn1\n" \
           "6|CANCELLED by 0|0:0|2026-11-30T01:41:03|2026-11-30T01:41:03|None assigned\n" \
           "7|COMPLETED|0:9|2026-11-30T01:41:03|Unknown|jsn[1-2]\n" \
           "7|COMPLETED|0:0|2026-11-30T01:42:03|2026-11-30T01:43:03|jsn[1-2]\n"
    out = parse.live_from_sacct(text)
    assert set(out) == {"5", "6", "7"}
    assert (out["5"].phase, out["5"].exit_code, out["5"].nodes) == ("FAILED", 2, ("jsn1",))
    assert out["6"].phase == "CANCELLED" and out["6"].nodes == ()
    assert out["7"].phase == "SUCCEEDED" and out["7"].exit_code == 0  # the last record of a requeued job


@pytest.mark.parametrize("text, hosts", [
    ("jsn[1-2]", ("jsn1", "jsn2")),
    ("gpu[08-10,12],login", ("gpu08", "gpu09", "gpu10", "gpu12", "login")),
    ("a[1-2]b[3-4]", ("a1b3", "a1b4", "a2b3", "a2b4")),
    ("node7", ("node7",)),
    ("", ()),
    ("(null)", ()),
])
def test_expand_hostlist(text, hosts):
    assert parse.expand_hostlist(text) == hosts


def test_exit_codes():
    assert parse.decode_exit(0) == 0 and parse.decode_exit(75 << 8) == 75 and parse.decode_exit(15) == 143
    assert parse.decode_sacct_exit("75:0") == 75 and parse.decode_sacct_exit("0:15") == 143


def test_node_lines():
    lines = ["0: a\n", "1: b\n", "jsctl: x\n", " 1: c\n", "10: d\n"]
    assert parse.node_lines(lines, 1) == ["b\n", "c\n"]
    assert parse.node_lines(lines, 10) == ["d\n"]
