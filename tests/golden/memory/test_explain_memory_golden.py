"""Golden `jsctl plan --explain-memory` for the product description's job: the seed's finetune-llama.yaml
(LLaMA-7B, 32 × A100-80GB, FSDP FULL_SHARD, cpu_offload, bf16) with the model's config.json beside it and
LLaMA's sequence length, planned against the 4 × 8 A100-80GB partition of tests/golden/slurm/jsctl.yaml.

Rewrite with `pytest tests/golden --update-golden` and review the diff."""
from __future__ import annotations

import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
MODEL = "model:\n  config: llama-7b-hf/config.json\n  sequence_length: 2048\n  micro_batch_size: 1\n"


def test_finetune_llama_explain_memory(tmp_path, jsctl, update_golden):
    (tmp_path / "llama-7b-hf").mkdir()
    shutil.copy(os.path.join(ROOT, "tests", "data", "hf-configs", "llama-2-7b.json"),
                tmp_path / "llama-7b-hf" / "config.json")  # LLaMA-7B and Llama-2-7B share the architecture
    seed = open(os.path.join(ROOT, "examples", "finetune-llama.yaml"), encoding="utf-8").read()
    (tmp_path / "finetune-llama.yaml").write_text(seed + MODEL, encoding="utf-8")
    shutil.copy(os.path.join(ROOT, "tests", "golden", "slurm", "jsctl.yaml"), tmp_path / "jsctl.yaml")
    code, out, err = jsctl("plan", "-f", str(tmp_path / "finetune-llama.yaml"), "--workspace",
                           str(tmp_path / "jsctl.yaml"), "--refresh=false", "--explain-memory")
    assert code == 0, err
    section = out[out.index("Memory per GPU"):]
    assert "fsdp FULL_SHARD + offload optimizer + offload params, bf16, 4 × 8 a100-80gb" in section
    assert "6.74B parameters" in section and ">=" not in section  # every input given: no lower bound
    path = os.path.join(HERE, "finetune-llama.explain-memory.txt")
    if update_golden:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(section)
        return
    assert os.path.exists(path), "run pytest tests/golden --update-golden"
    with open(path, encoding="utf-8") as fh:
        assert section == fh.read(), "differs from the golden file (pytest tests/golden --update-golden)"
