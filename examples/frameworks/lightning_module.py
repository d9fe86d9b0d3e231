"""A Lightning module that follows jsctl's plan: the one line is ``jsruntime.lightning.prepare``.

An MLP (with dropout) learns a generated classification task on the CPU; 2 workers under torchrun
(DDP with gloo) on the local provider, or one process alone:

    python examples/frameworks/lightning_module.py --steps 200
    JETSTREAM_CHECKPOINT_DIR=/tmp/pl/ckpt JETSTREAM_SAVE_FREQUENCY=20steps JETSTREAM_KEEP_LATEST=2 \\
        python -m jsruntime.launch --nproc-per-node=2 examples/frameworks/lightning_module.py

Send SIGUSR1 while it runs: it saves at the end of the step and exits 75; run it again and it
continues from that checkpoint with the same losses as an uninterrupted run.  The data is a stream
whose batch ``i`` depends only on (seed, rank, i) and that starts at ``trainer.global_step``: a plain
DataLoader restarts its epoch from the beginning when Lightning resumes mid-epoch (Lightning warns
"your dataloader is not resumable"), which changes the losses.  At the end rank 0 writes
``final.json`` (steps, final training loss, held-out loss) into the output directory.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import jsruntime.lightning
import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset

try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl


class GeneratedBatches(IterableDataset):
    """Batches ``start, start+1, ...`` of rank ``rank``; batch ``i`` depends only on (seed, rank, i)."""

    def __init__(self, seed: int, rank: int, batch_size: int, dim: int, classes: int, start: int = 0) -> None:
        self.seed, self.rank, self.batch_size, self.dim, self.start = seed, rank, batch_size, dim, start
        self.w = torch.randn(dim, classes, generator=torch.Generator().manual_seed(seed))  # the teacher

    def batch(self, index: int, rank: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        r = self.rank if rank is None else rank
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + r * 100_003 + index)
        x = torch.randn(self.batch_size, self.dim, generator=g)
        y = (x @ self.w + 0.5 * torch.randn(x.shape[0], self.w.shape[1], generator=g)).argmax(dim=1)
        return x, y

    def __iter__(self):
        index = self.start
        while True:
            yield self.batch(index)
            index += 1


class Classifier(pl.LightningModule):
    def __init__(self, dim: int = 64, hidden: int = 256, classes: int = 10, lr: float = 3e-3, steps: int = 200,
                 seed: int = 0, batch_size: int = 32) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(0.1),
            nn.Linear(hidden, hidden), nn.GELU(), nn.Dropout(0.1),
            nn.Linear(hidden, classes),
        )
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = self.loss_fn(self(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=0.01)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.hparams.steps)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    def data(self, start: int = 0) -> GeneratedBatches:
        h = self.hparams
        return GeneratedBatches(h.seed, self.global_rank, h.batch_size, h.dim, h.classes, start)

    def train_dataloader(self) -> DataLoader:
        # Called after a checkpoint is restored: continue the stream where the restored run stopped.
        start = self.trainer.global_step * self.trainer.accumulate_grad_batches
        return DataLoader(self.data(start), batch_size=None)


class MinStepTime(pl.Callback):
    """``--min-step-seconds``: pad each step to at least this wall time, so a test can signal mid-run."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.t = seconds, time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):  # noqa: ANN001, ANN201
        time.sleep(max(0.0, self.seconds - (time.perf_counter() - self.t)))
        self.t = time.perf_counter()


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--output-dir", default=os.environ.get("JETSTREAM_OUTPUT_DIR"))
    ap.add_argument("--min-step-seconds", type=float, default=0.0)
    return ap.parse_args()


def main() -> None:
    args = parse_args()
    torch.set_num_threads(1)  # 2 workers on 2 cores
    pl.seed_everything(args.seed, verbose=False)  # same initial weights on every rank
    model = Classifier(hidden=args.hidden, lr=args.lr, steps=args.steps, seed=args.seed, batch_size=args.batch_size)
    trainer = pl.Trainer(**jsruntime.lightning.prepare(
        max_steps=args.steps, logger=False, enable_progress_bar=False, enable_model_summary=False,
        num_sanity_val_steps=0, callbacks=[MinStepTime(args.min_step_seconds)] if args.min_step_seconds else None))
    # Dropout masks differ per rank (and are replayed after a resume: the checkpoint holds every rank's RNG).
    torch.manual_seed(args.seed * 7919 + trainer.global_rank)
    trainer.fit(model, ckpt_path=jsruntime.lightning.resume_path())

    if trainer.is_global_zero:
        model.eval()
        with torch.no_grad():
            x, y = model.data().batch(10**9, rank=0)  # a held-out batch
            eval_loss = float(model.loss_fn(model(x), y))
        ckpt = os.environ.get("JETSTREAM_CHECKPOINT_DIR")
        out = Path(args.output_dir or (Path(ckpt).parent if ckpt else "."))
        out.mkdir(parents=True, exist_ok=True)
        final = {"step": trainer.global_step, "final_loss": eval_loss,
                 "final_train_loss": float(trainer.callback_metrics["train_loss"]), "world_size": trainer.world_size}
        (out / "final.json").write_text(json.dumps(final, indent=2) + "\n")
        print(json.dumps({"jetstream": "event", "event": "final", **final}), flush=True)


if __name__ == "__main__":
    main()
