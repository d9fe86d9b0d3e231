"""jsctl quickstart: a small MLP that really trains on the CPU, with jsruntime.

Run it alone (one process) or under torchrun (2 workers, gloo):

    python examples/quickstart/train.py --steps 300
    JETSTREAM_CHECKPOINT_DIR=/tmp/qs/ckpt JETSTREAM_SAVE_FREQUENCY=50steps \\
        python -m jsruntime.launch --nproc-per-node=2 --max-restarts=3 examples/quickstart/train.py

Kill a worker with ``kill -9`` while it runs: torchrun restarts the workers, which continue
from the newest complete checkpoint with exactly the same losses as an uninterrupted run.
At the end rank 0 writes ``final.json`` (final loss and step) into the output directory.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

import jsruntime
import torch
from torch import nn


class SyntheticData:
    """Deterministic batches: batch ``i`` of rank ``r`` depends only on (seed, r, i).

    Its position is per-rank state that checkpoints carry (``state_dict``/``load_state_dict``).
    """

    def __init__(self, seed: int, rank: int, batch_size: int, dim: int, classes: int) -> None:
        self.seed, self.rank, self.batch_size, self.dim = seed, rank, batch_size, dim
        self.position = 0
        teacher = torch.Generator().manual_seed(seed)
        self.w = torch.randn(dim, classes, generator=teacher)

    def batch(self, index: int, rank: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        r = self.rank if rank is None else rank
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + r * 100_003 + index)
        x = torch.randn(self.batch_size, self.dim, generator=g)
        y = (x @ self.w + 0.5 * torch.randn(x.shape[0], self.w.shape[1], generator=g)).argmax(dim=1)
        return x, y

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.batch(self.position)
        self.position += 1
        return out

    def state_dict(self) -> dict[str, int]:
        return {"position": self.position}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.position = int(state["position"])


def build_model(dim: int, hidden: int, classes: int) -> nn.Module:
    return nn.Sequential(
        nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(0.1),
        nn.Linear(hidden, hidden), nn.GELU(), nn.Dropout(0.1),
        nn.Linear(hidden, classes),
    )


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--output-dir", default=os.environ.get("JETSTREAM_OUTPUT_DIR"))
    return ap.parse_args()


def main() -> None:
    args = parse_args()
    torch.set_num_threads(1)  # 2 workers on 2 cores
    rt = jsruntime.init()
    random.seed(args.seed + rt.rank)

    dim, classes = 64, 10
    torch.manual_seed(args.seed)  # same initial weights on every rank
    model = rt.wrap(build_model(dim, args.hidden, classes))
    torch.manual_seed(args.seed * 7919 + rt.rank)  # dropout masks differ per rank; replayed on resume
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    data = SyntheticData(args.seed, rt.rank, args.batch_size, dim, classes)
    loss_fn = nn.CrossEntropyLoss()

    start = rt.restore(model=model, optimizer=opt, scheduler=sched, dataloader=data)
    last_loss = float("nan")
    for step in range(start, args.steps):
        x, y = data.next()
        with rt.autocast():
            loss = loss_fn(model(x.to(rt.device)), y.to(rt.device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        last_loss = loss.item()
        rt.step(step + 1, loss=last_loss, lr=sched.get_last_lr()[0], samples=args.batch_size)

    # Held-out loss on the same fixed batch on every rank (FSDP needs all ranks in forward).
    model.eval()
    with torch.no_grad():
        x, y = data.batch(10**9, rank=0)
        eval_loss = float(loss_fn(model(x.to(rt.device)), y.to(rt.device)))
    rt.finish()
    if rt.is_main:
        ckpt = os.environ.get("JETSTREAM_CHECKPOINT_DIR")
        out = Path(args.output_dir or (Path(ckpt).parent if ckpt else "."))
        out.mkdir(parents=True, exist_ok=True)
        final = {"step": args.steps, "final_loss": eval_loss, "final_train_loss": last_loss, "world_size": rt.world_size}
        (out / "final.json").write_text(json.dumps(final, indent=2) + "\n")
        print(json.dumps({"jetstream": "event", "event": "final", **final}), flush=True)


if __name__ == "__main__":
    main()
