"""An ``accelerate.Accelerator`` training loop that follows the plan.

    accelerator = Accelerator(**jsruntime.accelerate.accelerator_kwargs())   # the planned strategy
    js = jsruntime.accelerate.prepare(accelerator)                            # checkpoints, preemption, metrics
    model, opt, dl, sched = accelerator.prepare(model, opt, dl, sched)
    start = js.resume()                                                       # steps already done (0 when fresh)
    for step in range(start, total):
        ...                                                                   # skip `start` batches of the epoch
        js.step(step + 1, loss=loss)                                          # saves on schedule; exits 75 on SIGUSR1
    js.finish()

:func:`accelerator_kwargs` turns JETSTREAM_STRATEGY into ``Accelerator`` arguments (``mixed_precision``,
``gradient_accumulation_steps``, an FSDP2 ``fsdp_plugin``, a ``deepspeed_plugin`` from the generated
config).  :func:`prepare` compares the Accelerator it is given with the plan and reports every
difference (warning naming both values; ``prefer="error"`` raises) - an Accelerator cannot change after
it is built.

Checkpoints are ``accelerator.save_state`` directories in JETSTREAM_CHECKPOINT_DIR with jsruntime's
layout (:mod:`jsruntime.checkpoint_dir`): written under a temporary name, marked ``COMPLETE`` after every
rank saved, renamed to ``step-N``; ``keep_latest`` deletes only after a newer one is complete.  Saves
happen every JETSTREAM_SAVE_FREQUENCY (steps or a time interval), at ``finish()``, and at the end of the
step in which SIGUSR1/SIGTERM arrived (then the process exits with ``REQUEUE_EXIT_CODE``, 75).
accelerate is imported only by this module.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import torch

from . import checkpoint_dir as cdir
from .env import RuntimeEnv, read_env
from .frameworks import Conflict, agree, barrier, destroy_at_exit, exit_preempted, report
from .metrics import MetricsEmitter
from .preemption import PreemptionWatcher

_NONCE = "accelerate"  # the same on every rank; leftovers of a crashed attempt are removed by resume()


def accelerator_kwargs(env: RuntimeEnv | None = None) -> dict[str, Any]:
    """``Accelerator(**accelerator_kwargs())``: what the plan says about the strategy (only what it states)."""
    env = env or read_env()
    s = env.strategy
    out: dict[str, Any] = {}
    if not s.explicit:
        return out
    raw = json.loads(os.environ.get("JETSTREAM_STRATEGY") or "{}")
    config = raw.get("config") if isinstance(raw.get("config"), dict) else {}
    if "mixed_precision" in config or (s.parallelism == "fsdp" and "mixed_precision" in (raw.get("fsdp") or {})):
        out["mixed_precision"] = {"fp32": "no"}.get(s.mixed_precision, s.mixed_precision)
    batch = dict(s.batch)
    if "gradient_accumulation_steps" in batch:
        out["gradient_accumulation_steps"] = batch["gradient_accumulation_steps"]
    if s.parallelism == "fsdp":
        from accelerate.utils import FullyShardedDataParallelPlugin

        kw: dict[str, Any] = {"fsdp_version": 2, "reshard_after_forward": s.resharding, "cpu_offload": s.cpu_offload,
                              "activation_checkpointing": s.activation_checkpointing,
                              "state_dict_type": "SHARDED_STATE_DICT"}
        if s.auto_wrap.policy == "module_classes":
            kw["auto_wrap_policy"] = "transformer_based_wrap"
            kw["transformer_cls_names_to_wrap"] = list(s.auto_wrap.module_classes)
        elif s.auto_wrap.policy == "size":
            kw["auto_wrap_policy"] = "size_based_wrap"
            kw["min_num_params"] = s.auto_wrap.min_params
        out["fsdp_plugin"] = FullyShardedDataParallelPlugin(**kw)
    elif s.parallelism == "deepspeed":
        from accelerate.utils import DeepSpeedPlugin

        config_path = s.deepspeed_config
        ds = config_path or (json.loads(s.deepspeed_json) if s.deepspeed_json else None)
        if ds is not None:
            out["deepspeed_plugin"] = DeepSpeedPlugin(hf_ds_config=ds)
    return out


def _parallelism(accelerator: Any) -> str:
    kind = str(getattr(accelerator.distributed_type, "value", accelerator.distributed_type)).upper()
    if kind == "FSDP":
        return "fsdp"
    if kind == "DEEPSPEED":
        return "deepspeed"
    return "ddp" if accelerator.num_processes > 1 else "none"


def conflicts(accelerator: Any, env: RuntimeEnv) -> list[Conflict]:
    """Where the Accelerator the script built differs from the plan."""
    s = env.strategy
    out: list[Conflict] = []
    if not s.explicit:
        return out
    have = _parallelism(accelerator)
    want = s.parallelism if s.parallelism != "ddp" or accelerator.num_processes > 1 else "none"
    if have != want:
        out.append(Conflict("distributed_type", have, want, f"strategy.parallelism {s.parallelism}; build the "
                            "Accelerator with **jsruntime.accelerate.accelerator_kwargs()"))
    planned = accelerator_kwargs_light(env)
    mp = str(getattr(accelerator, "mixed_precision", "no"))
    if "mixed_precision" in planned and mp != planned["mixed_precision"]:
        out.append(Conflict("mixed_precision", mp, planned["mixed_precision"], "strategy mixed_precision"))
    ga = getattr(accelerator, "gradient_accumulation_steps", 1)
    if "gradient_accumulation_steps" in planned and ga != planned["gradient_accumulation_steps"]:
        out.append(Conflict("gradient_accumulation_steps", ga, planned["gradient_accumulation_steps"],
                            "strategy batch.gradient_accumulation_steps"))
    return out


def accelerator_kwargs_light(env: RuntimeEnv) -> dict[str, Any]:
    """accelerator_kwargs without building plugins (for comparisons)."""
    s = env.strategy
    raw = json.loads(os.environ.get("JETSTREAM_STRATEGY") or "{}")
    config = raw.get("config") if isinstance(raw.get("config"), dict) else {}
    out: dict[str, Any] = {}
    if "mixed_precision" in config or (s.parallelism == "fsdp" and "mixed_precision" in (raw.get("fsdp") or {})):
        out["mixed_precision"] = {"fp32": "no"}.get(s.mixed_precision, s.mixed_precision)
    batch = dict(s.batch)
    if "gradient_accumulation_steps" in batch:
        out["gradient_accumulation_steps"] = batch["gradient_accumulation_steps"]
    return out


class JetstreamAccelerate:
    """Checkpoints in the planned directory, the preemption path and metric lines for one Accelerate loop."""

    def __init__(self, accelerator: Any, env: RuntimeEnv, handle_signals: bool = True) -> None:
        self.accelerator = accelerator
        self.env = env
        self.rank = accelerator.process_index
        self.world_size = accelerator.num_processes
        self.metrics = MetricsEmitter(self.rank == 0, env.job_id, env.log_every)
        self.preemption = PreemptionWatcher()
        if handle_signals:
            self.preemption.install()
        ck = env.checkpoint
        self.root = ck.directory
        self.last_saved_step: int | None = None
        self._last_save = time.monotonic()
        self._last_step = 0
        self._finished = False
        self.metrics.event("start", rank=self.rank, world_size=self.world_size, framework="accelerate",
                           restart_count=env.dist.restart_count, parallelism=_parallelism(accelerator),
                           device=str(accelerator.device), checkpoint_dir=self.root,
                           checkpoint_mode="sync" if self.root else None)

    def resume(self) -> int:
        """Load the newest complete checkpoint (``accelerator.load_state``); the steps it had done, else 0.

        Call it after ``accelerator.prepare(...)`` (what that registered is what is restored)."""
        destroy_at_exit()  # end_training() does too; a script that never calls it must not abort at exit
        start = 0
        if self.root:
            if self.rank == 0:
                os.makedirs(self.root, exist_ok=True)
                cdir.clean_leftovers(self.root)
            barrier()
            found = cdir.latest_complete(self.root)
            if found is not None:
                t0 = time.monotonic()
                start, path = found
                self.accelerator.load_state(str(path))
                self.last_saved_step = start
                self.metrics.event("restore", step=start, restart_count=self.env.dist.restart_count,
                                   world_size=self.world_size, load_s=round(time.monotonic() - t0, 4),
                                   parallelism=_parallelism(self.accelerator), path=str(path))
            else:
                self.metrics.event("fresh_start", step=0, restart_count=self.env.dist.restart_count)
        self._last_step = start
        self._last_save = time.monotonic()
        self.metrics.start_window(time.perf_counter())
        return start

    def save(self, step: int) -> str:
        """``accelerator.save_state`` as a complete ``step-N`` (every rank must call it at the same step)."""
        if not self.root:
            raise RuntimeError("checkpoints are disabled: JETSTREAM_CHECKPOINT_DIR is not set")
        t0 = time.perf_counter()
        tmp = cdir.tmp_dir(self.root, step, _NONCE)
        self.accelerator.save_state(str(tmp))
        barrier()  # every rank's part (its RNG states) is written
        final = cdir.step_dir_name(step)
        if self.rank == 0:
            path = cdir.finalize(tmp, step, {"world_size": self.world_size, "writer": "jsruntime.accelerate"})
            final = str(path)
            deleted = cdir.apply_retention(self.root, self.env.checkpoint.keep_latest)
            if deleted:
                self.metrics.event("retention", deleted=deleted, keep_latest=self.env.checkpoint.keep_latest)
        barrier()  # published before anyone goes on (a preemption exit, the next load)
        seconds = round(time.perf_counter() - t0, 4)
        self.metrics.emit("checkpoint", step=step, mode="sync", blocking_s=seconds, write_s=seconds, path=final)
        self.last_saved_step = step
        self._last_save = time.monotonic()
        return final

    def step(self, step: int, loss: float | torch.Tensor | None = None, lr: float | None = None,
             samples: float | None = None, tokens: float | None = None, **metrics: Any) -> None:
        """After each optimizer step, on every rank, with the number of steps done: metric line (rank 0),
        a checkpoint when due, and on SIGUSR1/SIGTERM a checkpoint and exit 75."""
        now = time.perf_counter()
        self._last_step = step
        if isinstance(loss, torch.Tensor):
            loss = float(loss.detach().float().item())
        if lr is None:
            opts = getattr(self.accelerator, "_optimizers", [])
            lr = opts[0].param_groups[0].get("lr") if opts else None
        self.metrics.step(step, now, self.world_size, loss=loss, lr=lr, samples=samples, tokens=tokens, extra=metrics)
        ck = self.env.checkpoint
        time_due = bool(self.root and ck.every_seconds is not None and self.rank == 0
                        and time.monotonic() - self._last_save >= ck.every_seconds)
        preempt, due = (f > 0 for f in agree([float(self.preemption.requested), float(time_due)]))
        if self.root:
            due = due or (ck.every_steps is not None and step % ck.every_steps == 0)
        if preempt:
            self.metrics.event("preempt", step=step, signal=self.preemption.signal_name or "peer rank")
            if self.root and self.last_saved_step != step:
                self.save(step)
            self._finished = True
            self.accelerator.end_training()
            exit_preempted(self.env, self.metrics, step)
        if due and self.last_saved_step != step:
            self.save(step)
            self.metrics.start_window(time.perf_counter())  # the save is not a step's time

    def finish(self, save: bool = True) -> None:
        """End of training: a final checkpoint (unless this step has one), then the finish event."""
        if self._finished:
            return
        self._finished = True
        if save and self.root and self._last_step > 0 and self.last_saved_step != self._last_step:
            self.save(self._last_step)
        self.metrics.event("finish", step=self._last_step)
        self.preemption.uninstall()


def prepare(accelerator: Any, prefer: str = "plan", handle_signals: bool = True,
            env: RuntimeEnv | None = None) -> JetstreamAccelerate:
    """The plan's checkpoints, preemption path and metrics for ``accelerator``'s loop; differences between
    ``accelerator`` and the planned strategy are reported (``prefer="error"`` raises ConfigError)."""
    env = env or read_env()
    report(conflicts(accelerator, env), "accelerate", "script" if prefer == "plan" else prefer,
           accelerator.process_index)
    return JetstreamAccelerate(accelerator, env, handle_signals)
