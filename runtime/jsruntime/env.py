"""What jsctl puts into a job's environment, parsed into frozen dataclasses.

Pure Python: no torch import, so jsctl and the launcher can use it cheaply.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

REQUEUE_EXIT_CODE = 75
"""Exit code of a job that stopped on a preemption signal after checkpointing (EX_TEMPFAIL)."""

PARALLELISMS = ("ddp", "fsdp", "deepspeed", "none")
SHARDING_STRATEGIES = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD")
MIXED_PRECISIONS = ("bf16", "fp16", "fp32")
CHECKPOINT_MODES = ("thread", "process", "sync")
DEEPSPEED_CONFIG_ENV = "JETSTREAM_DEEPSPEED_CONFIG"  # = jsctl.render.launch.DEEPSPEED_CONFIG_ENV
DEFAULT_SAVE_EVERY_S = 1800.0  # with a checkpoint directory but no JETSTREAM_SAVE_FREQUENCY
DEFAULT_CHECKPOINT_MODE = "thread"
"""Chosen by benchmarks/checkpoint_overhead.py on 2 CPU cores: see runtime/README.md."""


class ConfigError(ValueError):
    """An environment variable jsctl (or the user) set has a value jsruntime cannot use."""


WRAP_POLICIES = ("module_list", "module_classes", "size")


@dataclass(frozen=True)
class AutoWrap:
    """Which modules get their own FSDP unit (and activation checkpointing): the members of every
    nn.ModuleList (the default), the modules of the named classes, or by size (bottom-up, every module
    holding at least ``min_params`` parameters not already in a unit)."""

    policy: str = "module_list"
    module_classes: tuple[str, ...] = ()
    min_params: int | None = None


@dataclass(frozen=True)
class StrategyConfig:
    parallelism: str = "none"
    sharding_strategy: str = "FULL_SHARD"
    cpu_offload: bool = False
    mixed_precision: str = "fp32"
    explicit: bool = False  # False when JETSTREAM_STRATEGY was absent and this is the default
    # JETSTREAM_STRATEGY's generated `fsdp` object (jsctl plans it; the defaults are jsruntime's own)
    reduce_dtype: str = "fp32"
    reshard_after_forward: bool | None = None  # None: from sharding_strategy
    mesh_shape: tuple[int, ...] | None = None  # as planned; HYBRID_SHARD: (nodes, GPUs per node)
    auto_wrap: AutoWrap = field(default_factory=AutoWrap)
    activation_checkpointing: bool = False
    # JETSTREAM_STRATEGY's generated `deepspeed` object (JSON text) and the file JETSTREAM_DEEPSPEED_CONFIG names
    deepspeed_json: str | None = None
    deepspeed_config: str | None = None
    batch: tuple[tuple[str, int], ...] = ()  # micro_batch_size, gradient_accumulation_steps, global_batch_size

    @property
    def resharding(self) -> bool:
        """FSDP2's reshard_after_forward: False for SHARD_GRAD_OP (ZeRO-2-like), else True."""
        if self.reshard_after_forward is not None:
            return self.reshard_after_forward
        return self.sharding_strategy not in ("SHARD_GRAD_OP", "NO_SHARD")


@dataclass(frozen=True)
class CheckpointConfig:
    directory: str | None = None
    every_steps: int | None = None
    every_seconds: float | None = None
    keep_latest: int | None = None
    mode: str = DEFAULT_CHECKPOINT_MODE

    @property
    def enabled(self) -> bool:
        return self.directory is not None


@dataclass(frozen=True)
class DistEnv:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1
    master_addr: str | None = None
    master_port: int | None = None
    restart_count: int = 0
    use_agent_store: bool = False  # torchrun hosts the TCPStore (TORCHELASTIC_USE_AGENT_STORE)

    @property
    def launched(self) -> bool:
        """True when a launcher (torchrun, srun wrapper) set the rendezvous variables."""
        return self.master_addr is not None and self.master_port is not None


@dataclass(frozen=True)
class RuntimeEnv:
    dist: DistEnv = field(default_factory=DistEnv)
    strategy: StrategyConfig = field(default_factory=StrategyConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    job_id: str | None = None
    log_every: int = 1
    status_file: str | None = None  # written on preemption, read by jsruntime.launch


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|hr)?\s*$", re.IGNORECASE)
_STEPS = re.compile(r"^\s*(\d+)\s*(steps?)\s*$", re.IGNORECASE)


def parse_frequency(text: str) -> tuple[int | None, float | None]:
    """``1000steps`` -> (1000, None); ``30m``/``90s``/``2h`` -> (None, seconds)."""
    m = _STEPS.match(text)
    if m:
        n = int(m.group(1))
        if n <= 0:
            raise ConfigError(f"JETSTREAM_SAVE_FREQUENCY={text!r}: the step count must be positive")
        return n, None
    m = _DURATION.match(text)
    if m and m.group(2):
        value = float(m.group(1))
        unit = m.group(2).lower()[0]
        seconds = value * {"s": 1, "m": 60, "h": 3600}[unit]
        if seconds <= 0:
            raise ConfigError(f"JETSTREAM_SAVE_FREQUENCY={text!r}: the interval must be positive")
        return None, seconds
    raise ConfigError(
        f"JETSTREAM_SAVE_FREQUENCY={text!r}: expected a step count like '1000steps' "
        "or a duration like '90s', '30m', '2h'"
    )


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not an integer") from None


def parse_dist(env: Mapping[str, str]) -> DistEnv:
    world_size = _int(env, "WORLD_SIZE", 1)
    rank = _int(env, "RANK", 0)
    if world_size < 1 or not 0 <= rank < world_size:
        raise ConfigError(f"RANK={rank} does not fit WORLD_SIZE={world_size}")
    port = env.get("MASTER_PORT")
    return DistEnv(
        rank=rank,
        world_size=world_size,
        local_rank=_int(env, "LOCAL_RANK", 0),
        local_world_size=_int(env, "LOCAL_WORLD_SIZE", world_size),
        master_addr=env.get("MASTER_ADDR") or None,
        master_port=int(port) if port else None,
        restart_count=_int(env, "TORCHELASTIC_RESTART_COUNT", 0),
        use_agent_store=env.get("TORCHELASTIC_USE_AGENT_STORE") == "True",
    )


def parse_strategy(raw: str | None, world_size: int) -> StrategyConfig:
    if raw is None or raw.strip() == "":
        return StrategyConfig(parallelism="ddp" if world_size > 1 else "none")
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"JETSTREAM_STRATEGY is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError("JETSTREAM_STRATEGY must be a JSON object")
    parallelism = str(data.get("parallelism", "ddp" if world_size > 1 else "none")).lower()
    if parallelism not in PARALLELISMS:
        raise ConfigError(f"JETSTREAM_STRATEGY parallelism {parallelism!r}: expected one of {PARALLELISMS}")
    config = data.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError("JETSTREAM_STRATEGY config must be a JSON object")
    sharding = str(config.get("sharding_strategy", "FULL_SHARD")).upper()
    if sharding not in SHARDING_STRATEGIES:
        raise ConfigError(f"JETSTREAM_STRATEGY sharding_strategy {sharding!r}: expected one of {SHARDING_STRATEGIES}")
    precision = str(config.get("mixed_precision", "fp32")).lower()
    if precision not in MIXED_PRECISIONS:
        raise ConfigError(f"JETSTREAM_STRATEGY mixed_precision {precision!r}: expected one of {MIXED_PRECISIONS}")
    offload = config.get("cpu_offload", False)
    if not isinstance(offload, bool):
        raise ConfigError(f"JETSTREAM_STRATEGY cpu_offload must be true or false, not {offload!r}")
    base = StrategyConfig(parallelism, sharding, offload, precision, explicit=True,
                          activation_checkpointing=_bool(config, "activation_checkpointing", "config"),
                          auto_wrap=_config_wrap(config))
    extra: dict = {}
    fsdp = data.get("fsdp")
    if fsdp is not None:
        extra = _fsdp(fsdp, base)
    deepspeed = data.get("deepspeed")
    if deepspeed is not None:
        if not isinstance(deepspeed, dict):
            raise ConfigError("JETSTREAM_STRATEGY deepspeed must be a JSON object (the DeepSpeed config)")
        extra["deepspeed_json"] = json.dumps(deepspeed, sort_keys=True)
    sizes = data.get("batch") or {}
    if not isinstance(sizes, dict) or not all(isinstance(v, int) and v > 0 for v in sizes.values()):
        raise ConfigError(f"JETSTREAM_STRATEGY batch must map names to positive integers, not {sizes!r}")
    extra["batch"] = tuple(sorted(sizes.items()))
    return dataclasses.replace(base, **extra)


def _config_wrap(config: Mapping) -> AutoWrap:
    """The job file's wrap_modules / wrap_min_params (what DDP's activation checkpointing uses; FSDP's
    generated `auto_wrap` says the same)."""
    classes, min_params = config.get("wrap_modules"), config.get("wrap_min_params")
    if classes:
        names = [classes] if isinstance(classes, str) else classes
        if not isinstance(names, list) or not all(isinstance(c, str) and c for c in names):
            raise ConfigError(f"JETSTREAM_STRATEGY config.wrap_modules must name classes, not {classes!r}")
        return AutoWrap("module_classes", tuple(names))
    if min_params:
        if not isinstance(min_params, int) or min_params < 1:
            raise ConfigError(f"JETSTREAM_STRATEGY config.wrap_min_params must be a positive integer, not {min_params!r}")
        return AutoWrap("size", min_params=min_params)
    return AutoWrap()


def _bool(obj: Mapping, key: str, where: str, default: bool = False) -> bool:
    value = obj.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"JETSTREAM_STRATEGY {where}.{key} must be true or false, not {value!r}")
    return value


def _fsdp(f: object, base: StrategyConfig) -> dict:
    """The plan's fully resolved FSDP arguments (jsctl.plan.strategy_config.fsdp): they win over `config`."""
    if not isinstance(f, dict):
        raise ConfigError("JETSTREAM_STRATEGY fsdp must be a JSON object")
    out: dict = {}
    sharding = str(f.get("sharding_strategy", base.sharding_strategy)).upper()
    if sharding not in SHARDING_STRATEGIES:
        raise ConfigError(f"JETSTREAM_STRATEGY fsdp.sharding_strategy {sharding!r}: expected one of {SHARDING_STRATEGIES}")
    out["sharding_strategy"] = sharding
    if "reshard_after_forward" in f:
        out["reshard_after_forward"] = _bool(f, "reshard_after_forward", "fsdp")
    out["cpu_offload"] = _bool(f, "cpu_offload", "fsdp", base.cpu_offload)
    out["activation_checkpointing"] = _bool(f, "activation_checkpointing", "fsdp", base.activation_checkpointing)
    mp = f.get("mixed_precision", "absent")
    if mp is None:
        out["mixed_precision"], out["reduce_dtype"] = "fp32", "fp32"
    elif mp != "absent":
        if not isinstance(mp, dict):
            raise ConfigError(f"JETSTREAM_STRATEGY fsdp.mixed_precision must be an object or null, not {mp!r}")
        for key, name in (("param_dtype", "mixed_precision"), ("reduce_dtype", "reduce_dtype")):
            value = str(mp.get(key, "fp32")).lower()
            if value not in MIXED_PRECISIONS:
                raise ConfigError(f"JETSTREAM_STRATEGY fsdp.mixed_precision.{key} {value!r}: expected one of "
                                  f"{MIXED_PRECISIONS}")
            out[name] = value
    mesh = f.get("mesh")
    if mesh is not None:
        shape = mesh.get("shape") if isinstance(mesh, dict) else None
        if not isinstance(shape, list) or not shape or not all(isinstance(n, int) and n > 0 for n in shape):
            raise ConfigError(f"JETSTREAM_STRATEGY fsdp.mesh must be {{\"shape\": [positive integers]}}, not {mesh!r}")
        out["mesh_shape"] = tuple(shape)
    wrap = f.get("auto_wrap")
    if wrap is not None:
        if not isinstance(wrap, dict) or wrap.get("policy", "module_list") not in WRAP_POLICIES:
            raise ConfigError(f"JETSTREAM_STRATEGY fsdp.auto_wrap {wrap!r}: policy must be one of {WRAP_POLICIES}")
        policy = wrap.get("policy", "module_list")
        classes = wrap.get("module_classes") or []
        min_params = wrap.get("min_params")
        if policy == "module_classes" and (not isinstance(classes, list) or not classes
                                           or not all(isinstance(c, str) and c for c in classes)):
            raise ConfigError(f"JETSTREAM_STRATEGY fsdp.auto_wrap: module_classes must name classes, not {classes!r}")
        if policy == "size" and (not isinstance(min_params, int) or min_params < 1):
            raise ConfigError(f"JETSTREAM_STRATEGY fsdp.auto_wrap: min_params must be a positive integer, not {min_params!r}")
        out["auto_wrap"] = AutoWrap(policy, tuple(classes), min_params if policy == "size" else None)
    return out


def parse_checkpoint(env: Mapping[str, str]) -> CheckpointConfig:
    directory = env.get("JETSTREAM_CHECKPOINT_DIR") or None
    every_steps, every_seconds = None, None
    freq = env.get("JETSTREAM_SAVE_FREQUENCY")
    if freq:
        every_steps, every_seconds = parse_frequency(freq)
    elif directory is not None:
        every_seconds = DEFAULT_SAVE_EVERY_S
    keep = env.get("JETSTREAM_KEEP_LATEST")
    keep_latest = _int(env, "JETSTREAM_KEEP_LATEST", 0) if keep else None
    if keep_latest is not None and keep_latest < 1:
        raise ConfigError(f"JETSTREAM_KEEP_LATEST={keep!r}: must be at least 1 (a job keeps its latest checkpoint)")
    mode = (env.get("JETSTREAM_CHECKPOINT_MODE") or DEFAULT_CHECKPOINT_MODE).lower()
    if mode not in CHECKPOINT_MODES:
        raise ConfigError(f"JETSTREAM_CHECKPOINT_MODE={mode!r}: expected one of {CHECKPOINT_MODES}")
    return CheckpointConfig(directory, every_steps, every_seconds, keep_latest, mode)


def read_env(env: Mapping[str, str] | None = None) -> RuntimeEnv:
    """Parse the job environment (``os.environ`` by default)."""
    env = os.environ if env is None else env
    dist = parse_dist(env)
    log_every = _int(env, "JETSTREAM_LOG_EVERY", 1)
    if log_every < 1:
        raise ConfigError(f"JETSTREAM_LOG_EVERY={log_every}: must be at least 1")
    return RuntimeEnv(
        dist=dist,
        strategy=with_deepspeed_file(parse_strategy(env.get("JETSTREAM_STRATEGY"), dist.world_size), env),
        checkpoint=parse_checkpoint(env),
        job_id=env.get("JOB_ID") or None,
        log_every=log_every,
        status_file=env.get("JSRUNTIME_STATUS_FILE") or None,
    )


def with_deepspeed_file(strategy: StrategyConfig, env: Mapping[str, str]) -> StrategyConfig:
    """JETSTREAM_DEEPSPEED_CONFIG: the file jsctl wrote the generated DeepSpeed config to."""
    path = env.get(DEEPSPEED_CONFIG_ENV) or None
    return dataclasses.replace(strategy, deepspeed_config=path) if path else strategy
