"""Checkpoint overhead of jsruntime's modes against a synchronous torch.save.

For a model of ``--size-mb`` fp32 parameters with Adam (state = 3x that), per checkpoint:

* blocked: how long the training loop stops inside the save call;
* lost:    training time lost = (N steps with one checkpoint, until it is on disk)
           minus (the same N steps without), run alternately; the fastest of ``--repeats``
           runs of each counts, since other processes on the machine only ever add time.

Also the runtime's overhead on step time with checkpoints disabled (``rt.step`` per step)
against a plain loop (target < 2 %).

    python benchmarks/checkpoint_overhead.py                     # CPU, 300 MB
    python benchmarks/checkpoint_overhead.py --device cuda --size-mb 2000
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import jsruntime
import torch
from jsruntime.checkpoint_dir import fsync_dir
from jsruntime.env import CheckpointConfig
from torch import nn


def build(size_mb: float, device: torch.device, layers: int = 6) -> tuple[nn.Module, torch.optim.Optimizer, int]:
    width = int(math.sqrt(size_mb * 2**20 / 4 / layers)) // 64 * 64
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(width, width) for _ in range(layers)]).to(device)
    return model, torch.optim.Adam(model.parameters(), lr=1e-4), width


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=300)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=6, help="steps per timed run")
    ap.add_argument("--save-after", type=int, default=2, help="checkpoint after this many steps of a run")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per mode (the fastest counts)")
    ap.add_argument("--modes", default="torch.save,sync,thread,process")
    ap.add_argument("--dir", default=None, help="where to write (default: a temporary directory)")
    args = ap.parse_args()
    device = torch.device(args.device)
    root = Path(args.dir or tempfile.mkdtemp(prefix="jsrt-bench-"))
    ckpt_cfg = CheckpointConfig(directory=str(root / "ckpt"), keep_latest=1, mode="sync")
    env = dataclasses.replace(jsruntime.read_env(), checkpoint=ckpt_cfg)
    rt = jsruntime.init(device=args.device, env=env, handle_signals=False)
    rt.metrics.stream = open(os.devnull, "w")
    model, opt, width = build(args.size_mb, device)
    params = sum(p.numel() for p in model.parameters())
    x = torch.randn(args.batch, width, device=device)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    def train_step() -> None:
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        train_step()  # creates Adam's state
    sync()
    rt.restore(model=model, optimizer=opt)
    ck = rt.checkpointer
    assert ck is not None
    state_mb = (params * 4 + sum(t.numel() * t.element_size() for s in opt.state.values() for t in s.values())) / 2**20
    print(f"model {params / 1e6:.1f} M params = {params * 4 / 2**20:.0f} MiB fp32; with Adam state {state_mb:.0f} MiB; "
          f"device {device}; {torch.get_num_threads()} threads; writing to {root}")

    def torch_save(step: int) -> None:
        path = root / f"torch-save-{step}.pt"
        with open(path, "wb") as fh:
            torch.save({"model": model.state_dict(), "optim": opt.state_dict()}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        fsync_dir(root)
        path.unlink()

    step_counter = [0]

    def run(save: Callable[[int], None] | None) -> tuple[float, float]:
        """N steps; optional checkpoint after save_after steps; returns (total, blocked)."""
        blocked = 0.0
        sync()
        t0 = time.perf_counter()
        for i in range(args.steps):
            train_step()
            sync()
            step_counter[0] += 1
            if save is not None and i + 1 == args.save_after:
                b0 = time.perf_counter()
                save(step_counter[0])
                blocked = time.perf_counter() - b0
            if ck.in_flight is not None:  # what rt.step does each step: publish a finished save
                writing, failed = ck.local_status()
                if not writing:
                    ck.complete(failed)
        ck.wait()  # the checkpoint counts only once it is on disk
        sync()
        return time.perf_counter() - t0, blocked

    savers: dict[str, Callable[[int], None]] = {
        "torch.save": torch_save,
        "sync": lambda s: ck.save(s, "sync"),
        "thread": lambda s: ck.save(s, "thread"),
        "process": lambda s: ck.save(s, "process"),
    }
    modes = [m for m in args.modes.split(",") if m]
    results: dict[str, tuple[float, float, float]] = {}
    bases: list[float] = []
    for mode in modes:
        step_counter[0] += 1
        savers[mode](step_counter[0])  # warm-up (process mode: starts its helper once)
        ck.wait()
        base_runs, with_runs, blocked = [], [], []
        for _ in range(args.repeats):
            base_runs.append(run(None)[0])
            total, blk = run(savers[mode])
            with_runs.append(total)
            blocked.append(blk)
        bases.extend(base_runs)
        # Interference from other processes only ever adds time: compare the fastest runs.
        lost = min(with_runs) - min(base_runs)
        lost_median = statistics.median(w - b for w, b in zip(with_runs, base_runs, strict=True))
        results[mode] = (min(blocked), lost, lost_median)
        print(f"  {mode:<10} blocked {min(blocked):7.3f} s   lost {lost:7.3f} s   (paired median {lost_median:.2f} s; "
              f"runs with {', '.join(f'{v:.2f}' for v in with_runs)}, without {', '.join(f'{v:.2f}' for v in base_runs)})",
              flush=True)

    step_s = min(bases) / args.steps
    ref_blocked, ref_lost = results.get("torch.save", (float("nan"), float("nan"), 0.0))[:2]
    print(f"\nper checkpoint ({args.steps}-step runs, fastest of {args.repeats}; {step_s:.3f} s/step without checkpoints):")
    print(f"{'mode':<12}{'blocked s':>10}{'lost s':>10}{'lost steps':>12}{'blocked/torch.save':>20}{'lost/torch.save':>17}")
    for mode, (blk, lost, _) in results.items():
        print(f"{mode:<12}{blk:>10.3f}{lost:>10.3f}{lost / step_s:>12.2f}{blk / ref_blocked:>20.2f}{lost / ref_lost:>17.2f}")
    best = min((m for m in results if m != "torch.save"), key=lambda m: results[m][1], default=None)
    if best:
        print(f"least training time lost: {best}")

    # runtime overhead with checkpoints disabled: rt.step() per step vs a plain loop (A/B, interleaved)
    plain_env = dataclasses.replace(env, checkpoint=CheckpointConfig())
    rt_off = jsruntime.Runtime(plain_env, device, rt.groups)
    rt_off.metrics.stream = rt.metrics.stream
    rt_off.restore(model=model, optimizer=opt)
    plain, with_rt = [], []
    for r in range(args.repeats):
        for use_rt in ((False, True) if r % 2 == 0 else (True, False)):
            sync()
            t0 = time.perf_counter()
            for i in range(args.steps):
                train_step()
                if use_rt:
                    rt_off.step(i + 1, loss=0.0, samples=args.batch)
            sync()
            (with_rt if use_rt else plain).append((time.perf_counter() - t0) / args.steps)
    calls = 2000
    t0 = time.perf_counter()
    for i in range(calls):
        rt_off.step(i + 1, loss=1.0, samples=args.batch)
    per_call = (time.perf_counter() - t0) / calls
    p, w = min(plain), min(with_rt)
    print(f"\nruntime overhead, checkpoints disabled: plain {p:.4f} s/step, with rt.step {w:.4f} s/step "
          f"({(w - p) / p * 100:+.2f} %); rt.step itself {per_call * 1e6:.0f} us/call "
          f"({per_call / p * 100:.3f} % of a step; logging every step)")
    rt.finish(save=False)
    if args.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
