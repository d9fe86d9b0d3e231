"""Parameter counts from Hugging Face config.json files (tests/data/hf-configs, written from the published
numbers) against the published sizes, within 1% (issue 12, item 1)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from jsctl import api
from jsctl.config.variables import Variables
from jsctl.plan import memory, modelsize

CONFIGS = Path(__file__).resolve().parents[2] / "data" / "hf-configs"


@pytest.mark.parametrize("name, published, family", [
    ("llama-2-7b.json", 6.74e9, "llama"),
    ("llama-2-70b.json", 68.98e9, "llama"),
    ("mistral-7b.json", 7.24e9, "mistral"),
    ("mixtral-8x7b.json", 46.7e9, "mixtral"),
    ("gpt2.json", 124e6, "gpt2"),
])
def test_published_sizes(name, published, family):
    arch = modelsize.analyze(json.loads((CONFIGS / name).read_text()))
    assert arch.family == family
    assert abs(arch.parameters / published - 1) < 0.01, f"{name}: {arch.parameters:,} vs {published:,.0f}"


@pytest.mark.parametrize("config, published", [
    ({"model_type": "falcon", "hidden_size": 4544, "num_hidden_layers": 32, "num_attention_heads": 71,
      "multi_query": True, "parallel_attn": True, "bias": False, "vocab_size": 65024}, 6.92e9),  # Falcon-7B
    ({"model_type": "gpt_neox", "hidden_size": 6144, "num_hidden_layers": 44, "num_attention_heads": 64,
      "intermediate_size": 24576, "vocab_size": 50432}, 20.55e9),  # GPT-NeoX-20B
    ({"model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28, "num_attention_heads": 28,
      "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 152064}, 7.62e9),  # Qwen2-7B
    ({"model_type": "qwen2", "hidden_size": 896, "num_hidden_layers": 24, "num_attention_heads": 14,
      "num_key_value_heads": 2, "intermediate_size": 4864, "vocab_size": 151936,
      "tie_word_embeddings": True}, 0.494e9),  # Qwen2-0.5B: tied embeddings
])
def test_other_families(config, published):
    assert abs(modelsize.analyze(config).parameters / published - 1) < 0.01


def test_gqa_and_experts_change_the_count():
    base = json.loads((CONFIGS / "mistral-7b.json").read_text())
    mha = modelsize.analyze({**base, "num_key_value_heads": 32}).parameters
    gqa = modelsize.analyze(base).parameters
    assert mha - gqa == 32 * 2 * 4096 * (4096 - 1024)  # k and v shrink from 32 to 8 heads of 128
    tied = modelsize.analyze({**base, "tie_word_embeddings": True}).parameters
    assert gqa - tied == 32000 * 4096
    moe = modelsize.analyze(json.loads((CONFIGS / "mixtral-8x7b.json").read_text()))
    assert moe.experts == 8 and moe.parameters - gqa == 32 * (7 * 3 * 4096 * 14336 + 4096 * 8)


def test_unusable_configs_say_why():
    with pytest.raises(ValueError, match="model_type"):
        modelsize.analyze({"model_type": "t5"})
    with pytest.raises(ValueError, match="num_hidden_layers"):
        modelsize.analyze({"model_type": "llama", "hidden_size": 8, "intermediate_size": 8})


def _spec(write, model: str):
    path = write("job.yaml", f"version: jetstream.v1\njob: {{name: s}}\nmodel: {model}\nlifecycle: {{command: [t]}}\n")
    r = api.validate([path], Variables({}))
    assert r.ok, r.diagnostics
    return r.specs["job.s"], str(Path(path).parent)


def test_model_shape_from_config_or_parameters(write, tmp_path):
    write("llama/config.json", (CONFIGS / "llama-2-7b.json").read_text())
    spec, workdir = _spec(write, "{config: llama/config.json, sequence_length: 4096, micro_batch_size: 2}")
    shape = memory.model_shape(spec, workdir)
    assert (shape.parameters, shape.hidden, shape.layers, shape.vocab) == (6738415616, 4096, 32, 32000)
    assert (shape.sequence_length, shape.micro_batch_size, shape.source) == (4096, 2, "config.json llama/config.json")
    assert memory.model_shape(_spec(write, "{config: llama}")[0], workdir).layers == 32  # a directory
    for text, params in (("{parameters: 7B}", 7e9), ("{parameters: 1.3e9}", 1.3e9), ("{parameters: '1.3e9'}", 1.3e9),
                         ("{parameters: 1300000000}", 1.3e9)):
        shape = memory.model_shape(_spec(write, text)[0], workdir)
        assert shape.parameters == params and shape.source == "model.parameters" and shape.layers is None
    missing = memory.model_shape(_spec(write, "{parameters: 7B, config: nowhere/config.json}")[0], workdir)
    assert missing.parameters == 7e9 and "nowhere/config.json unreadable" in missing.source
    assert memory.model_shape(_spec(write, "{config: nowhere.json}")[0], workdir) is None


def test_config_found_under_the_input_mounted_as_the_model(write):
    write("models/llama-7b-hf/config.json", (CONFIGS / "llama-2-7b.json").read_text())
    path = write("job.yaml", "version: jetstream.v1\njob: {name: s}\nlifecycle: {command: [t]}\n"
                 "storage: {inputs: [{name: pretrained-model, path: models/llama-7b-hf, mount_path: /model}]}\n")
    r = api.validate([path], Variables({}))
    assert r.ok, r.diagnostics
    shape = memory.model_shape(r.specs["job.s"], str(Path(path).parent))
    assert shape.layers == 32 and shape.source == "config.json models/llama-7b-hf/config.json"
