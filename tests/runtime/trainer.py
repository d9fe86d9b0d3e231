"""Training script for the runtime tests: the quickstart's model and data, plus test knobs.

--dump PATH     rank 0 writes the full model state dict right after restore (torch.save)
--sleep S       sleep S seconds per step (gives a test time to send a signal)
--hidden N      model width (N=2048 makes checkpoints large enough to kill one mid-write)
--model blocks  a residual model of 3 `Block`s in a ModuleList (auto-wrap and activation checkpointing)
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import jsruntime
import torch
from torch import nn

_QS = Path(__file__).resolve().parents[2] / "examples" / "quickstart" / "train.py"
_spec = importlib.util.spec_from_file_location("quickstart_train", _QS)
assert _spec and _spec.loader
qs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(qs)


class Block(nn.Module):
    """A residual MLP block: what a transformer layer is to FSDP's auto-wrap (one unit per block)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, 2 * hidden)
        self.fc2 = nn.Linear(2 * hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm(x))))


class BlockModel(nn.Module):
    def __init__(self, dim: int, hidden: int, classes: int, layers: int = 3) -> None:
        super().__init__()
        self.embed = nn.Linear(dim, hidden)
        self.blocks = nn.ModuleList(Block(hidden) for _ in range(layers))
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def full_model_state(model: nn.Module) -> dict[str, torch.Tensor]:
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_model_state_dict,
    )

    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--sleep", type=float, default=0.0)
    ap.add_argument("--dump", default=None)
    ap.add_argument("--model", choices=("mlp", "blocks"), default="mlp")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rt = jsruntime.init()
    dim, classes = 64, 10
    torch.manual_seed(args.seed)
    build = BlockModel if args.model == "blocks" else qs.build_model
    model = rt.wrap(build(dim, args.hidden, classes))
    torch.manual_seed(args.seed * 7919 + rt.rank)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = qs.SyntheticData(args.seed, rt.rank, args.batch_size, dim, classes)
    start = rt.restore(model=model, optimizer=opt, dataloader=data, extra={"seed": args.seed})
    if args.dump:
        state = full_model_state(model)  # collective under FSDP: every rank calls it
        if rt.is_main:
            torch.save({"step": start, "model": state}, args.dump)
    for step in range(start, args.steps):
        x, y = data.next()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if args.sleep:
            time.sleep(args.sleep)
        rt.step(step + 1, loss=loss.item(), samples=args.batch_size)
    rt.finish()


if __name__ == "__main__":
    main()
