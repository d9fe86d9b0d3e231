"""PyTorch Lightning that follows the plan: one line around the Trainer's arguments.

    import jsruntime.lightning
    trainer = L.Trainer(**jsruntime.lightning.prepare(max_steps=1000, log_every_n_steps=10))
    trainer.fit(model, data, ckpt_path=jsruntime.lightning.resume_path())

``prepare`` adds a :class:`JetstreamCallback` and maps the plan (``JETSTREAM_STRATEGY``, the torchrun
or Slurm launch) onto the Trainer's ``strategy``, ``precision``, ``devices``, ``num_nodes`` and
``plugins``.  The callback:

* checkpoints into ``JETSTREAM_CHECKPOINT_DIR`` every ``JETSTREAM_SAVE_FREQUENCY`` (steps or a time
  interval), keeping ``JETSTREAM_KEEP_LATEST``, in jsruntime's layout (``step-N/COMPLETE``, the
  Lightning file in ``step-N/lightning.ckpt``) so that ``jsctl pause``, ``plan`` and ``status`` see them;
  each rank's random number generators travel in the checkpoint, so a resumed run draws the same
  dropout masks as an uninterrupted one;
* on SIGUSR1 or SIGTERM finishes the step, saves, and exits with ``REQUEUE_EXIT_CODE`` (75): jsctl's
  provider requeues the job and ``resume_path()`` names the checkpoint to continue from;
* prints the metric lines ``jsctl metrics`` reads (loss, learning rate, throughput, and what the
  module logs with ``self.log``).

Exactly one party requeues: jsctl (exit 75).  Lightning's own Slurm handling (``SLURMEnvironment``
with ``auto_requeue=True`` saves ``hpc_ckpt_N.ckpt`` and runs ``scontrol requeue`` on SIGUSR1) is turned
off by ``prepare`` (``SLURMEnvironment(auto_requeue=False)`` when the job runs under srun without
torchrun; under torchrun Lightning uses ``TorchElasticEnvironment``, which never requeues), and a
``SLURMEnvironment(auto_requeue=True)`` the script passes itself is refused with a clear error.

Only this module and its callback (:mod:`jsruntime.lightning_callback`) import Lightning
(``lightning.pytorch``, else ``pytorch_lightning``): jsruntime's core and jsctl never do.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Mapping
from typing import Any

from . import checkpoint_dir as cdir
from .env import ConfigError, RuntimeEnv, read_env
from .lightning_callback import (
    CKPT_FILE,
    FORMAT,
    PRECISIONS,
    REQUEUE,
    ClusterEnvironment,
    Conflict,
    JetstreamCallback,
    LightningConflict,
    Prepared,
    SLURMEnvironment,
    pl,
)


# ---- the mapping (pure but for building Lightning objects) --------------------------------------
def _strategy_kind(value: Any) -> str:
    """'ddp', 'fsdp', 'deepspeed', 'single' or the name as given, for a Trainer ``strategy`` value."""
    if isinstance(value, str):
        name = value.lower()
    else:
        name = type(value).__name__.lower().removesuffix("strategy")
    for kind in ("deepspeed", "fsdp", "ddp"):
        if name.startswith(kind):
            return kind
    if name in ("auto", "single_device", "singledevice"):
        return "single"
    return name


def _precision_name(value: Any) -> str:
    text = str(value).lower()
    return {"16": "16-mixed", "16-mixed": "16-mixed", "bf16": "bf16-mixed", "bf16-mixed": "bf16-mixed",
            "32": "32-true", "32-true": "32-true", "64": "64-true", "64-true": "64-true"}.get(text, text)


def _build_strategy(env: RuntimeEnv) -> tuple[str, Any] | None:
    """(kind, Trainer ``strategy`` value) for the planned parallelism, None to leave Lightning's default."""
    s = env.strategy
    if s.parallelism == "ddp" and (s.explicit or env.dist.world_size > 1):
        return "ddp", "ddp"
    if s.parallelism == "fsdp":
        from torch.distributed.fsdp import CPUOffload, ShardingStrategy

        return "fsdp", importlib.import_module(pl.__name__ + ".strategies").FSDPStrategy(
            sharding_strategy=getattr(ShardingStrategy, s.sharding_strategy),
            cpu_offload=CPUOffload(offload_params=True) if s.cpu_offload else None,
        )
    if s.parallelism == "deepspeed":
        import json

        config: Any = s.deepspeed_config or (json.loads(s.deepspeed_json) if s.deepspeed_json else None)
        return "deepspeed", importlib.import_module(pl.__name__ + ".strategies").DeepSpeedStrategy(config=config) if config else "deepspeed"
    return None


def plan(trainer_kwargs: Mapping[str, Any] | None = None, *, env: RuntimeEnv | None = None,
         environ: Mapping[str, str] | None = None, callback: bool = True) -> Prepared:
    """The Trainer's keyword arguments for this job: ``trainer_kwargs`` with the plan's choices added.

    What the script set explicitly is kept; where it differs from the plan a :class:`Conflict` says so.
    ``environ`` (default ``os.environ``) tells how the job was launched (torchrun, Slurm).
    """
    environ = os.environ if environ is None else environ
    env = env or read_env(environ)
    kwargs = dict(trainer_kwargs or {})
    conflicts: list[Conflict] = []

    def put(name: str, planned: Any, shown: str, same: Any = None) -> None:
        if name not in kwargs or kwargs[name] is None:
            kwargs[name] = planned
            return
        mine = kwargs[name]
        if (same or (lambda a, b: a == b))(mine, planned):
            return
        conflicts.append(Conflict(name, shown, repr(mine) if not isinstance(mine, str) else mine))

    dist_env = env.dist
    if dist_env.launched and dist_env.world_size > 1:
        nodes = max(1, dist_env.world_size // max(1, dist_env.local_world_size))
        put("devices", dist_env.local_world_size, str(dist_env.local_world_size),
            lambda a, b: str(a) == str(b))
        put("num_nodes", nodes, str(nodes), lambda a, b: int(a) == int(b))
    strategy = _build_strategy(env)
    if strategy is not None:
        kind, value = strategy
        put("strategy", value, kind, lambda mine, _: _strategy_kind(mine) == kind)
    if env.strategy.explicit and env.strategy.parallelism != "deepspeed":  # DeepSpeed's JSON says its precision
        planned = PRECISIONS[env.strategy.mixed_precision]
        put("precision", planned, planned, lambda mine, p: _precision_name(mine) == p)

    # ---- who requeues: jsctl's runtime; Lightning's SLURMEnvironment must not -----------------
    plugins = kwargs.get("plugins")
    plugin_list = list(plugins) if isinstance(plugins, (list, tuple)) else ([] if plugins is None else [plugins])
    theirs = [p for p in plugin_list if isinstance(p, ClusterEnvironment)]
    torchelastic = bool(environ.get("TORCHELASTIC_RUN_ID")) and "WORLD_SIZE" in environ
    slurm = "SLURM_NTASKS" in environ and environ.get("SLURM_JOB_NAME") not in ("bash", "interactive")
    if theirs:
        for p in theirs:
            if isinstance(p, SLURMEnvironment) and p.auto_requeue:
                raise LightningConflict(
                    "the Trainer's plugins hold SLURMEnvironment(auto_requeue=True): Lightning would requeue the "
                    "job on SIGUSR1 (scontrol requeue) while jsctl's runtime checkpoints and exits 75 for jsctl to "
                    "requeue it: exactly one may. Pass SLURMEnvironment(auto_requeue=False), or leave the plugin "
                    "out and jsruntime.lightning.prepare adds it")
        where = type(theirs[0]).__name__ + ("(auto_requeue=False)" if isinstance(theirs[0], SLURMEnvironment) else "")
    elif torchelastic:
        where = "TorchElasticEnvironment (torchrun; it never requeues)"
    elif slurm:
        plugin_list.append(SLURMEnvironment(auto_requeue=False))
        kwargs["plugins"] = plugin_list
        where = "SLURMEnvironment(auto_requeue=False)"
    else:
        where = "LightningEnvironment"

    # ---- checkpoints: the callback, and no second default checkpointer -----------------------
    callbacks = list(kwargs.get("callbacks") or [])
    ModelCheckpoint = pl.callbacks.ModelCheckpoint
    if callback and not any(isinstance(c, JetstreamCallback) for c in callbacks):
        callbacks.append(JetstreamCallback(env=env))
    kwargs["callbacks"] = callbacks
    if env.checkpoint.enabled and "enable_checkpointing" not in kwargs \
            and not any(isinstance(c, ModelCheckpoint) for c in callbacks):
        kwargs["enable_checkpointing"] = False  # Lightning's default ModelCheckpoint would save every epoch elsewhere
    return Prepared(kwargs, tuple(conflicts), where)


def prepare(trainer_kwargs: Mapping[str, Any] | None = None, /, *, strict: bool = False,
            env: RuntimeEnv | None = None, **more: Any) -> dict[str, Any]:
    """``Trainer(**prepare(max_steps=..., ...))``: the keyword arguments with the plan's choices added.

    A setting the script gave that differs from the plan is kept and reported (a warning and an
    ``{"jetstream": "event", "event": "conflict"}`` line); with ``strict=True`` it is an error.
    """
    given = dict(trainer_kwargs or {}, **more)
    prepared = plan(given, env=env)
    if prepared.conflicts:
        text = "; ".join(str(c) for c in prepared.conflicts)
        if strict:
            raise LightningConflict(f"jsruntime.lightning: the Trainer's arguments differ from the plan: {text}")
        warnings.warn(f"jsruntime.lightning: {text}", stacklevel=2)
    for cb in prepared.kwargs["callbacks"]:
        if isinstance(cb, JetstreamCallback):
            cb.prepared = prepared
    return prepared.kwargs


def resume_path(env: RuntimeEnv | None = None) -> str | None:
    """The newest complete Lightning checkpoint in ``JETSTREAM_CHECKPOINT_DIR`` (for ``fit(ckpt_path=...)``),
    None when there is none (a fresh start) or checkpoints are off."""
    env = env or read_env()
    directory = env.checkpoint.directory
    if directory is None:
        return None
    found = cdir.latest_complete(directory)
    if found is None:
        return None
    step, path = found
    marker = cdir.read_marker(path)
    if marker.get("format") != FORMAT or not (path / CKPT_FILE).exists():
        raise ConfigError(f"the newest checkpoint in {directory} ({path.name}) was not written by "
                          "jsruntime.lightning: it cannot resume a Lightning Trainer")
    return str(path / CKPT_FILE)


__all__ = ["CKPT_FILE", "Conflict", "JetstreamCallback", "LightningConflict", "Prepared", "plan", "prepare",
           "resume_path", "REQUEUE"]
