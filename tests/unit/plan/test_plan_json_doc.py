"""docs/plan-json.md names every field `jsctl plan --json` emits (issue 9), and a saved plan reads
back into the same typed requests and digests."""
from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

from jsctl.plan import output, planfile
from jsctl.plan.model import Plan

from paths import EXAMPLES, ROOT

sys.path.insert(0, str(Path(__file__).parents[1] / "providers"))
from slurmkit import plan_changes  # noqa: E402

OPAQUE = {"spec", "before", "strategy", "outputs", "env", "options", "assumptions"}  # user or engine keys


def _keys(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield path + (k,)
            if k not in OPAQUE:
                yield from _keys(v, path + (k,))
    elif isinstance(value, list):
        for v in value:
            yield from _keys(v, path)


def _plan(tmp_path) -> Plan:
    inventory = str(Path(ROOT) / "tests" / "golden" / "slurm" / "jsctl.yaml")  # big enough for the seed's jobs
    changes = plan_changes(tmp_path, {}, [str(Path(EXAMPLES) / "pipeline.yaml")], inventory=inventory)
    return Plan(tuple(changes), 3, "lineage", True, ("pipeline.yaml",), None, False, ("ci: a warning",))


def test_every_emitted_field_is_documented(tmp_path):
    doc = (Path(ROOT) / "docs" / "plan-json.md").read_text()
    named = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_.]*)", doc))
    named |= {part for n in named for part in n.split(".")}
    data = {"kind": planfile.KIND, **output.to_json(_plan(tmp_path))}
    missing = sorted({".".join(p) for p in _keys(data) if p[-1] not in named})
    assert not missing, f"fields the plan emits and docs/plan-json.md does not name: {missing}"


def test_saved_plan_reads_back_typed_requests_with_the_same_digest(tmp_path):
    plan = _plan(tmp_path)
    path = tmp_path / "plan.json"
    planfile.save(plan, str(path))
    back = planfile.load(str(path))
    for before, after in zip(plan.changes, back.changes):
        assert type(after.artifact.request) is type(before.artifact.request)
        assert after.artifact == before.artifact and after.artifact.digest == before.artifact.digest
        assert dataclasses.asdict(after.placement) == dataclasses.asdict(before.placement)
    assert json.loads(path.read_text())["format_version"] == "1.0"
