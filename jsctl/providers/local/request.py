"""The local provider's typed request: what the supervisor runs (written as the run's run.json)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from jsctl.model.artifact import Request


@dataclass(frozen=True)
class LocalRunRequest(Request):
    job_id: str
    address: str
    workdir: str
    argv: tuple[str, ...]
    env: Mapping[str, str]  # no secret values: those reach the supervisor's environment at submit
    secrets: tuple[str, ...]
    pre_run: tuple[tuple[str, ...], ...]
    post_success: tuple[tuple[str, ...], ...]
    post_failure: tuple[tuple[str, ...], ...]
    outputs: tuple[str, ...]
    workers: int
    max_restarts: int
    restart_on_exit_codes: tuple[int, ...]
    time_limit_s: int | None
