"""Fine-tune a tiny Llama with ``transformers.Trainer``, following the jsctl plan (jsruntime.hf).

The three jsruntime lines are marked ``# jsruntime``; without them this is a plain Trainer script.
Alone (one process):          python examples/frameworks/hf_trainer_llama.py --max-steps 40
As a job (2 CPU workers):     jsctl apply -f examples/frameworks/hf-trainer.yaml

At the end rank 0 writes ``final.json`` (steps, last loss, held-out loss, a sha256 of the weights) into
``--output-dir``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import jsruntime.hf  # jsruntime
import torch
from tinyllama import PatternDataset, build_model, digest
from transformers import Trainer, TrainerCallback, TrainingArguments


class MinStepTime(TrainerCallback):
    """``--min-step-seconds``: pad each step to at least this wall time, so a test can signal mid-run."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.t = seconds, time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201
        time.sleep(max(0.0, self.seconds - (time.perf_counter() - self.t)))
        self.t = time.perf_counter()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-steps", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output-dir", default=os.environ.get("JETSTREAM_MOUNT_RESULTS", "out/results"))
    ap.add_argument("--min-step-seconds", type=float, default=0.0)
    a = ap.parse_args()
    torch.set_num_threads(1)  # 2 workers on 2 cores

    args = TrainingArguments(
        output_dir="out/tiny-llama",
        max_steps=a.max_steps,
        per_device_train_batch_size=8,
        learning_rate=3e-3,
        lr_scheduler_type="cosine",
        warmup_steps=4,
        weight_decay=0.01,
        logging_steps=5,
        seed=a.seed,
        report_to="none",
        disable_tqdm=True,
        use_cpu=not torch.cuda.is_available(),
        dataloader_num_workers=0,
        ddp_find_unused_parameters=False,
    )
    args = jsruntime.hf.prepare(args)  # jsruntime: checkpoint dir, save frequency, strategy from the plan
    model = build_model(a.seed)
    callbacks = [jsruntime.hf.JetstreamCallback()]  # jsruntime: preemption, complete checkpoints, metrics
    if a.min_step_seconds:
        callbacks.append(MinStepTime(a.min_step_seconds))
    trainer = Trainer(model=model, args=args, train_dataset=PatternDataset(seed=a.seed), callbacks=callbacks)
    result = trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)  # jsruntime: resume if requeued

    held_out = PatternDataset(size=64, seed=a.seed + 1)
    eval_loss = trainer.evaluate(eval_dataset=held_out)["eval_loss"]
    if trainer.is_world_process_zero():
        out = Path(a.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        final = {"step": trainer.state.global_step, "train_loss": result.training_loss, "eval_loss": eval_loss,
                 "weights_sha256": digest(trainer.model), "world_size": args.world_size}
        (out / "final.json").write_text(json.dumps(final, indent=2) + "\n")
        print(json.dumps({"jetstream": "event", "event": "final", **final}), flush=True)


if __name__ == "__main__":
    main()
