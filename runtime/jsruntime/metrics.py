"""Metric lines: one JSON object per line on stdout, first key ``"jetstream"``.

Record kinds (``jsctl/metrics.py`` parses them):

* ``{"jetstream": "metrics", "step", "loss", "lr", "step_time_s", "compute_s", "comm_s",
  "samples_per_s", "tokens_per_s", "peak_mem_bytes", "mem_kind", "time", ...}``

``comm_s`` is the time per step (mean over the record's window) that rank 0's training thread
waited on the model's collectives (see :class:`CommTimer`); ``compute_s`` is the rest of the step
(``step_time_s - comm_s``: forward, backward, optimizer, data).  Both are absent where the
collectives are not timed (one process, ``parallelism: none``, CUDA: see docs/tuning.md).
* ``{"jetstream": "checkpoint", "step", "mode", "blocking_s", "write_s", "path", "time"}``
* ``{"jetstream": "event", "event": "start"|"restore"|"preempt"|..., "time", ...}``
"""

from __future__ import annotations

import json
import math
import resource
import sys
import threading
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


class CommTimer:
    """Time the training thread waits on the model's collectives (CPU/gloo), summed until ``take``.

    What it measures, per strategy:

    * FSDP2: the wall time of every all-gather and reduce-scatter FSDP issues (through
      ``set_custom_all_gather``/``set_custom_reduce_scatter``).  On the CPU these gloo calls are
      synchronous: the training thread is blocked for exactly that time.  An asynchronous one
      (explicit prefetch) is timed in its ``wait()``, i.e. only the part not hidden by compute.
    * DDP: a comm hook around the default all-reduce.  DDP overlaps bucket all-reduces with the
      backward pass; what the step waits for is the part after the last bucket was handed over
      (the end of the backward computation) until its all-reduce completed (gloo runs them in
      order, so every earlier bucket is done by then).  That exposed part is what is counted.

    The runtime's own control and checkpoint collectives are not counted.  On CUDA the host does
    not wait on NCCL (kernels are queued on streams), so host timing would say nothing: the timer
    is not attached there and no ``comm_s`` is reported.
    """

    def __init__(self) -> None:
        self.attached = False
        self._lock = threading.Lock()
        self._waited = 0.0

    def add(self, seconds: float) -> None:
        with self._lock:
            self._waited += max(0.0, seconds)

    def take(self) -> float:
        """Seconds waited since the last ``take``."""
        with self._lock:
            waited, self._waited = self._waited, 0.0
        return waited

    # ---- DDP ---------------------------------------------------------------------------
    def _ddp_hook(self, state, bucket):  # type: ignore[no-untyped-def]  # DDP rejects other annotations
        """The default all-reduce; for the last bucket of a backward pass (handed over when the
        backward computation ends) the time until it completes is counted: gloo runs a group's
        collectives in order, so that is when every bucket is reduced and the step can go on."""
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        issued = time.perf_counter()
        fut = default_hooks.allreduce_hook(state, bucket)
        if not bucket.is_last():
            return fut

        def done(f: Any) -> Any:
            self.add(time.perf_counter() - issued)
            return f.value()

        return fut.then(done)

    # ---- FSDP2 -------------------------------------------------------------------------
    def _fsdp_comms(self) -> tuple[Any, Any]:
        from torch.distributed.fsdp._fully_shard._fsdp_collectives import (
            DefaultAllGather,
            DefaultReduceScatter,
        )

        timer = self

        class _Work:
            def __init__(self, work: Any) -> None:
                self._work = work

            def wait(self, *args: Any, **kwargs: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return self._work.wait(*args, **kwargs)
                finally:
                    timer.add(time.perf_counter() - t0)

            def __getattr__(self, name: str) -> Any:
                return getattr(self._work, name)

        def timed(call: Any, kwargs: dict[str, Any]) -> Any:
            t0 = time.perf_counter()
            work = call(**kwargs)
            if kwargs.get("async_op") and work is not None:
                return _Work(work)
            timer.add(time.perf_counter() - t0)
            return work

        class TimedAllGather(DefaultAllGather):
            def __call__(self, output_tensor: Any, input_tensor: Any, group: Any, async_op: bool = False) -> Any:
                return timed(super().__call__, {"output_tensor": output_tensor, "input_tensor": input_tensor,
                                                "group": group, "async_op": async_op})

        class TimedReduceScatter(DefaultReduceScatter):
            def __call__(self, output_tensor: Any, input_tensor: Any, group: Any, op: Any,
                         async_op: bool = False) -> Any:
                return timed(super().__call__, {"output_tensor": output_tensor, "input_tensor": input_tensor,
                                                "group": group, "op": op, "async_op": async_op})

        return TimedAllGather(), TimedReduceScatter()

    def attach(self, model: Any, device_type: str) -> bool:
        """Time ``model``'s collectives (a DDP module or an FSDP2 module tree); False where not timed."""
        import logging

        if device_type != "cpu":
            return False
        try:
            from torch.distributed.fsdp import FSDPModule
            from torch.nn.parallel import DistributedDataParallel

            if isinstance(model, DistributedDataParallel):
                model.register_comm_hook(None, self._ddp_hook)
                self.attached = True
            else:
                units = [m for m in model.modules() if isinstance(m, FSDPModule)]
                if units:
                    all_gather, reduce_scatter = self._fsdp_comms()
                    for unit in units:
                        unit.set_custom_all_gather(all_gather)
                        unit.set_custom_reduce_scatter(reduce_scatter)
                    self.attached = True
        except (ImportError, AttributeError, RuntimeError, ValueError) as exc:  # a torch without these hooks
            logging.getLogger("jsruntime").warning("jsruntime: collectives are not timed (%s)", exc)
            self.attached = False
        return self.attached


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
        self._window_comm: float | None = None

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
        self._window_comm = None

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
        comm_s: float | None = None,
    ) -> None:
        """Account one finished step; print a record every ``log_every`` steps.

        ``samples`` and ``tokens`` are what this rank processed in the step; throughput is
        reported for the whole job (times ``world_size``).  ``comm_s`` is the time this step
        waited on collectives (``CommTimer.take``), None where they are not timed.
        """
        if self._window_start is None:
            self.start_window(now)
            return
        self._window_steps += 1
        self._window_samples += samples or 0.0
        self._window_tokens += tokens or 0.0
        if comm_s is not None:
            self._window_comm = (self._window_comm or 0.0) + comm_s
        if step % self.log_every != 0:
            return
        elapsed = now - self._window_start
        steps = self._window_steps
        fields: dict[str, Any] = {"step": step, "loss": loss, "lr": lr}
        if elapsed > 0 and steps:
            fields["step_time_s"] = round(elapsed / steps, 6)
            if self._window_comm is not None:
                comm = min(self._window_comm, elapsed) / steps
                fields["compute_s"] = round(elapsed / steps - comm, 6)
                fields["comm_s"] = round(comm, 6)
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
