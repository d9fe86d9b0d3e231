"""A Hugging Face ``transformers.Trainer`` that follows the plan: three lines in a real script.

    args = jsruntime.hf.prepare(TrainingArguments(...))        # the plan's directory, frequency, strategy
    trainer = Trainer(..., args=args, callbacks=[jsruntime.hf.JetstreamCallback()])
    trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)

:func:`prepare` maps what jsctl put into the job's environment onto the ``TrainingArguments``:

* ``output_dir``            <- JETSTREAM_CHECKPOINT_DIR (the checkpoint output's mount)
* ``save_strategy/steps``   <- JETSTREAM_SAVE_FREQUENCY (``50steps``; a time interval is kept by the callback)
* ``save_total_limit``      <- None: the callback keeps JETSTREAM_KEEP_LATEST complete checkpoints itself
  (the Trainer rotates *before* a new checkpoint is complete; with keep_latest 1 a crash then would leave none)
* ``logging_steps``         <- JETSTREAM_LOG_EVERY (when set)
* ``resume_from_checkpoint`` <- the newest *complete* ``checkpoint-N`` in that directory (None on a fresh start)
* ``fsdp``/``fsdp_config``, ``deepspeed``, ``bf16``/``fp16``, ``activation_checkpointing``,
  ``per_device_train_batch_size``, ``gradient_accumulation_steps`` <- JETSTREAM_STRATEGY (and
  JETSTREAM_DEEPSPEED_CONFIG), only what the plan states
* ``enable_jit_checkpoint`` <- False (jsruntime owns SIGTERM/SIGUSR1)

A value the script set explicitly (different from the field's default) that differs from the plan is a
*conflict*: it is logged as a warning naming both values; ``prefer="plan"`` (default) then uses the plan's,
``prefer="script"`` keeps the script's, ``prefer="error"`` raises :class:`ConfigError`.

:class:`JetstreamCallback` marks each checkpoint complete (a ``COMPLETE`` file written after every rank
saved), keeps ``keep_latest``, saves on a time interval, turns SIGUSR1/SIGTERM into "save at the end of
this step, exit 75" (``REQUEUE_EXIT_CODE``) and prints the Trainer's logs as jsruntime metric lines, which
``jsctl metrics`` reads.  transformers is imported only by this module.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from . import checkpoint_dir as cdir
from .env import RuntimeEnv, read_env
from .frameworks import Conflict, agree, barrier, destroy_at_exit, exit_preempted, report
from .metrics import MetricsEmitter, peak_memory
from .preemption import PreemptionWatcher

log = logging.getLogger("jsruntime")

PREFIX = "checkpoint"  # = transformers.trainer_utils.PREFIX_CHECKPOINT_DIR
_CHECKPOINT = re.compile(rf"^{PREFIX}-(\d+)$")
_SHARDING = {"FULL_SHARD": True, "SHARD_GRAD_OP": False, "NO_SHARD": False, "HYBRID_SHARD": True}


# ---- checkpoints in a Trainer's output directory -------------------------------------------------
def complete_checkpoints(root: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """``checkpoint-N`` directories holding jsruntime's ``COMPLETE`` marker, lowest step first."""
    found = []
    try:
        entries = list(os.scandir(root))
    except (FileNotFoundError, NotADirectoryError):
        return []
    for entry in entries:
        m = _CHECKPOINT.match(entry.name)
        if m and entry.is_dir() and (Path(entry.path) / cdir.MARKER).is_file():
            found.append((int(m.group(1)), Path(entry.path)))
    return sorted(found)


def latest_checkpoint(root: str | os.PathLike[str] | None = None) -> str | None:
    """The newest complete checkpoint under ``root`` (JETSTREAM_CHECKPOINT_DIR by default), or None."""
    root = root or os.environ.get("JETSTREAM_CHECKPOINT_DIR")
    found = complete_checkpoints(root) if root else []
    return str(found[-1][1]) if found else None


def mark_complete(path: Path, step: int, world_size: int) -> None:
    """Written last, after every rank saved: only now does ``path`` count as a checkpoint."""
    info = {"step": step, "time": time.time(), "world_size": world_size, "writer": "jsruntime.hf"}
    cdir.write_file_durably(path / cdir.MARKER, (json.dumps(info, sort_keys=True) + "\n").encode())
    cdir.fsync_dir(path)


def keep_latest(root: str | os.PathLike[str], keep: int | None) -> list[int]:
    """Delete all but the newest ``keep`` complete checkpoints and every incomplete ``checkpoint-N`` older
    than the newest complete one (a save a crash interrupted); never the newest complete one."""
    found = complete_checkpoints(root)
    if not found:
        return []
    newest = found[-1][0]
    victims = [(s, p) for s, p in found[:-max(1, keep)]] if keep else []
    for entry in os.scandir(root):
        m = _CHECKPOINT.match(entry.name)
        if m and int(m.group(1)) < newest and entry.is_dir() and not (Path(entry.path) / cdir.MARKER).exists():
            victims.append((int(m.group(1)), Path(entry.path)))
    for step, path in victims:
        trash = path.parent / f"{cdir.TRASH_PREFIX}{step:08d}-hf"
        os.rename(path, trash)  # one atomic step: never a half-deleted checkpoint-N
        shutil.rmtree(trash, ignore_errors=True)
    if victims:
        cdir.fsync_dir(root)
    return sorted(s for s, _ in victims)


# ---- the plan -> TrainingArguments ----------------------------------------------------------------
@dataclass(frozen=True)
class Planned:
    """One TrainingArguments field as the plan wants it, and where in the plan that comes from."""

    field: str
    value: Any
    why: str


def _raw_strategy(environ: Mapping[str, str]) -> dict:
    raw = environ.get("JETSTREAM_STRATEGY")
    try:
        data = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def planned_arguments(env: RuntimeEnv, environ: Mapping[str, str]) -> list[Planned]:
    """What the plan says about the Trainer's arguments (pure: no transformers needed)."""
    out: list[Planned] = []
    ck = env.checkpoint
    if ck.directory:
        out.append(Planned("output_dir", ck.directory, "JETSTREAM_CHECKPOINT_DIR, the checkpoint output's mount"))
        freq = environ.get("JETSTREAM_SAVE_FREQUENCY") or f"{ck.every_seconds:g}s (jsruntime's default)"
        if ck.every_steps is not None:
            out.append(Planned("save_strategy", "steps", f"save_frequency {freq}"))
            out.append(Planned("save_steps", ck.every_steps, f"save_frequency {freq}"))
        else:  # a time interval: JetstreamCallback asks for the saves
            out.append(Planned("save_strategy", "no", f"save_frequency {freq}: JetstreamCallback saves on time"))
        out.append(Planned("save_total_limit", None,
                           f"keep_latest {ck.keep_latest}: JetstreamCallback deletes only after a newer checkpoint "
                           "is complete" if ck.keep_latest else "no keep_latest in the plan"))
        out.append(Planned("enable_jit_checkpoint", False, "jsruntime saves on SIGTERM/SIGUSR1 and exits 75"))
        latest = latest_checkpoint(ck.directory)
        if latest:
            out.append(Planned("resume_from_checkpoint", latest, "the newest complete checkpoint of this job"))
    if environ.get("JETSTREAM_LOG_EVERY"):
        out.append(Planned("logging_steps", env.log_every, f"JETSTREAM_LOG_EVERY={env.log_every}"))
    out.extend(_strategy_arguments(env, _raw_strategy(environ)))
    return out


def _strategy_arguments(env: RuntimeEnv, raw: dict) -> list[Planned]:
    s = env.strategy
    if not s.explicit:
        return []
    why = f"strategy.parallelism {s.parallelism}"
    out: list[Planned] = []
    config = raw.get("config") if isinstance(raw.get("config"), dict) else {}
    fsdp_raw = raw.get("fsdp") if isinstance(raw.get("fsdp"), dict) else {}
    if s.parallelism == "fsdp":
        fc: dict[str, Any] = {"version": 2, "reshard_after_forward": s.resharding, "cpu_offload": s.cpu_offload}
        if s.activation_checkpointing:
            fc["activation_checkpointing"] = True
        if s.auto_wrap.policy == "module_classes":
            fc["auto_wrap_policy"] = "TRANSFORMER_BASED_WRAP"
            fc["transformer_layer_cls_to_wrap"] = list(s.auto_wrap.module_classes)
        elif s.auto_wrap.policy == "size":
            fc["auto_wrap_policy"] = "SIZE_BASED_WRAP"
            fc["min_num_params"] = s.auto_wrap.min_params
        out.append(Planned("fsdp", True, f"{why} {s.sharding_strategy}"))
        for key, value in fc.items():
            out.append(Planned(f"fsdp_config.{key}", value, f"{why} {s.sharding_strategy}"))
        if s.sharding_strategy == "HYBRID_SHARD":
            log.warning("jsruntime.hf: HYBRID_SHARD's mesh %s is not expressible in TrainingArguments; the Trainer "
                        "shards over all ranks (FULL_SHARD)", s.mesh_shape)
    else:
        out.append(Planned("fsdp", None, why))
    if s.parallelism == "deepspeed":
        ds: Any = s.deepspeed_config or (json.loads(s.deepspeed_json) if s.deepspeed_json else None)
        if ds is not None:
            out.append(Planned("deepspeed", ds, f"{why}: the generated DeepSpeed config"))
    else:
        out.append(Planned("deepspeed", None, why))
    precision = None
    if "mixed_precision" in config or ("mixed_precision" in fsdp_raw and s.parallelism == "fsdp"):
        precision = s.mixed_precision
    if precision is not None:
        pwhy = f"strategy mixed_precision {precision}"
        out.append(Planned("bf16", precision == "bf16", pwhy))
        out.append(Planned("fp16", precision == "fp16", pwhy))
    if s.activation_checkpointing and s.parallelism != "fsdp":
        out.append(Planned("activation_checkpointing", True, "strategy activation_checkpointing"))
    batch = dict(s.batch)
    if "micro_batch_size" in batch:
        out.append(Planned("per_device_train_batch_size", batch["micro_batch_size"], "strategy batch.micro_batch_size"))
    if "gradient_accumulation_steps" in batch:
        out.append(Planned("gradient_accumulation_steps", batch["gradient_accumulation_steps"],
                           "strategy batch.gradient_accumulation_steps"))
    return out


def _defaults(args: Any) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(args):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            out[f.name] = f.default_factory()  # type: ignore[misc]
    return out


def _norm(value: Any) -> Any:
    value = getattr(value, "value", value)  # enums (SaveStrategy.STEPS) as their text
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _same(field: str, a: Any, b: Any) -> bool:
    if field in ("output_dir", "resume_from_checkpoint") and a is not None and b is not None:
        return os.path.normpath(os.path.abspath(str(a))) == os.path.normpath(os.path.abspath(str(b)))
    if field == "fsdp":
        return bool(a) == bool(b)
    return _norm(a) == _norm(b)


def resolve(args: Any, planned: list[Planned]) -> tuple[dict[str, Any], list[Conflict]]:
    """The changes to make to ``args`` and the conflicts with what the script set explicitly."""
    defaults = _defaults(args)
    changes: dict[str, Any] = {}
    conflicts: list[Conflict] = []
    fsdp_config = dict(args.fsdp_config) if isinstance(getattr(args, "fsdp_config", None), dict) else {}
    fsdp_touched = False
    for p in planned:
        if p.field.startswith("fsdp_config."):
            key = p.field.split(".", 1)[1]
            current = fsdp_config.get(key)
            if key in fsdp_config and args.fsdp and not _same(key, current, p.value):
                conflicts.append(Conflict(p.field, current, p.value, p.why))
            fsdp_config[key] = p.value
            fsdp_touched = True
            continue
        current = getattr(args, p.field)
        if _same(p.field, current, p.value):
            continue
        explicit = not _same(p.field, current, defaults.get(p.field))
        if explicit:
            conflicts.append(Conflict(p.field, _norm(current), _norm(p.value), p.why))
        changes[p.field] = p.value
    if fsdp_touched:
        changes["fsdp_config"] = fsdp_config
    elif changes.get("fsdp", "absent") is None and args.fsdp:
        changes["fsdp_config"] = None
    return changes, conflicts


def prepare(args: Any, prefer: str = "plan", env: RuntimeEnv | None = None,
            environ: Mapping[str, str] | None = None) -> Any:
    """A copy of ``args`` (``transformers.TrainingArguments``) that follows the plan; see the module doc.

    Call it before building the Trainer (and the model, for DeepSpeed ZeRO-3).  Conflicts with values the
    script set explicitly are logged as warnings naming both values.
    """
    environ = os.environ if environ is None else environ
    env = env or read_env(environ)
    changes, conflicts = resolve(args, planned_arguments(env, environ))
    report(conflicts, "hf", prefer, env.dist.rank)
    if prefer == "script":
        explicit = {c.field.split(".")[0] for c in conflicts}
        changes = {k: v for k, v in changes.items() if k not in explicit}
    prepared = dataclasses.replace(args, **changes) if changes else args
    prepared._jsruntime_prepared = True  # JetstreamCallback checks that the plan reached the arguments
    return prepared


# ---- the callback -------------------------------------------------------------------------------
class JetstreamCallback(TrainerCallback):
    """Complete-marked checkpoints, ``keep_latest``, time-based saves, the preemption path, metric lines."""

    def __init__(self, handle_signals: bool = True, env: RuntimeEnv | None = None) -> None:
        self.env = env or read_env()
        self.rank = self.env.dist.rank
        self.world_size = self.env.dist.world_size
        self.metrics = MetricsEmitter(self.rank == 0, self.env.job_id)
        self.preemption = PreemptionWatcher()
        self.handle_signals = handle_signals
        self.preempting = False
        self._last_save = time.monotonic()
        self._hook_t = time.perf_counter()
        self._log_t: float | None = None
        self._log_step = 0
        self._log_tokens = 0
        self._start_step = 0

    # -- setup
    def on_init_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.handle_signals:
            self.preemption.install()  # the Trainer is built in the main thread
        if self.env.checkpoint.directory and not getattr(args, "_jsruntime_prepared", False):
            log.warning("jsruntime.hf: TrainingArguments were not passed through jsruntime.hf.prepare(): the "
                        "checkpoint directory, frequency and strategy may not follow the plan")

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        destroy_at_exit()
        ck = self.env.checkpoint
        parallelism = "fsdp" if args.fsdp else "deepspeed" if args.deepspeed else (
            "ddp" if self.world_size > 1 else "none")
        self.metrics.event("start", rank=self.rank, world_size=self.world_size, framework="transformers",
                           restart_count=self.env.dist.restart_count, parallelism=parallelism,
                           device=str(args.device), checkpoint_dir=args.output_dir if ck.directory else None,
                           checkpoint_mode="sync" if ck.directory else None)
        self._start_step = state.global_step
        if state.global_step > 0:
            self.metrics.event("restore", step=state.global_step, restart_count=self.env.dist.restart_count,
                               world_size=self.world_size, parallelism=parallelism)
            if 0 < state.max_steps <= state.global_step:
                # transformers' loop runs an optimizer step before it first compares with max_steps
                log.warning("jsruntime.hf: resumed at step %d of max_steps %d: the Trainer still runs one more "
                            "optimizer step (transformers does not check max_steps before the first step)",
                            state.global_step, state.max_steps)
        else:
            latest = latest_checkpoint(args.output_dir) if ck.directory else None
            if latest:
                log.warning("jsruntime.hf: %s holds %s but training starts at step 0: pass "
                            "resume_from_checkpoint=args.resume_from_checkpoint to trainer.train()",
                            args.output_dir, latest)
            self.metrics.event("fresh_start", step=0, restart_count=self.env.dist.restart_count)
        self._last_save = time.monotonic()
        self._log_t, self._log_step = time.perf_counter(), state.global_step
        self._log_tokens = int(getattr(state, "num_input_tokens_seen", 0) or 0)

    # -- every optimizer step
    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        every_s = self.env.checkpoint.every_seconds if self.env.checkpoint.directory else None
        time_due = every_s is not None and self.rank == 0 and time.monotonic() - self._last_save >= every_s
        preempt, due = (f > 0 for f in agree([float(self.preemption.requested), float(time_due)]))
        if due or (every_s is not None and state.global_step >= state.max_steps):
            control.should_save = True
        if preempt:
            self.preempting = True
            self.metrics.event("preempt", step=state.global_step,
                               signal=self.preemption.signal_name or "peer rank")
            control.should_save = True
            control.should_training_stop = True
        self._hook_t = time.perf_counter()

    def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any) -> None:
        logs = logs or {}
        now = time.perf_counter()
        if "loss" not in logs:
            if "train_runtime" in logs:  # the end-of-training summary
                self.metrics.event("trainer_summary", step=state.global_step,
                                   **{k: v for k, v in logs.items() if isinstance(v, (int, float))})
            return
        steps = state.global_step - self._log_step
        fields: dict[str, Any] = {"step": state.global_step, "loss": logs.get("loss"),
                                  "lr": logs.get("learning_rate"), "grad_norm": logs.get("grad_norm"),
                                  "epoch": logs.get("epoch")}
        if steps > 0 and self._log_t is not None and now > self._log_t:
            elapsed = now - self._log_t
            fields["step_time_s"] = round(elapsed / steps, 6)
            samples = args.per_device_train_batch_size * args.gradient_accumulation_steps * self.world_size
            fields["samples_per_s"] = round(samples * steps / elapsed, 3)
            tokens = int(getattr(state, "num_input_tokens_seen", 0) or 0)
            if tokens > self._log_tokens:
                fields["tokens_per_s"] = round((tokens - self._log_tokens) / elapsed, 3)
            self._log_tokens = tokens
        fields["peak_mem_bytes"], fields["mem_kind"] = peak_memory()
        self.metrics.emit("metrics", **fields)
        self._log_t, self._log_step = now, state.global_step

    # -- a checkpoint the Trainer just wrote (every rank)
    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        step = state.global_step
        path = Path(args.output_dir) / f"{PREFIX}-{step}"
        barrier()  # every rank wrote its part (rng_state_<rank>.pth) before the marker
        if args.should_save and path.is_dir():
            mark_complete(path, step, self.world_size)
            deleted = keep_latest(args.output_dir, self.env.checkpoint.keep_latest)
            if deleted:
                self.metrics.event("retention", deleted=deleted, keep_latest=self.env.checkpoint.keep_latest)
        seconds = round(time.perf_counter() - self._hook_t, 4)
        self.metrics.emit("checkpoint", step=step, mode="sync", blocking_s=seconds, write_s=seconds, path=str(path))
        self._last_save = time.monotonic()
        if self.preempting:
            exit_preempted(self.env, self.metrics, step)
        self._log_t = time.perf_counter()  # the save is not a step's time

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.metrics.event("finish", step=state.global_step)
        self.preemption.uninstall()
