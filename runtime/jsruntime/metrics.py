"""Metric lines: one JSON object per line on stdout, first key ``"jetstream"``.

Record kinds (``jsctl/metrics.py`` parses them):

* ``{"jetstream": "metrics", "step", "loss", "lr", "step_time_s", "samples_per_s",
  "tokens_per_s", "peak_mem_bytes", "mem_kind", "time", ...}``
* ``{"jetstream": "checkpoint", "step", "mode", "blocking_s", "write_s", "path", "time"}``
* ``{"jetstream": "event", "event": "start"|"restore"|"preempt"|..., "time", ...}``
"""

from __future__ import annotations

import json
import math
import resource
import sys
import time
from typing import IO, Any


def peak_memory() -> tuple[int, str]:
    """(peak bytes, kind): CUDA peak allocated when CUDA is in use, else peak RSS."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        return int(torch.cuda.max_memory_allocated()), "cuda"
    # ru_maxrss is in KiB on Linux (bytes on macOS).
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (rss if sys.platform == "darwin" else rss * 1024), "rss"


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no NaN/inf; keep the information as text
    return value


class MetricsEmitter:
    """Writes records on rank 0 only; every line is flushed at once."""

    def __init__(self, enabled: bool, job_id: str | None, log_every: int = 1, stream: IO[str] | None = None) -> None:
        self.enabled = enabled
        self.job_id = job_id
        self.log_every = max(1, log_every)
        self.stream = stream  # None: sys.stdout at the time of writing
        self._window_start: float | None = None
        self._window_steps = 0
        self._window_samples = 0.0
        self._window_tokens = 0.0

    def emit(self, kind: str, **fields: Any) -> None:
        if not self.enabled:
            return
        record: dict[str, Any] = {"jetstream": kind}
        record.update({k: _clean(v) for k, v in fields.items() if v is not None})
        if self.job_id is not None:
            record.setdefault("job", self.job_id)
        record.setdefault("time", round(time.time(), 3))
        stream = self.stream or sys.stdout
        stream.write(json.dumps(record) + "\n")
        stream.flush()

    def event(self, name: str, **fields: Any) -> None:
        self.emit("event", event=name, **fields)

    def start_window(self, now: float) -> None:
        self._window_start = now
        self._window_steps = 0
        self._window_samples = 0.0
        self._window_tokens = 0.0

    def step(
        self,
        step: int,
        now: float,
        world_size: int,
        loss: float | None = None,
        lr: float | None = None,
        samples: float | None = None,
        tokens: float | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Account one finished step; print a record every ``log_every`` steps.

        ``samples`` and ``tokens`` are what this rank processed in the step; throughput is
        reported for the whole job (times ``world_size``).
        """
        if self._window_start is None:
            self.start_window(now)
            return
        self._window_steps += 1
        self._window_samples += samples or 0.0
        self._window_tokens += tokens or 0.0
        if step % self.log_every != 0:
            return
        elapsed = now - self._window_start
        steps = self._window_steps
        fields: dict[str, Any] = {"step": step, "loss": loss, "lr": lr}
        if elapsed > 0 and steps:
            fields["step_time_s"] = round(elapsed / steps, 6)
            if samples is not None:
                fields["samples_per_s"] = round(self._window_samples * world_size / elapsed, 3)
            if tokens is not None:
                fields["tokens_per_s"] = round(self._window_tokens * world_size / elapsed, 3)
        mem, kind = peak_memory()
        fields["peak_mem_bytes"] = mem
        fields["mem_kind"] = kind
        if extra:
            for key, value in extra.items():
                fields.setdefault(key, value)
        self.emit("metrics", **fields)
        self.start_window(now)
