"""The object a training script talks to: ``rt = jsruntime.init()``."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, ContextManager

import torch
import torch.distributed as dist
from torch import nn

from . import process_group, strategy
from .checkpoint import Checkpointer, Stateful
from .env import CHECKPOINT_MODES, REQUEUE_EXIT_CODE, ConfigError, RuntimeEnv, read_env
from .metrics import CommTimer, MetricsEmitter, peak_memory
from .preemption import PreemptionWatcher

log = logging.getLogger("jsruntime")


class Runtime:
    """Process group, strategy, checkpoints, preemption and metrics for one training process."""

    def __init__(self, env: RuntimeEnv, device: torch.device, groups: process_group.Groups) -> None:
        self.env = env
        self.device = device
        self.groups = groups
        self.rank = env.dist.rank
        self.world_size = env.dist.world_size
        self.local_rank = env.dist.local_rank
        self.strategy = env.strategy
        self.metrics = MetricsEmitter(self.rank == 0, env.job_id, env.log_every)
        self.comm = CommTimer()  # time waiting on the model's collectives (comm_s in metric lines)
        self._last_step_at: float | None = None  # when rt.step was last called (each rank's own step time)
        self.preemption = PreemptionWatcher()
        self.checkpointer: Checkpointer | None = None
        if env.checkpoint.enabled:
            self.checkpointer = Checkpointer(
                env.checkpoint, self.rank, self.world_size, groups.control, groups.checkpoint, self.metrics
            )
        self._last_step = 0
        self._finished = False
        self._optimizers: Sequence[torch.optim.Optimizer] = ()
        self.metrics.start_window(time.perf_counter())

    # ---- properties ------------------------------------------------------------------
    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def preempt_requested(self) -> bool:
        return self.preemption.requested

    @property
    def deepspeed_config(self) -> str | dict[str, Any] | None:
        """The DeepSpeed config the plan generated, for ``deepspeed.initialize(config=...)``: the path of the
        file jsctl wrote (JETSTREAM_DEEPSPEED_CONFIG), else the JSON object from JETSTREAM_STRATEGY, else None."""
        if self.strategy.deepspeed_config:
            return self.strategy.deepspeed_config
        return json.loads(self.strategy.deepspeed_json) if self.strategy.deepspeed_json else None

    @property
    def batch(self) -> dict[str, int]:
        """The planned batch sizes: micro_batch_size, gradient_accumulation_steps, global_batch_size ({} when
        the job file gives none)."""
        return dict(self.strategy.batch)

    # ---- model -----------------------------------------------------------------------
    def wrap(self, model: nn.Module, shard_units: Callable[[nn.Module], list[nn.Module]] | None = None) -> nn.Module:
        """Move the model to the device and apply the planned strategy (DDP, FSDP2, none)."""
        wrapped = strategy.wrap(model, self.strategy, self.env.dist, self.device, shard_units)
        self.metrics.event("wrap", parallelism=self.strategy.parallelism, **strategy.applied(wrapped))
        if self.world_size > 1 and os.environ.get("JSRUNTIME_TIME_COLLECTIVES", "1") != "0":
            self.comm.attach(wrapped, self.device.type)  # DDP: a comm hook (set =0 to register your own)
        return wrapped

    def autocast(self) -> ContextManager[object]:
        """Mixed-precision context for the forward pass (DDP/none with bf16 or fp16)."""
        return strategy.autocast(self.strategy, self.device)

    # ---- checkpoints -----------------------------------------------------------------
    def restore(
        self,
        model: nn.Module | None = None,
        optimizer: torch.optim.Optimizer | Sequence[torch.optim.Optimizer] | None = None,
        scheduler: Stateful | None = None,
        dataloader: Stateful | None = None,
        extra: dict[str, Any] | Stateful | None = None,
    ) -> int:
        """Register what checkpoints hold and load the newest complete one.

        Returns the number of steps already done (0 without a checkpoint): continue with
        ``for step in range(start, total)``.  ``dataloader`` is per rank (anything with
        ``state_dict``/``load_state_dict``); ``extra`` must be equal on all ranks.
        """
        if optimizer is None:
            optimizers: Sequence[torch.optim.Optimizer] = ()
        elif isinstance(optimizer, torch.optim.Optimizer):
            optimizers = (optimizer,)
        else:
            optimizers = tuple(optimizer)
        start = 0
        if self.checkpointer is not None:
            t = self.checkpointer.tracked
            t.model, t.optimizers, t.scheduler, t.dataloader, t.extra = model, optimizers, scheduler, dataloader, extra
            t0 = time.monotonic()
            found = self.checkpointer.restore()
            if found is not None:
                start, info = found
                self.metrics.event(
                    "restore", step=start, restart_count=self.env.dist.restart_count,
                    world_size=self.world_size, load_s=round(time.monotonic() - t0, 4),
                    parallelism=self.strategy.parallelism, sharding_strategy=self._sharding(), **info,
                )
            else:
                self.metrics.event("fresh_start", step=0, restart_count=self.env.dist.restart_count)
        self._optimizers = optimizers
        self._last_step = start
        self.comm.take()  # what the restore waited is not a step's
        self.metrics.start_window(time.perf_counter())
        return start

    def _sharding(self) -> str | None:
        return self.strategy.sharding_strategy if self.strategy.parallelism == "fsdp" else None

    def save(self, step: int, mode: str | None = None) -> None:
        """Checkpoint now (every rank must call it at the same step)."""
        if self.checkpointer is None:
            raise RuntimeError("checkpoints are disabled: JETSTREAM_CHECKPOINT_DIR is not set")
        self.checkpointer.save(step, mode)

    # ---- the training loop -------------------------------------------------------------
    def step(
        self,
        step: int,
        loss: float | torch.Tensor | None = None,
        lr: float | None = None,
        samples: float | None = None,
        tokens: float | None = None,
        **metrics: Any,
    ) -> None:
        """Call after each optimizer step with the number of steps done.

        Logs metrics (rank 0), publishes a finished background save, starts a checkpoint
        when one is due, and on SIGTERM/SIGUSR1 saves synchronously and exits with
        ``REQUEUE_EXIT_CODE`` (75).  Every rank must call it for every step.
        """
        now = time.perf_counter()
        self._last_step = step
        if lr is None and self._optimizers:
            lr = self._optimizers[0].param_groups[0].get("lr")
        if isinstance(loss, torch.Tensor):
            loss = float(loss.detach().float().item())
        if isinstance(lr, torch.Tensor):
            lr = float(lr.item())
        comm_s = self.comm.take() if self.comm.attached else None

        ck = self.checkpointer
        cfg = self.env.checkpoint
        writing, failed = ck.local_status() if ck else (False, False)
        time_due = bool(
            ck and cfg.every_seconds is not None and self.rank == 0
            and time.monotonic() - ck.last_save_started >= cfg.every_seconds
        )
        flags = [float(self.preemption.requested), float(writing), float(failed), float(time_due)]
        if self.world_size > 1:  # one small collective: every rank acts on the same facts
            flags, per_rank = self._agree(flags, step, now, loss)
            if per_rank is not None:
                metrics = {**metrics, "ranks": per_rank}
        self._last_step_at = now
        self.metrics.step(step, now, self.world_size, loss=loss, lr=lr, samples=samples, tokens=tokens, extra=metrics,
                          comm_s=comm_s)
        preempt, writing_any, failed_any, time_due_any = (f > 0 for f in flags)

        if ck is not None and ck.in_flight is not None and not writing_any:
            ck.complete(failed_any)
        if preempt:
            self._stop_for_preemption(step)
        due = time_due_any or (cfg.every_steps is not None and step % cfg.every_steps == 0)
        if ck is not None and due and ck.last_saved_step != step:
            ck.save(step)

    def _agree(self, flags: list[float], step: int, now: float,
               loss: float | None) -> tuple[list[float], dict[str, list[float | None]] | None]:
        """The ranks' flags combined (any rank's wins). On a step that is logged, the same collective
        (an all_gather instead of the all_reduce) also brings every rank's loss, last step time and peak
        memory to rank 0, for the metric line's per-rank curves ("ranks": lists indexed by rank)."""
        if step % self.metrics.log_every != 0:
            t = torch.tensor(flags)
            dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.groups.control)
            return t.tolist(), None
        step_time = now - self._last_step_at if self._last_step_at is not None else math.nan
        mine = torch.tensor([*flags, math.nan if loss is None else loss, step_time, float(peak_memory()[0])],
                            dtype=torch.float64)
        rows = [torch.empty_like(mine) for _ in range(self.world_size)]
        dist.all_gather(rows, mine, group=self.groups.control)
        table = torch.stack(rows)
        combined = table[:, : len(flags)].max(dim=0).values.tolist()
        if self.rank != 0:
            return combined, None
        n = len(flags)
        loss_, time_, mem = ([None if math.isnan(v) else v for v in table[:, i].tolist()] for i in (n, n + 1, n + 2))
        return combined, {"loss": loss_, "step_time_s": [None if v is None else round(v, 6) for v in time_],
                          "peak_mem_bytes": [None if v is None else int(v) for v in mem]}

    def _stop_for_preemption(self, step: int) -> None:
        self.metrics.event("preempt", step=step, signal=self.preemption.signal_name or "peer rank")
        if self.checkpointer is not None:
            self.checkpointer.wait()
            if self.checkpointer.last_saved_step != step:
                self.checkpointer.save(step, mode="sync")
        if self.world_size > 1:
            dist.barrier(group=self.groups.control)  # no rank exits before the save is published
        status = self.env.status_file
        if status and self.local_rank == 0:
            with contextlib.suppress(OSError), open(status, "w") as fh:
                fh.write(f"preempted step={step} exit={REQUEUE_EXIT_CODE}\n")
        self.metrics.event("exit", step=step, exit_code=REQUEUE_EXIT_CODE, reason="preempted")
        self._finished = True
        process_group.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        raise SystemExit(REQUEUE_EXIT_CODE)

    def finish(self, save: bool = True) -> None:
        """End of training: wait for background saves, write a final checkpoint, tear down."""
        if self._finished:
            return
        self._finished = True
        ck = self.checkpointer
        if ck is not None:
            ck.wait()
            if save and self._last_step > 0 and ck.last_saved_step != self._last_step:
                ck.save(self._last_step, mode="sync")
        if self.world_size > 1:
            dist.barrier(group=self.groups.control)
        self.metrics.event("finish", step=self._last_step)
        self.preemption.uninstall()
        process_group.shutdown()


def init(
    device: str | None = None,
    checkpoint_mode: str | None = None,
    log_every: int | None = None,
    handle_signals: bool = True,
    env: RuntimeEnv | None = None,
) -> Runtime:
    """Read the job environment, start the process group, install preemption handlers.

    Raises ``StrategyError`` when the planned strategy cannot run on this machine.
    """
    import dataclasses

    logging.basicConfig(level=os.environ.get("JSRUNTIME_LOG_LEVEL", "WARNING"))
    env = env or read_env()
    if checkpoint_mode is not None:
        if checkpoint_mode not in CHECKPOINT_MODES:
            raise ConfigError(f"checkpoint_mode={checkpoint_mode!r}: expected one of {CHECKPOINT_MODES}")
        env = dataclasses.replace(env, checkpoint=dataclasses.replace(env.checkpoint, mode=checkpoint_mode))
    if log_every is not None:
        env = dataclasses.replace(env, log_every=log_every)
    dev = process_group.pick_device(env.dist, device)
    strategy.check(env.strategy, env.dist, dev)
    groups = process_group.init_groups(env.dist, dev)
    rt = Runtime(env, dev, groups)
    if env.status_file and env.dist.local_rank == 0 and os.path.exists(env.status_file):
        os.unlink(env.status_file)  # left by an earlier attempt that torchrun restarted
    if handle_signals:
        rt.preemption.install()
    rt.metrics.event(
        "start", rank=rt.rank, world_size=rt.world_size, restart_count=env.dist.restart_count,
        parallelism=env.strategy.parallelism, sharding_strategy=rt._sharding(), device=str(dev),
        checkpoint_dir=env.checkpoint.directory, checkpoint_mode=env.checkpoint.mode if env.checkpoint.enabled else None,
    )
    return rt
