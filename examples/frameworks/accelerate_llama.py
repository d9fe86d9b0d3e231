"""Fine-tune a tiny Llama with a plain ``accelerate.Accelerator`` loop, following the jsctl plan
(jsruntime.accelerate).

The jsruntime lines are marked ``# jsruntime``; without them this is an ordinary Accelerate loop.
Alone (one process):          python examples/frameworks/accelerate_llama.py --max-steps 40
As a job (2 CPU workers):     jsctl apply -f examples/frameworks/accelerate.yaml

Checkpoints are ``accelerator.save_state`` directories in the plan's checkpoint directory
(``step-N/``, marked ``COMPLETE``); a requeued job loads the newest with ``accelerator.load_state``
and skips the batches of the epoch it had already seen. At the end rank 0 writes ``final.json``
(steps, last loss, held-out loss, a sha256 of the weights) into ``--output-dir``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import jsruntime.accelerate  # jsruntime
import torch
from accelerate import Accelerator
from tinyllama import PatternDataset, build_model, digest
from torch.utils.data import DataLoader


def cosine_with_warmup(warmup: int, total: int):  # noqa: ANN201
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))
    return factor


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-steps", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output-dir", default=os.environ.get("JETSTREAM_MOUNT_RESULTS", "out/results"))
    ap.add_argument("--min-step-seconds", type=float, default=0.0)  # pad steps so a test can signal mid-run
    a = ap.parse_args()
    torch.set_num_threads(1)  # 2 workers on 2 cores

    accelerator = Accelerator(cpu=not torch.cuda.is_available(),
                              **jsruntime.accelerate.accelerator_kwargs())  # jsruntime: the planned strategy
    js = jsruntime.accelerate.prepare(accelerator)  # jsruntime: checkpoints, preemption, metrics
    model = build_model(a.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    n = accelerator.num_processes  # a prepared scheduler steps once per process per optimizer step
    sched = torch.optim.lr_scheduler.LambdaLR(opt, cosine_with_warmup(4 * n, a.max_steps * n))
    data = DataLoader(PatternDataset(seed=a.seed), batch_size=8, shuffle=False)
    model, opt, data, sched = accelerator.prepare(model, opt, data, sched)

    start = js.resume()  # jsruntime: steps already done (0 on a fresh start)
    step, epoch = start, start // len(data)
    model.train()
    while step < a.max_steps:
        # a resumed epoch continues where the checkpointed run stopped
        batches = accelerator.skip_first_batches(data, step % len(data)) if step % len(data) else data
        for batch in batches:
            t = time.perf_counter()
            loss = model(**batch).loss
            accelerator.backward(loss)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            time.sleep(max(0.0, a.min_step_seconds - (time.perf_counter() - t)))
            js.step(step, loss=loss, samples=8, tokens=8 * 32)  # jsruntime: saves, exits 75 on SIGUSR1
            if step >= a.max_steps:
                break
        epoch += 1
    js.finish()  # jsruntime: the final checkpoint

    held_out = PatternDataset(size=64, seed=a.seed + 1)
    model.eval()
    with torch.no_grad():
        batch = {k: torch.stack([held_out[i][k] for i in range(len(held_out))]).to(accelerator.device)
                 for k in ("input_ids", "labels")}
        eval_loss = float(accelerator.unwrap_model(model)(**batch).loss)
    if accelerator.is_main_process:
        out = Path(a.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        final = {"step": step, "train_loss": float(loss.detach()), "eval_loss": eval_loss,
                 "weights_sha256": digest(accelerator.unwrap_model(model)), "world_size": accelerator.num_processes}
        (out / "final.json").write_text(json.dumps(final, indent=2) + "\n")
        print(json.dumps({"jetstream": "event", "event": "final", **final}), flush=True)
    accelerator.end_training()


if __name__ == "__main__":
    main()
