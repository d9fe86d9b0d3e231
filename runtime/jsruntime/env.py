"""What jsctl puts into a job's environment, parsed into frozen dataclasses.

Pure Python: no torch import, so jsctl and the launcher can use it cheaply.
"""

from __future__ import annotations

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
DEFAULT_SAVE_EVERY_S = 1800.0  # with a checkpoint directory but no JETSTREAM_SAVE_FREQUENCY
DEFAULT_CHECKPOINT_MODE = "thread"
"""Chosen by benchmarks/checkpoint_overhead.py on 2 CPU cores: see runtime/README.md."""


class ConfigError(ValueError):
    """An environment variable jsctl (or the user) set has a value jsruntime cannot use."""


@dataclass(frozen=True)
class StrategyConfig:
    parallelism: str = "none"
    sharding_strategy: str = "FULL_SHARD"
    cpu_offload: bool = False
    mixed_precision: str = "fp32"
    explicit: bool = False  # False when JETSTREAM_STRATEGY was absent and this is the default


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
    return StrategyConfig(parallelism, sharding, offload, precision, explicit=True)


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
        strategy=parse_strategy(env.get("JETSTREAM_STRATEGY"), dist.world_size),
        checkpoint=parse_checkpoint(env),
        job_id=env.get("JOB_ID") or None,
        log_every=log_every,
        status_file=env.get("JSRUNTIME_STATUS_FILE") or None,
    )
