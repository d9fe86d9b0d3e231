"""Apply's typed events: each has a JSON form with a `type` and a text the CLI prints (docs/apply-json.md)."""
from __future__ import annotations

import dataclasses
import importlib
import json
import pathlib

from jsctl.cli.plan_cmds import EVENT_TEXT, event_text
from jsctl.model.status import JobHandle

apply = importlib.import_module("jsctl.apply")  # the module: `jsctl.apply` is the SDK's function (docs/sdk.md)
H = JobHandle("local", "local", "js-a-1x2y")
EVENTS = [apply.Stopping("job.a", H), apply.Destroyed("job.a"), apply.Updated("job.a"),
          apply.Waiting("job.b", "job.a"), apply.Skipped("job.b", "dependency job.a ended FAILED"),
          apply.Adopted("job.a", H, "js-a-1x2y"), apply.Submitted("job.a", H, "js-a-1x2y"),
          apply.SubmitFailed("job.a", "sbatch: error: invalid partition")]


def test_every_event_is_covered_here():
    kinds = {cls for cls in vars(apply).values() if isinstance(cls, type) and issubclass(cls, apply.ApplyEvent)
             and cls is not apply.ApplyEvent}
    assert kinds == {type(e) for e in EVENTS}


def test_texts_are_the_ones_apply_always_printed():
    assert [event_text(e) for e in EVENTS] == [
        "job.a: stopping local://local/js-a-1x2y...", "job.a: destroyed", "job.a: updated in place",
        "job.b: waiting for job.a to succeed...", "job.b: not submitted: dependency job.a ended FAILED",
        "job.a: found local://local/js-a-1x2y already submitted for js-a-1x2y; adopting it",
        "job.a: submitted local://local/js-a-1x2y (js-a-1x2y)", "job.a: submit failed: sbatch: error: invalid partition"]


def test_json_lines_are_flat_and_documented():
    doc = (pathlib.Path(__file__).parents[2] / "docs" / "apply-json.md").read_text()
    for e in EVENTS:
        d = json.loads(json.dumps(e.to_dict()))
        assert d["type"] in EVENT_TEXT and f"| `{d['type']}` |" in doc
        assert set(d) == {"type"} | {f.name for f in dataclasses.fields(e)}
        for name in set(d) - {"type"}:
            assert f"`{name}`" in doc
    summary = apply.ApplyResult(1, 0, 2, {"job.c": "why"}, {}).to_dict()
    assert summary == {"type": "summary", "ok": False, "added": 1, "changed": 0, "destroyed": 2,
                       "skipped": {"job.c": "why"}, "failed": {}}
    assert all(f"`{k}`" in doc for k in summary if k != "type")


def test_the_summary_says_what_was_not_submitted_and_why():
    from jsctl.cli.plan_cmds import summary_text

    assert summary_text(apply.ApplyResult(1, 0, 0)) == "Apply complete! Resources: 1 added, 0 changed, 0 destroyed."
    result = apply.ApplyResult(1, 0, 0, {"job.last": "dependency job.mid ended FAILED"},
                               {"job.other": "sbatch: error: invalid partition"})
    assert result.not_submitted == {"job.other": "submit failed: sbatch: error: invalid partition",
                                    "job.last": "dependency job.mid ended FAILED"}
    assert summary_text(result) == (
        "Apply incomplete! Resources: 1 added, 0 changed, 0 destroyed; 2 not submitted (job.other: submit failed: "
        "sbatch: error: invalid partition; job.last: dependency job.mid ended FAILED).")
    assert summary_text(apply.ApplyResult(0, 0, 1), "Destroy").startswith("Destroy complete!")
    doc = (pathlib.Path(__file__).parents[2] / "docs" / "apply-json.md").read_text()
    assert "Apply incomplete! Resources:" in doc and "NOT SUBMITTED" in doc
