"""What the framework integrations (jsruntime.hf, jsruntime.accelerate) share: a conflict between the plan
and what a script set explicitly, agreeing on flags across ranks, and the preemption exit.

Imports neither transformers nor accelerate; torch only once a process group exists.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from dataclasses import dataclass
from typing import Any

from .env import REQUEUE_EXIT_CODE, ConfigError, RuntimeEnv
from .metrics import MetricsEmitter

log = logging.getLogger("jsruntime")
PREFER = ("plan", "script", "error")


@dataclass(frozen=True)
class Conflict:
    """A value the script set explicitly that the plan contradicts."""

    field: str
    script: Any
    plan: Any
    why: str

    def message(self, where: str, prefer: str) -> str:
        using = {"plan": f"using the plan's {self.plan!r}", "script": f"keeping the script's {self.script!r}"}
        return (f"jsruntime.{where}: {self.field}: the script set {self.script!r}, the plan says {self.plan!r} "
                f"({self.why})" + (f"; {using[prefer]}" if prefer in using else ""))


def report(conflicts: list[Conflict], where: str, prefer: str, rank: int) -> None:
    """Warn about each conflict (rank 0), or raise ConfigError with all of them for ``prefer="error"``."""
    if prefer not in PREFER:
        raise ConfigError(f"prefer={prefer!r}: expected one of {PREFER}")
    if conflicts and prefer == "error":
        raise ConfigError(f"the script's {where} settings contradict the plan:\n  " +
                          "\n  ".join(c.message(where, prefer) for c in conflicts))
    if rank == 0:
        for c in conflicts:
            log.warning(c.message(where, prefer))  # on stderr even without logging set up (logging.lastResort)


def dist() -> Any:
    """torch.distributed when a process group is up, else None."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    d = torch.distributed
    return d if d.is_available() and d.is_initialized() else None


def agree(flags: list[float]) -> list[float]:
    """MAX of ``flags`` over all ranks: every rank then acts on the same facts."""
    d = dist()
    if d is None or d.get_world_size() == 1:
        return flags
    import torch

    device = torch.device("cuda", torch.cuda.current_device()) if d.get_backend() == "nccl" else torch.device("cpu")
    t = torch.tensor(flags, dtype=torch.float32, device=device)
    d.all_reduce(t, op=d.ReduceOp.MAX)
    return t.tolist()


_teardown_registered = False


def destroy_at_exit() -> None:
    """Destroy the process group when the interpreter exits (once per process).

    Neither the Trainer nor a plain script does: a gloo group left alive at interpreter shutdown can
    abort a rank ("terminate called without an active exception", SIGABRT) after training succeeded,
    and torchrun then reports the job failed.
    """
    global _teardown_registered
    if _teardown_registered:
        return
    _teardown_registered = True
    import atexit

    def _destroy() -> None:
        d = dist()
        if d is not None:
            with contextlib.suppress(Exception):
                d.destroy_process_group()

    atexit.register(_destroy)


def barrier() -> None:
    d = dist()
    if d is not None and d.get_world_size() > 1:
        d.barrier()


def exit_preempted(env: RuntimeEnv, metrics: MetricsEmitter, step: int) -> None:
    """After the preemption checkpoint is published: tell jsruntime.launch (status file), tear down, exit 75."""
    barrier()  # no rank leaves before the checkpoint is published
    status = env.status_file
    if status and env.dist.local_rank == 0:
        with contextlib.suppress(OSError), open(status, "w") as fh:
            fh.write(f"preempted step={step} exit={REQUEUE_EXIT_CODE}\n")
    metrics.event("exit", step=step, exit_code=REQUEUE_EXIT_CODE, reason="preempted")
    d = dist()
    if d is not None:
        with contextlib.suppress(Exception):
            d.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    raise SystemExit(REQUEUE_EXIT_CODE)
