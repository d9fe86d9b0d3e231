"""Save and restore training state with torch.distributed.checkpoint (DCP).

Global state (model, optimizer, scheduler, ``extra``) goes through DCP, so a job can resume
with another world size or layout (DDP <-> FSDP2).  Per-rank state (RNG, data-loader
position) goes into ``rank-NNNNN.pt`` beside it.  Directory handling (temporary name,
completion marker, rename, retention) lives in :mod:`jsruntime.checkpoint_dir`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
import torch.distributed as dist
from torch import nn

from . import checkpoint_dir as cdir
from . import rng
from .env import CheckpointConfig
from .metrics import MetricsEmitter

log = logging.getLogger("jsruntime")


class Stateful(Protocol):
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...


@dataclass
class Tracked:
    """What a checkpoint holds; registered by ``Runtime.restore``."""

    model: nn.Module | None = None
    optimizers: Sequence[torch.optim.Optimizer] = ()
    scheduler: Stateful | None = None
    dataloader: Stateful | None = None  # per rank
    extra: dict[str, Any] | Stateful | None = None  # same on every rank


@dataclass
class _InFlight:
    step: int
    mode: str
    tmp: Path
    future: Future
    started: float
    blocking_s: float
    done_at: list[float] = field(default_factory=list)


def _rank_file(directory: Path, rank: int) -> Path:
    return directory / f"rank-{rank:05d}.pt"


class Checkpointer:
    def __init__(
        self,
        config: CheckpointConfig,
        rank: int,
        world_size: int,
        control: dist.ProcessGroup | None,
        group: dist.ProcessGroup | None,
        emitter: MetricsEmitter,
    ) -> None:
        assert config.directory is not None
        self.config = config
        self.root = Path(config.directory)
        self.rank = rank
        self.world_size = world_size
        self.control = control
        self.group = group
        self.emitter = emitter
        self.tracked = Tracked()
        self.in_flight: _InFlight | None = None
        self._warned_empty = False
        self.last_saved_step: int | None = None
        self.last_save_started = time.monotonic()
        nonce = [None]
        if rank == 0:
            self.root.mkdir(parents=True, exist_ok=True)
            removed = cdir.clean_leftovers(self.root)
            if removed:
                log.warning("jsruntime: removed leftovers of an interrupted save: %s", removed)
            nonce = [os.urandom(4).hex()]
        if world_size > 1:
            dist.broadcast_object_list(nonce, src=0, group=control)  # also orders the cleanup
        self.nonce: str = nonce[0]  # type: ignore[assignment]

    # ---- what is saved -------------------------------------------------------------
    def _global_state(self) -> dict[str, Any]:
        from torch.distributed.checkpoint.state_dict import (
            get_model_state_dict,
            get_state_dict,
        )

        t = self.tracked
        state: dict[str, Any] = {}
        if t.model is not None:
            if t.optimizers:
                state["model"], state["optim"] = get_state_dict(t.model, list(t.optimizers))
            else:
                state["model"] = get_model_state_dict(t.model)
        if t.scheduler is not None:
            state["scheduler"] = t.scheduler.state_dict()
        if t.extra is not None:
            state["extra"] = dict(t.extra) if isinstance(t.extra, dict) else t.extra.state_dict()
        return state

    def _rank_state(self, step: int) -> dict[str, Any]:
        state: dict[str, Any] = {"step": step, "rank": self.rank, "world_size": self.world_size, "rng": rng.capture()}
        if self.tracked.dataloader is not None:
            state["dataloader"] = self.tracked.dataloader.state_dict()
        return state

    def _write_rank_file(self, directory: Path, step: int) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        path = _rank_file(directory, self.rank)
        with open(path, "wb") as fh:
            torch.save(self._rank_state(step), fh)
            fh.flush()
            os.fsync(fh.fileno())

    # ---- saving --------------------------------------------------------------------
    def save(self, step: int, mode: str | None = None) -> None:
        """Start a checkpoint of ``step``; every rank calls this at the same step.

        ``sync`` returns when the checkpoint is complete; ``thread``/``process`` return once
        the state is staged (copied) and write in the background.  A save still in flight
        is waited for first: at most one is in flight.
        """
        import torch.distributed.checkpoint as dcp

        mode = mode or self.config.mode
        t0 = time.monotonic()
        self.wait()
        if self.last_saved_step == step:
            return
        if self.tracked.model is None:
            if not self._warned_empty:
                log.warning("jsruntime: checkpoint skipped: call rt.restore(model=..., optimizer=...) so "
                            "checkpoints know what to save")
                self._warned_empty = True
            return
        self.last_save_started = t0
        tmp = cdir.tmp_dir(self.root, step, self.nonce)
        state = self._global_state()
        self._write_rank_file(tmp, step)
        writer = dcp.FileSystemWriter(str(tmp), sync_files=True)
        if mode == "sync":
            dcp.save(state, storage_writer=writer, process_group=self.group)
            elapsed = time.monotonic() - t0
            self._publish(step, tmp, mode, blocking_s=elapsed, write_s=elapsed)
            return
        from torch.distributed.checkpoint.state_dict_saver import AsyncCheckpointerType

        kind = AsyncCheckpointerType.PROCESS if mode == "process" else AsyncCheckpointerType.THREAD
        future = dcp.async_save(state, storage_writer=writer, process_group=self.group, async_checkpointer_type=kind)
        if not isinstance(future, Future):  # AsyncSaveResponse (only with a custom stager)
            future = future.upload_completion
        flight = _InFlight(step, mode, tmp, future, t0, time.monotonic() - t0)
        future.add_done_callback(lambda _f, d=flight.done_at: d.append(time.monotonic()))
        self.in_flight = flight

    def local_status(self) -> tuple[bool, bool]:
        """(still writing here, failed here) for the save in flight, without blocking."""
        f = self.in_flight
        if f is None:
            return False, False
        if not f.future.done():
            return True, False
        return False, f.future.exception() is not None

    def complete(self, failed_anywhere: bool) -> None:
        """Publish (or drop) the save in flight; call on every rank once all ranks are done."""
        f = self.in_flight
        if f is None:
            return
        self.in_flight = None
        error = f.future.exception()
        if failed_anywhere:
            if self.rank == 0:
                cdir.discard(f.tmp)
            self.emitter.event("checkpoint_failed", step=f.step, error=repr(error) if error else "failed on another rank")
            log.error("jsruntime: checkpoint of step %d failed: %r", f.step, error)
            return
        write_s = (f.done_at[0] if f.done_at else time.monotonic()) - f.started
        self._publish(f.step, f.tmp, f.mode, blocking_s=f.blocking_s, write_s=write_s)

    def wait(self) -> None:
        """Block until the save in flight is written everywhere, then publish it."""
        f = self.in_flight
        if f is None:
            return
        try:
            f.future.result()
            failed = 0.0
        except Exception:  # reported by complete()
            failed = 1.0
        if self.world_size > 1:
            flag = torch.tensor([failed])
            dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=self.control)
            failed = float(flag.item())
        self.complete(failed > 0)

    def _publish(self, step: int, tmp: Path, mode: str, blocking_s: float, write_s: float) -> None:
        self.last_saved_step = step
        if self.rank != 0:
            return
        final = cdir.finalize(tmp, step, {"world_size": self.world_size, "mode": mode})
        deleted = cdir.apply_retention(self.root, self.config.keep_latest)
        self.emitter.emit(
            "checkpoint", step=step, mode=mode, blocking_s=round(blocking_s, 4), write_s=round(write_s, 4),
            path=str(final), deleted_steps=deleted or None,
        )

    # ---- restoring -----------------------------------------------------------------
    def find_latest(self) -> tuple[int, Path] | None:
        found = [cdir.latest_complete(self.root) if self.rank == 0 else None]
        if self.world_size > 1:
            dist.broadcast_object_list(found, src=0, group=self.control)
        return found[0]

    def restore(self) -> tuple[int, dict[str, Any]] | None:
        """Load the newest complete checkpoint into the tracked objects; None if none exists."""
        latest = self.find_latest()
        if latest is None:
            return None
        step, path = latest
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import (
            set_model_state_dict,
            set_state_dict,
        )

        t = self.tracked
        state = self._global_state()
        dcp.load(state, storage_reader=dcp.FileSystemReader(str(path)), process_group=self.group)
        if t.model is not None:
            if t.optimizers:
                set_state_dict(
                    t.model, list(t.optimizers), model_state_dict=state["model"], optim_state_dict=state["optim"]
                )
            else:
                set_model_state_dict(t.model, state["model"])
        if t.scheduler is not None:
            t.scheduler.load_state_dict(state["scheduler"])
        if t.extra is not None:
            if isinstance(t.extra, dict):
                t.extra.clear()
                t.extra.update(state["extra"])
            else:
                t.extra.load_state_dict(state["extra"])
        info = cdir.read_marker(path)
        rank_path = _rank_file(path, self.rank)
        if rank_path.exists():
            rank_state = torch.load(rank_path, weights_only=False)
            rng.restore(rank_state["rng"])
            if t.dataloader is not None and "dataloader" in rank_state:
                t.dataloader.load_state_dict(rank_state["dataloader"])
        else:
            log.warning(
                "jsruntime: checkpoint %s was written by %s ranks and has no state for rank %d: "
                "its RNG and data-loader position start fresh",
                path, info.get("world_size"), self.rank,
            )
        self.last_saved_step = step
        self.last_save_started = time.monotonic()
        return step, {"path": str(path), "saved_world_size": info.get("world_size")}
