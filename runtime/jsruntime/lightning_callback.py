"""The Lightning callback of jsruntime.lightning (see that module): checkpoints in jsruntime's layout,
every rank's RNG in the checkpoint, the preemption path (save, exit 75) and metric lines; and the
types and constants the mapping shares with it. Imports Lightning: import it only through
jsruntime.lightning."""

from __future__ import annotations

import contextlib
import logging
import math
import sys
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from . import checkpoint_dir as cdir
from .env import REQUEUE_EXIT_CODE, ConfigError, RuntimeEnv, read_env
from .metrics import MetricsEmitter
from .preemption import PreemptionWatcher

try:
    import lightning.pytorch as pl
except ImportError:  # the standalone package
    try:
        import pytorch_lightning as pl  # type: ignore[no-redef]
    except ImportError:
        raise ImportError("jsruntime.lightning needs PyTorch Lightning: pip install lightning") from None
import importlib

_environments = importlib.import_module(pl.__name__ + ".plugins.environments")
SLURMEnvironment = _environments.SLURMEnvironment
ClusterEnvironment = _environments.ClusterEnvironment

log = logging.getLogger("jsruntime")

CKPT_FILE = "lightning.ckpt"
FORMAT = "lightning"
REQUEUE = "jsctl runtime (exit 75)"
PRECISIONS = {"bf16": "bf16-mixed", "fp16": "16-mixed", "fp32": "32-true"}


class LightningConflict(ConfigError):
    """The script asked Lightning for something the plan cannot share (a second requeuer)."""


@dataclass(frozen=True)
class Conflict:
    """A Trainer argument the script set that differs from the plan: the script's value is kept."""

    setting: str
    planned: str
    yours: str

    def __str__(self) -> str:
        return f"{self.setting}: the plan says {self.planned}, the script set {self.yours} (kept)"


@dataclass(frozen=True)
class Prepared:
    """What ``plan`` decided: the Trainer's keyword arguments and why."""

    kwargs: dict[str, Any]
    conflicts: tuple[Conflict, ...] = ()
    cluster_environment: str = "auto"  # what Lightning's cluster environment is (for the start event)
    requeue: str = REQUEUE



# ---- the callback ---------------------------------------------------------------------------
def _scalar(value: Any) -> float | None:
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            return None
        value = value.detach().float().item()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _batch_size(batch: Any) -> int | None:
    if isinstance(batch, torch.Tensor):
        return int(batch.shape[0]) if batch.dim() else None
    if isinstance(batch, (list, tuple)) and batch:
        return _batch_size(batch[0])
    if isinstance(batch, Mapping) and batch:
        return _batch_size(next(iter(batch.values())))
    return None


def _rng_capture() -> dict[str, Any]:
    """This process's generators in types ``torch.load(weights_only=True)`` accepts (Lightning loads so)."""
    from . import rng

    state = rng.capture()
    if "numpy" in state:
        kind, keys, pos, has_gauss, cached = state["numpy"]
        state["numpy"] = (kind, torch.from_numpy(keys.astype("int64")), int(pos), int(has_gauss), float(cached))
    return state


def _rng_restore(state: dict[str, Any]) -> None:
    from . import rng

    state = dict(state)
    if "numpy" in state:
        import numpy as np

        kind, keys, pos, has_gauss, cached = state["numpy"]
        state["numpy"] = (kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached)
    rng.restore(state)


class JetstreamCallback(pl.Callback):
    """Checkpoints, preemption and metrics as the plan says (see the module's docstring).

    Every rank runs it.  Its ``state_dict`` (saved in the Lightning checkpoint) holds every rank's
    random number generators; they are restored before the first step after a resume.
    """

    def __init__(self, env: RuntimeEnv | None = None, handle_signals: bool = True, log_every: int | None = None) -> None:
        self.env = env or read_env()
        self.config = self.env.checkpoint
        self.handle_signals = handle_signals
        self.log_every = log_every or self.env.log_every
        self.preemption = PreemptionWatcher()
        self.metrics = MetricsEmitter(False, self.env.job_id, self.log_every)
        self.prepared: Prepared | None = None
        self.last_saved_step: int | None = None
        self.last_save_started = time.monotonic()
        self._last_step = -1
        self._rng_to_restore: dict[str, Any] | None = None
        self._stopping = False
        self._cleaned = False
        if handle_signals:  # now: SIGUSR1's default action would end the process before the Trainer starts
            self.preemption.install()

    @property
    def state_key(self) -> str:
        return "JetstreamCallback"

    # ---- set up ------------------------------------------------------------------------
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if stage != "fit":
            return
        self.metrics.enabled = trainer.global_rank == 0
        env = getattr(trainer.strategy, "cluster_environment", None) or getattr(
            getattr(trainer, "_accelerator_connector", None), "cluster_environment", None)
        if isinstance(env, SLURMEnvironment) and env.auto_requeue:
            raise LightningConflict(
                "Lightning's SLURMEnvironment has auto_requeue=True: it would requeue the job on SIGUSR1 while "
                "jsctl's runtime checkpoints and exits 75 for jsctl to requeue it: exactly one may. Build the "
                "Trainer with jsruntime.lightning.prepare(...) (it passes SLURMEnvironment(auto_requeue=False)), "
                "or pass that plugin yourself")
        if self.handle_signals and not self.preemption._previous:
            self.preemption.install()  # before Lightning's handlers: a signal during setup is remembered

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        # Lightning registered its SIGTERM handler (and SIGUSR1 with auto-requeue) just before this hook:
        # take both over again so that a preemption signal only sets jsruntime's flag.
        if self.handle_signals:
            self.preemption.uninstall()
            self.preemption.install()
        self._last_step = trainer.global_step
        resumed = trainer.ckpt_path
        if self.config.enabled and resumed is None and trainer.global_step == 0:
            latest = cdir.latest_complete(self.config.directory)  # type: ignore[arg-type]
            if latest is not None:
                raise ConfigError(
                    f"{self.config.directory} holds a complete checkpoint (step {latest[0]}) but trainer.fit was "
                    "called without ckpt_path: the job would start again from step 0. Pass "
                    "ckpt_path=jsruntime.lightning.resume_path()")
        prepared = self.prepared
        self.metrics.event(
            "start", rank=trainer.global_rank, world_size=trainer.world_size,
            restart_count=self.env.dist.restart_count, framework="lightning", lightning=pl.__version__,
            parallelism=type(trainer.strategy).__name__, device=str(trainer.strategy.root_device),
            checkpoint_dir=self.config.directory, checkpoint_mode="sync" if self.config.enabled else None,
            cluster_environment=type(getattr(trainer.strategy, "cluster_environment", None)).__name__,
            requeue=REQUEUE,
            conflicts=[str(c) for c in prepared.conflicts] if prepared and prepared.conflicts else None,
        )
        if prepared:
            for c in prepared.conflicts:
                self.metrics.event("conflict", setting=c.setting, planned=c.planned, yours=c.yours)
        if resumed is not None:
            self.last_saved_step = trainer.global_step
            self.metrics.event("restore", step=trainer.global_step, restart_count=self.env.dist.restart_count,
                               world_size=trainer.world_size, path=str(resumed))
        else:
            self.metrics.event("fresh_start", step=0, restart_count=self.env.dist.restart_count)
        self.last_save_started = time.monotonic()
        self.metrics.start_window(time.perf_counter())

    # ---- random number generators in the checkpoint ---------------------------------------
    def state_dict(self) -> dict[str, Any]:
        mine = _rng_capture()
        if torch.distributed.is_available() and torch.distributed.is_initialized() \
                and torch.distributed.get_world_size() > 1:
            states: list[Any] = [None] * torch.distributed.get_world_size()
            torch.distributed.all_gather_object(states, mine)
        else:
            states = [mine]
        return {"rng": states}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        states = state_dict.get("rng") or []
        rank = self.env.dist.rank
        if len(states) == self.env.dist.world_size and rank < len(states):
            self._rng_to_restore = states[rank]
        else:
            log.warning("jsruntime.lightning: the checkpoint holds random number generators for %d ranks, this run "
                        "has %d: they are not restored", len(states), self.env.dist.world_size)

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any,
                             batch_idx: int) -> None:
        if self._rng_to_restore is not None:
            _rng_restore(self._rng_to_restore)
            self._rng_to_restore = None

    # ---- every step ----------------------------------------------------------------------
    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        step = trainer.global_step
        if step == self._last_step:  # inside a gradient accumulation window: not an optimizer step
            return
        self._last_step = step
        now = time.perf_counter()
        loss = outputs.get("loss") if isinstance(outputs, Mapping) else outputs
        lr = None
        if trainer.optimizers:
            lr = trainer.optimizers[0].param_groups[0].get("lr")
        extra = {}
        for name, value in trainer.callback_metrics.items():
            v = _scalar(value)
            if v is not None and math.isfinite(v) and name not in ("loss", "lr"):
                extra[name] = v
        samples = _batch_size(batch)
        self.metrics.step(step, now, trainer.world_size, loss=_scalar(loss), lr=_scalar(lr),
                          samples=samples * trainer.accumulate_grad_batches if samples else None, extra=extra)

        cfg = self.config
        time_due = bool(cfg.enabled and cfg.every_seconds is not None and trainer.global_rank == 0
                        and time.monotonic() - self.last_save_started >= cfg.every_seconds)
        flags = [float(self.preemption.requested), float(time_due)]
        if trainer.world_size > 1 and torch.distributed.is_available() and torch.distributed.is_initialized():
            t = torch.tensor(flags, device=trainer.strategy.root_device)
            torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)  # every rank acts on the same facts
            flags = t.tolist()
        preempt, time_due_any = (f > 0 for f in flags)
        if preempt:
            self._stop_for_preemption(trainer, step)
        due = time_due_any or (cfg.every_steps is not None and step % cfg.every_steps == 0)
        if cfg.enabled and due and self.last_saved_step != step:
            self.save(trainer, step)

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        step = trainer.global_step
        if self.config.enabled and step > 0 and self.last_saved_step != step:
            self.save(trainer, step)
        self.metrics.event("finish", step=step)

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if stage == "fit":
            self.preemption.uninstall()

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        self.preemption.uninstall()

    # ---- saving ------------------------------------------------------------------------
    def save(self, trainer: pl.Trainer, step: int) -> Path:
        """Checkpoint now (every rank calls it at the same step): ``step-N/lightning.ckpt`` with ``COMPLETE``."""
        if not self.config.enabled:
            raise RuntimeError("checkpoints are disabled: JETSTREAM_CHECKPOINT_DIR is not set")
        t0 = time.monotonic()
        self.last_save_started = t0
        root = Path(self.config.directory)  # type: ignore[arg-type]
        rank0 = trainer.global_rank == 0
        if rank0:
            root.mkdir(parents=True, exist_ok=True)
            if not self._cleaned:
                cdir.clean_leftovers(root)
                self._cleaned = True
        nonce = trainer.strategy.broadcast(uuid.uuid4().hex[:8] if rank0 else None, src=0)
        tmp = cdir.tmp_dir(root, step, nonce)
        trainer.save_checkpoint(tmp / CKPT_FILE, weights_only=False)  # every rank; Lightning writes (rank 0, or shards) and waits
        final = root / cdir.step_dir_name(step)
        deleted: list[int] = []
        if rank0:
            final = cdir.finalize(tmp, step, {"format": FORMAT, "file": CKPT_FILE, "world_size": trainer.world_size,
                                              "lightning": pl.__version__})
            deleted = cdir.apply_retention(root, self.config.keep_latest)
        trainer.strategy.barrier("jsruntime.lightning.save")  # no rank goes on before it is published
        self.last_saved_step = step
        elapsed = round(time.monotonic() - t0, 4)
        self.metrics.emit("checkpoint", step=step, mode="sync", blocking_s=elapsed, write_s=elapsed,
                          path=str(final), deleted_steps=deleted or None)
        return final

    def _stop_for_preemption(self, trainer: pl.Trainer, step: int) -> None:
        self.metrics.event("preempt", step=step, signal=self.preemption.signal_name or "peer rank")
        if self.config.enabled and self.last_saved_step != step:
            self.save(trainer, step)
        status = self.env.status_file
        if status and self.env.dist.local_rank == 0:
            with contextlib.suppress(OSError), open(status, "w") as fh:
                fh.write(f"preempted step={step} exit={REQUEUE_EXIT_CODE}\n")
        self.metrics.event("exit", step=step, exit_code=REQUEUE_EXIT_CODE, reason="preempted")
        self._stopping = True
        sys.stdout.flush()
        sys.stderr.flush()
        raise SystemExit(REQUEUE_EXIT_CODE)  # through Lightning's teardown, out of trainer.fit
