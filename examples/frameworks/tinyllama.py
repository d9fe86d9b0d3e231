"""The model and data the framework examples share: a tiny Llama built from ``tiny-llama/config.json``
(random initialisation, nothing downloaded) and a generated, deterministic token dataset."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import torch

CONFIG_DIR = Path(__file__).resolve().parent / "tiny-llama"
SEQ_LEN = 32


class PatternDataset(torch.utils.data.Dataset):
    """Sample ``i``: an arithmetic sequence of tokens mod 256 whose start and stride depend only on (seed, i).

    A causal LM learns to continue it, so the loss falls within a few dozen steps.
    """

    def __init__(self, size: int = 2048, seed: int = 0, seq_len: int = SEQ_LEN) -> None:
        self.size, self.seed, self.seq_len = size, seed, seq_len

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + int(i))
        start = int(torch.randint(0, 256, (1,), generator=g))
        stride = int(torch.randint(1, 17, (1,), generator=g))
        ids = (start + stride * torch.arange(self.seq_len)) % 256
        return {"input_ids": ids, "labels": ids.clone()}


def build_model(seed: int = 0) -> torch.nn.Module:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local config.json: nothing is fetched
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(CONFIG_DIR)
    torch.manual_seed(seed)  # the same initial weights on every rank
    return AutoModelForCausalLM.from_config(config)


def digest(model: torch.nn.Module) -> str:
    """sha256 of every parameter's bytes: equal only for bitwise-equal weights."""
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()
