"""Train a small GPT (the shape Korthikanti et al. model: pre-LN blocks, 4h GeLU MLP, dropout) on CPU under
jsruntime's DDP or FSDP2 wrapping (or each in turn) and write what this rank's memory was to
OUT/PARALLELISM.RANK.json:

    {"parallelism": "ddp", "rank": 0, "states_bytes": ..., "peak_bytes": ..., "baseline_bytes": ...}

`states_bytes`: anonymous resident memory after the first optimizer step (weights, gradients, Adam
state) minus that before the model was built (a tiny model ran the same code first). `peak_bytes`: states
plus how far the high-water mark of the next steps (reset through /proc/self/clear_refs) rose above the
resident memory at the reset. Run with MALLOC_MMAP_THRESHOLD_=65536 so that freed tensors leave the
process (else glibc keeps them and RSS only grows)."""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import re

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from jsruntime.env import StrategyConfig, read_env
from jsruntime.strategy import wrap

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def anon() -> int:
    """Resident memory that is not file-backed (not code pages of libtorch, MKL, ...)."""
    with open("/proc/self/statm") as f:
        fields = f.read().split()
    return (int(fields[1]) - int(fields[2])) * PAGE


def reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)


def peak() -> int:
    with open("/proc/self/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+) kB", f.read()).group(1)) * 1024


class Block(nn.Module):
    def __init__(self, h: int, a: int, p: float) -> None:
        super().__init__()
        self.a = a
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.fc1, self.fc2 = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s, b, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(s, b, 3, self.a, h // self.a).permute(2, 1, 3, 0, 4)
        scores = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(h // self.a), dim=-1)
        ctx = (F.dropout(scores, self.p, self.training) @ v).permute(2, 0, 1, 3).reshape(s, b, h)
        x = x + F.dropout(self.proj(ctx), self.p, self.training)
        return x + F.dropout(self.fc2(F.gelu(self.fc1(self.ln2(x)))), self.p, self.training)


class GPT(nn.Module):
    def __init__(self, vocab: int, h: int, layers: int, heads: int, seq: int, p: float = 0.1) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, h)
        self.layers = nn.ModuleList(Block(h, heads, p) for _ in range(layers))
        self.norm = nn.LayerNorm(h)
        self.head = nn.Linear(h, vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:  # tokens: (s, b)
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


def measure(parallelism: str, args: argparse.Namespace, env) -> None:
    torch.manual_seed(0)
    strategy = StrategyConfig(parallelism, args.sharding, False, "fp32", True)
    gen = torch.Generator().manual_seed(env.dist.rank)

    def trainer(vocab: int, hidden: int, layers: int, heads: int, seq: int, batch: int):
        model = wrap(GPT(vocab, hidden, layers, heads, seq), strategy, env.dist, torch.device("cpu"))
        opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=False)

        def step() -> float:
            tokens = torch.randint(vocab, (seq + 1, batch), generator=gen)
            logits = model(tokens[:-1])
            loss = F.cross_entropy(logits.view(-1, vocab), tokens[1:].reshape(-1))
            del logits
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=False)
            return loss.item()
        return step

    trainer(64, 16, 1, 2, 8, 2)()  # the same code paths on a tiny model first: lazy state, code pages
    gc.collect()
    baseline = anon()
    step = trainer(args.vocab, args.hidden, args.layers, args.heads, args.seq, args.batch)
    step()
    states = anon() - baseline  # weights, gradients, Adam state (activations are freed)
    at_reset = rss()
    reset_peak()
    losses = [step() for _ in range(args.steps - 1)]
    record = {"parallelism": parallelism, "rank": env.dist.rank, "states_bytes": states,
              "peak_bytes": states + peak() - at_reset, "baseline_bytes": baseline, "losses": losses}
    with open(os.path.join(args.out, f"{parallelism}.{env.dist.rank}.json"), "w") as f:
        json.dump(record, f)  # a file per rank: two ranks' prints can interleave on one line
    del step
    gc.collect()


def main() -> None:
    ap = argparse.ArgumentParser()
    for name in ("vocab", "hidden", "layers", "heads", "seq", "batch", "steps"):
        ap.add_argument(f"--{name}", type=int, required=True)
    ap.add_argument("--parallelism", required=True, help="ddp, fsdp, or both in turn: ddp,fsdp")
    ap.add_argument("--sharding", default="FULL_SHARD")
    ap.add_argument("--out", required=True, help="a directory: each rank writes PARALLELISM.RANK.json there")
    args = ap.parse_args()
    torch.set_num_threads(1)
    env = read_env(os.environ)
    dist.init_process_group("gloo")
    for parallelism in args.parallelism.split(","):
        measure(parallelism, args, env)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
