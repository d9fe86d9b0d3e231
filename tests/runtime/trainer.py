"""Training script for the runtime tests: the quickstart's model and data, plus test knobs.

--dump PATH     rank 0 writes the full model state dict right after restore (torch.save)
--sleep S       sleep S seconds per step (gives a test time to send a signal)
--hidden N      model width (N=2048 makes checkpoints large enough to kill one mid-write)
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
    args = ap.parse_args()
    torch.set_num_threads(1)
    rt = jsruntime.init()
    dim, classes = 64, 10
    torch.manual_seed(args.seed)
    model = rt.wrap(qs.build_model(dim, args.hidden, classes))
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
