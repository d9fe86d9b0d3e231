"""Golden files: compare rendered text with the file beside the test, or rewrite it
(`pytest tests/golden --update-golden`, then review the diff like code)."""
from __future__ import annotations

import json
import os


def check(directory: str, name: str, text: str, update: bool) -> None:
    path = os.path.join(directory, name)
    if update:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return
    assert os.path.exists(path), f"{name} is missing: run pytest tests/golden --update-golden"
    with open(path, encoding="utf-8") as fh:
        assert text == fh.read(), f"{name} differs from the golden file (pytest tests/golden --update-golden)"


def describe(change) -> str:
    """A planned change as JSON: where it goes, what the plan says, the typed request."""
    a = change.artifact
    return json.dumps({"address": change.address, "placement": change.placement.describe(), "summary": a.summary,
                       "notes": list(a.notes), "request": a.request.to_dict()}, indent=2, ensure_ascii=False) + "\n"


def planned(workspace_file: str, job_file: str) -> tuple:
    """The changes of a plan of one job or workflow file on a workspace, from an empty state, with the
    workspace's catalog file applied as the CLI applies it."""
    return plan_of(workspace_file, job_file).changes


def plan_of(workspace_file: str, job_file: str):
    """That plan itself (its warnings, cost, ...)."""
    from jsctl.config import workspace
    from jsctl.config.variables import Variables
    from jsctl.model.state import State
    from jsctl.plan import catalog
    from jsctl.plan.planner import PlanInputs, make_plan
    from jsctl.plan.resolve import load_sources

    sources, diags = load_sources([job_file], Variables({}))
    assert not diags, diags
    ws = workspace.load(workspace_file)
    return make_plan(PlanInputs(sources, State(), ws, files=(job_file,), catalog=catalog.load(ws.catalog)))
