"""jsruntime: the in-job package jsctl injects into every job.

    import jsruntime
    rt = jsruntime.init()
    model = rt.wrap(model)
    start = rt.restore(model=model, optimizer=opt)
    for step in range(start, total):
        ...
        rt.step(step + 1, loss=loss)
    rt.finish()

``import jsruntime`` is cheap: torch is imported on first use of ``init``/``Runtime``.
"""

from __future__ import annotations

from typing import Any

from .env import (
    REQUEUE_EXIT_CODE,
    CheckpointConfig,
    ConfigError,
    RuntimeEnv,
    StrategyConfig,
    read_env,
)

__all__ = [
    "REQUEUE_EXIT_CODE",
    "CheckpointConfig",
    "ConfigError",
    "Runtime",
    "RuntimeEnv",
    "StrategyConfig",
    "StrategyError",
    "init",
    "read_env",
]


def __getattr__(name: str) -> Any:
    if name in ("init", "Runtime"):
        from . import runtime

        return getattr(runtime, name)
    if name == "StrategyError":
        from .strategy import StrategyError

        return StrategyError
    raise AttributeError(f"module 'jsruntime' has no attribute {name!r}")
