"""`jsctl report cost`: actual cost from recorded start/end times and the price recorded at submit."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from jsctl.plan import report
from jsctl.plan.report import cost_report, format_report, parse_since, running_cost

H = 3600
NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc).timestamp()


def record(job_id, start=None, end=None, price=None, phase="SUCCEEDED", cluster="hpc", **basis):
    status = {"phase": phase}
    if start is not None:
        status["started_at"] = start
    if end is not None:
        status["ended_at"] = end
    cb = {"price_per_hour": price, **basis} if price is not None or basis else {}
    return {"job_id": job_id, "cluster": cluster, "status": status, "cost_basis": cb}


@pytest.fixture
def state():
    return {
        "job.llama-7b-sft": record("js-llama-7b-sft-5x8g", NOW - 3.2 * H, None, 35.20, "RUNNING", estimate=1689.60),
        "workflow.pipe.job.evaluate": {
            **record("js-evaluate-2", NOW - 10 * H, NOW - 9 * H, 4.40, bound=8.80),
            "history": [record("js-evaluate-1", NOW - 30 * H, NOW - 29.5 * H, 4.00, "FAILED")],
        },
        "job.queued": record("js-queued-1", None, None, 2.0, "PENDING"),
    }


def test_actual_cost_from_start_end_and_recorded_price(state):
    rep = cost_report(state, NOW)
    rows = {r.job_id: r for r in rep.rows}
    assert rows["js-evaluate-2"].actual == 4.40 and rows["js-evaluate-2"].hours == pytest.approx(1.0)
    assert rows["js-evaluate-1"].actual == 2.00  # an earlier run at the price recorded then
    assert rows["js-llama-7b-sft-5x8g"].running and rows["js-llama-7b-sft-5x8g"].actual == 112.64
    assert rows["js-queued-1"].actual == 0.0 and rows["js-queued-1"].started_at is None
    assert rep.total_actual == pytest.approx(119.04)
    assert [r.job_id for r in rep.rows] == ["js-evaluate-1", "js-evaluate-2", "js-llama-7b-sft-5x8g", "js-queued-1"]


def test_estimate_against_actual(state):
    rows = {r.job_id: r for r in cost_report(state, NOW).rows}
    assert rows["js-evaluate-2"].estimate == 8.80 and rows["js-evaluate-2"].difference == pytest.approx(-4.40)
    assert rows["js-llama-7b-sft-5x8g"].difference == pytest.approx(112.64 - 1689.60)
    assert rows["js-evaluate-1"].estimate is None and rows["js-evaluate-1"].difference is None


def test_estimate_from_price_and_time_limit_when_no_estimate_was_recorded():
    rep = cost_report({"job.a": record("a", NOW - H, NOW, 2.0, time_limit_s=10 * H)}, NOW)
    assert rep.rows[0].estimate == 20.0


def test_the_report_does_not_depend_on_the_catalog(state, monkeypatch):
    """The price comes from the state record: changing the catalog changes nothing."""
    from jsctl.plan import catalog
    before = format_report(cost_report(state, NOW))
    monkeypatch.setattr(catalog, "builtin", lambda: catalog.Catalog(()))
    assert format_report(cost_report(state, NOW)) == before


def test_one_job_by_name_address_or_id(state):
    for key in ("evaluate", "workflow.pipe.job.evaluate", "js-evaluate-2"):
        assert {r.address for r in cost_report(state, NOW, job=key).rows} == {"workflow.pipe.job.evaluate"}
    assert [r.job_id for r in cost_report(state, NOW, job="js-evaluate-1").rows] == ["js-evaluate-1",
                                                                                      "js-evaluate-2"]
    assert cost_report(state, NOW, job="nope").rows == ()


def test_since_clips_runs_to_the_window(state):
    rep = cost_report(state, NOW, since=NOW - 2 * H)
    rows = {r.job_id: r for r in rep.rows}
    assert set(rows) == {"js-llama-7b-sft-5x8g"}  # evaluate ended before; queued never started
    assert rows["js-llama-7b-sft-5x8g"].hours == pytest.approx(2.0)
    assert rows["js-llama-7b-sft-5x8g"].actual == pytest.approx(70.40)


def test_records_as_a_list_and_a_missing_price():
    recs = [{"address": "job.a", **record("a", NOW - H, NOW, None)}]
    rep = cost_report(recs, NOW)
    assert rep.rows[0].actual is None and rep.unpriced == ("job.a",)
    assert "No price recorded for job.a: not counted." in format_report(rep)


def test_text_report(state):
    text = format_report(cost_report(state, NOW))
    lines = text.splitlines()
    assert lines[0].split() == ["JOB", "ID", "CLUSTER", "PHASE", "STARTED", "(UTC)", "ENDED", "(UTC)", "HOURS",
                                "$/h", "ACTUAL", "ESTIMATE", "DIFF"]
    llama = next(line for line in lines if line.startswith("llama-7b-sft"))
    assert "RUNNING" in llama and "running" in llama and "112.64" in llama and "1,689.60" in llama
    assert "-1,576.96" in llama
    assert lines[-1] == ("Total: $119.04 actual (estimated $1,698.40) for 4 runs; running jobs counted up to "
                         "2026-11-30 12:00 UTC.")


def test_empty_report_says_so(state):
    assert format_report(cost_report(state, NOW, job="nope")) == "No job runs for nope."
    assert format_report(cost_report({}, NOW, since=NOW - H)) == "No job runs since 2026-11-30 11:00 UTC."


def test_json_report(state):
    data = json.loads(json.dumps(report.report_json(cost_report(state, NOW, since=NOW - 20 * H))))
    assert data["format_version"] == "1.0" and data["total_actual"] == pytest.approx(117.04)
    assert {r["job_id"] for r in data["rows"]} == {"js-evaluate-2", "js-llama-7b-sft-5x8g"}
    assert data["rows"][0]["difference"] == pytest.approx(-4.40)


@pytest.mark.parametrize("text, expected", [
    ("2026-11-01", dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc).timestamp()),
    ("2026-11-01T09:30", dt.datetime(2026, 11, 1, 9, 30, tzinfo=dt.timezone.utc).timestamp()),
    ("2026-11-01 09:30:00Z", dt.datetime(2026, 11, 1, 9, 30, tzinfo=dt.timezone.utc).timestamp()),
    ("2026-11-01T09:30:00+02:00", dt.datetime(2026, 11, 1, 7, 30, tzinfo=dt.timezone.utc).timestamp()),
    ("7d", NOW - 7 * 24 * H), ("36h", NOW - 36 * H)])
def test_parse_since(text, expected):
    assert parse_since(text, NOW) == expected


def test_parse_since_rejects_nonsense():
    with pytest.raises(ValueError, match="not a date or a span"):
        parse_since("last tuesday", NOW)


def test_running_cost_for_status_and_cluster_status(state):
    assert running_cost(state["job.llama-7b-sft"], NOW) == 112.64
    assert running_cost(state["workflow.pipe.job.evaluate"], NOW) == 4.40  # the current run only
    assert running_cost(state["job.queued"], NOW) == 0.0


def test_cluster_costs_for_cluster_status(state):
    state["job.other"] = record("js-other-1", NOW - H, None, 2.0, "RUNNING", cluster="aws")
    costs = report.cluster_costs(state, NOW)
    assert set(costs) == {"hpc", "aws"}
    hpc = costs["hpc"]
    assert hpc.jobs == ("job.llama-7b-sft",) and hpc.per_hour == 35.20 and hpc.so_far == 112.64
    assert hpc.text() == "1 jsctl job running (job.llama-7b-sft): $35.20/h, $112.64 so far"
    assert costs["aws"].so_far == 2.0
