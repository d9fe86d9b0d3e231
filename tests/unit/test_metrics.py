"""jsctl.metrics: parse jsruntime's metric lines and render them (no torch)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from jsctl.metrics import (
    MetricsSummary,
    human,
    parse_metrics,
    render_metrics,
    sparkline,
)


def rec(kind: str, **fields) -> str:
    return json.dumps({"jetstream": kind, **fields})


def run_lines() -> list[str]:
    lines = [
        "W1130 torchrun warning: OMP_NUM_THREADS set to 1",
        rec("event", event="start", job="j1", world_size=2, time=1.0),
        "not json {",
        '{"other": "json object"}',
    ]
    for step in range(1, 21):
        lines.append(rec(
            "metrics", job="j1", step=step, loss=3.0 - 0.1 * step, lr=1e-3, step_time_s=1.2 + 0.01 * (step % 2),
            samples_per_s=400_000 + 1000 * step, peak_mem_bytes=int(60 * 2**30) + step, mem_kind="rss", time=float(step),
        ))
        if step == 10:
            lines.append(rec("checkpoint", step=10, mode="thread", blocking_s=0.9, write_s=38.0, path="/c/step-10"))
    # a restart replays steps 11..12 after restoring step 10
    lines.append(rec("event", event="restore", step=10, restart_count=1))
    lines.append("[default0]:" + rec("metrics", step=11, loss=1.5, step_time_s=1.0, samples_per_s=410_000,
                                     peak_mem_bytes=100, mem_kind="rss"))
    return lines


def test_parse_ignores_noise_and_keeps_latest_values():
    s = parse_metrics(run_lines())
    assert isinstance(s, MetricsSummary)
    assert s.job == "j1" and s.records == 21 and s.step == 11
    assert s.latest("loss") == 1.5
    assert s.stats["peak_mem_bytes"].max == int(60 * 2**30) + 20
    assert s.mem_kind == "rss"
    assert s.last_checkpoint.step == 10 and s.last_checkpoint.write_s == 38.0 and s.checkpoints == 1
    assert s.restores == ((10, 1),) and s.last_event == "restore"
    # series are by step: the replayed step 11 replaced the first one
    assert len(s.loss_series) == 20 and dict(s.loss_series)[11] == 1.5
    assert s.averages["lr"] == pytest.approx(1e-3)
    with pytest.raises(AttributeError):
        s.step = 3  # frozen


def test_render_default_and_detail():
    s = parse_metrics(run_lines())
    text = render_metrics(s)
    first, second, third = text.splitlines()
    assert first.startswith("step 11   loss 1.5 ")
    assert "samples/s 410k " in first and "step 1 s" in first and "mem 60.0 GiB peak (rss)" in first
    assert second == "checkpoints: last at step 10, blocked training 900 ms, written in 38 s (async, thread)"
    assert third.startswith("recovered: resumed from checkpoint step 10 (restart 1")
    detail = render_metrics(s, detail=True)
    assert detail.startswith(text)
    assert "averages: loss" in detail and "over 21 records" in detail
    table = [line for line in detail.splitlines() if line.startswith(("metric", "loss ", "samples_per_s"))]
    assert len(table) == 3 and table[0].split() == ["metric", "latest", "mean", "min", "max"]


def test_empty_and_checkpoint_only():
    assert render_metrics(parse_metrics([])) == "no metrics yet"
    assert render_metrics(parse_metrics(["hello", rec("event", event="start")])) == "no metrics yet (last event: start)"
    s = parse_metrics([rec("checkpoint", step=5, mode="sync", blocking_s=2.0, write_s=2.0)])
    assert "checkpoints: last at step 5, blocked training 2 s, written in 2 s (sync)" in render_metrics(s)


def test_non_finite_and_missing_fields():
    s = parse_metrics([rec("metrics", step=1, loss="nan"), rec("metrics", step=2, loss=2.0, tokens_per_s=5e6)])
    assert s.stats["loss"].count == 1
    out = render_metrics(s)
    assert "tokens/s 5M" in out and "samples/s" not in out and "mem" not in out


def test_helpers():
    assert sparkline([]) == ""
    assert sparkline([1, 1, 1]) == "▄▄▄"
    line = sparkline([float(i) for i in range(100)])
    assert len(line) == 10 and line[0] == "▁" and line[-1] == "█"
    assert human(412_000) == "412k" and human(1_500_000) == "1.5M" and human(12.34) == "12.3"


def test_no_torch_import():
    code = "import sys, jsctl.metrics; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_is_metric_line_is_the_parsers_own_test():
    from jsctl.metrics import is_metric_line

    line = rec("metrics", step=1, loss=2.0)
    assert is_metric_line(line + "\n") and is_metric_line("[rank0] 12:00:01 " + line)
    assert is_metric_line(json.dumps({"jetstream": "checkpoint", "step": 3}))
    for other in ("loss went down\n", '{"jetstream": 1}', '{"other": "metrics"}', '{"jetstream": "metrics", ', ""):
        assert not is_metric_line(other)
