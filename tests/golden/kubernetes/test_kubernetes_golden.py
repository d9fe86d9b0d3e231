"""Golden manifests: the seed's finetune-llama.yaml on the a100 pool (4 pods × 8 A100-80GB) of the
inventory beside this file, in every flavor (job, jobset, volcano, kubeflow).

Rewrite with `pytest tests/golden --update-golden` and review the diff."""
from __future__ import annotations

import json
import os

import pytest

from jsctl.config import workspace
from jsctl.config.variables import Variables
from jsctl.model.state import State
from jsctl.plan.planner import PlanInputs, make_plan
from jsctl.plan.resolve import load_sources

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "..", "examples")


def change(tmp_path, flavor: str):
    text = open(os.path.join(HERE, "jsctl.yaml"), encoding="utf-8").read().replace("flavor: job", f"flavor: {flavor}")
    (tmp_path / "jsctl.yaml").write_text(text)
    ws = workspace.load(str(tmp_path / "jsctl.yaml"))
    path = os.path.join(EXAMPLES, "finetune-llama.yaml")
    sources, diags = load_sources([path], Variables({}))
    assert not diags
    (c,) = make_plan(PlanInputs(sources, State(), ws, {}, {}, (), False, False, (path,))).changes
    return c


def check(name: str, text: str, update: bool) -> None:
    path = os.path.join(HERE, name)
    if update:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return
    assert os.path.exists(path), f"{name} is missing: run pytest tests/golden --update-golden"
    with open(path, encoding="utf-8") as fh:
        assert text == fh.read(), f"{name} differs from the golden file (pytest tests/golden --update-golden)"


def describe(c) -> str:
    a = c.artifact
    return json.dumps({"address": c.address, "placement": c.placement.describe(), "summary": a.summary,
                       "notes": list(a.notes), "request": a.request.to_dict()}, indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("flavor", ["job", "jobset", "volcano", "kubeflow"])
def test_finetune_llama(tmp_path, flavor, update_golden):
    c = change(tmp_path, flavor)
    assert (c.placement.pool, c.placement.nodes, c.placement.gpus_per_node, c.placement.gpu_type) == \
        ("a100", 4, 8, "a100-80gb")
    ((name, text),) = c.artifact.files
    assert name == f"{c.job_id}.yaml"
    check(f"finetune-llama.{flavor}.yaml", text, update_golden)
    check(f"finetune-llama.{flavor}.json", describe(c), update_golden)
