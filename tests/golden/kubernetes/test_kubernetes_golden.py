"""Golden manifests: the seed's finetune-llama.yaml on the a100 pool (4 pods × 8 A100-80GB) of the
inventory beside this file, in every flavor (job, jobset, volcano, kubeflow).

Rewrite with `pytest tests/golden --update-golden` and review the diff."""
from __future__ import annotations

import os

import pytest

import goldens
from goldens import describe, planned

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "..", "examples")


def change(tmp_path, flavor: str):
    text = open(os.path.join(HERE, "jsctl.yaml"), encoding="utf-8").read().replace("flavor: job", f"flavor: {flavor}")
    (tmp_path / "jsctl.yaml").write_text(text)
    (c,) = planned(str(tmp_path / "jsctl.yaml"), os.path.join(EXAMPLES, "finetune-llama.yaml"))
    return c


def check(name: str, text: str, update: bool) -> None:
    goldens.check(HERE, name, text, update)


@pytest.mark.parametrize("flavor", ["job", "jobset", "volcano", "kubeflow"])
def test_finetune_llama(tmp_path, flavor, update_golden):
    c = change(tmp_path, flavor)
    assert (c.placement.pool, c.placement.nodes, c.placement.gpus_per_node, c.placement.gpu_type) == \
        ("a100", 4, 8, "a100-80gb")
    ((name, text),) = c.artifact.files
    assert name == f"{c.job_id}.yaml"
    check(f"finetune-llama.{flavor}.yaml", text, update_golden)
    check(f"finetune-llama.{flavor}.json", describe(c), update_golden)
