"""Golden batch scripts: the seed's finetune-llama.yaml (4 nodes × 8 A100-80GB on the partition in
jsctl.yaml beside this file) with each container runtime, and the seed's pipeline.

Rewrite with `pytest tests/golden --update-golden` and review the diff."""
from __future__ import annotations

import dataclasses
import os
import re

import pytest

import goldens
from goldens import describe, planned

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "..", "examples")


@pytest.fixture(autouse=True)
def fixed_runtime_digest(monkeypatch):
    """The staged jsruntime's directory is named by its content hash: fixed here, so that an edit to
    the runtime does not rewrite every golden script."""
    from jsctl.render import launch

    fixed = dataclasses.replace(launch.runtime_package(), digest="0123456789abcdef")
    monkeypatch.setattr(launch, "runtime_package", lambda: fixed)


def changes(tmp_path, example: str, runtime: str):
    text = open(os.path.join(HERE, "jsctl.yaml")).read()
    text = re.sub(r"container_runtime: \w+", f"container_runtime: {runtime}", text)
    (tmp_path / "jsctl.yaml").write_text(text)
    return planned(str(tmp_path / "jsctl.yaml"), os.path.join(EXAMPLES, example))


def check(name: str, text: str, update: bool) -> None:
    goldens.check(HERE, name, text, update)


@pytest.mark.parametrize("runtime", ["pyxis", "apptainer", "none"])
def test_finetune_llama(tmp_path, runtime, update_golden):
    (c,) = changes(tmp_path, "finetune-llama.yaml", runtime)
    assert (c.placement.nodes, c.placement.gpus_per_node, c.placement.gpu_type) == (4, 8, "a100-80gb")
    check(f"finetune-llama.{runtime}.sbatch", c.artifact.files[0][1], update_golden)
    check(f"finetune-llama.{runtime}.json", describe(c), update_golden)


def test_pipeline(tmp_path, update_golden):
    found = changes(tmp_path, "pipeline.yaml", "pyxis")
    assert [c.name for c in found] == ["data-prep", "fine-tune", "evaluate"]
    for c in found:
        check(f"pipeline.{c.name}.sbatch", c.artifact.files[0][1], update_golden)
        check(f"pipeline.{c.name}.json", describe(c), update_golden)
