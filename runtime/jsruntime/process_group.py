"""Process group setup: device, backend, a store that survives torchrun restarts."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from .env import DistEnv

log = logging.getLogger("jsruntime")


@dataclass(frozen=True)
class Groups:
    device: torch.device
    backend: str
    control: dist.ProcessGroup | None  # gloo: flags, broadcasts (never used by a background save)
    checkpoint: dist.ProcessGroup | None  # gloo: used by DCP saves, also from a background thread


def pick_device(env: DistEnv, requested: str | None = None) -> torch.device:
    if requested:
        device = torch.device(requested)
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", env.local_rank)
    elif torch.cuda.is_available():
        device = torch.device("cuda", env.local_rank % torch.cuda.device_count())
    else:
        device = torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return device


def _store(env: DistEnv, timeout: timedelta) -> dist.Store:
    """The store for the default group.

    Under torchrun the agent hosts a TCPStore that outlives worker restarts; its keys from
    the previous attempt would be read by the new workers (stale gloo addresses,
    ``connectFullMesh failed``).  A PrefixStore named after TORCHELASTIC_RESTART_COUNT gives
    each attempt fresh keys, so no torchrun flag or variable is needed for restarts.
    """
    if env.world_size == 1 and not env.launched:
        # DCP's process-mode helper rendezvouses on MASTER_ADDR (else the host's FQDN).
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        return dist.HashStore()
    assert env.master_addr is not None and env.master_port is not None
    if env.use_agent_store:
        base = dist.TCPStore(env.master_addr, env.master_port, env.world_size, is_master=False, timeout=timeout)
    else:
        base = dist.TCPStore(
            env.master_addr, env.master_port, env.world_size, is_master=env.rank == 0,
            timeout=timeout, multi_tenant=True,
        )
    return dist.PrefixStore(f"jsruntime/attempt-{env.restart_count}/", base)


def init_groups(env: DistEnv, device: torch.device, timeout_s: float = 600.0) -> Groups:
    """Initialise (or adopt) the default process group and the runtime's own gloo groups."""
    timeout = timedelta(seconds=timeout_s)
    backend = "cpu:gloo,cuda:nccl" if device.type == "cuda" else "gloo"
    if not dist.is_initialized():
        if env.world_size > 1 and not env.launched:
            raise RuntimeError(
                f"WORLD_SIZE={env.world_size} but MASTER_ADDR/MASTER_PORT are not set: "
                "launch with torchrun (or python -m jsruntime.launch)"
            )
        kwargs = {"device_id": device} if device.type == "cuda" else {}
        dist.init_process_group(
            backend=backend, store=_store(env, timeout), rank=env.rank, world_size=env.world_size,
            timeout=timeout, **kwargs,
        )
    else:
        backend = dist.get_backend()
        log.info("jsruntime: using the process group the script created (backend %s)", backend)
    # Separate gloo groups: DCP's async save needs its own (on the default group it hangs or
    # crashes), and the per-step control all_reduce must not interleave with a save running
    # in a background thread.
    control = dist.new_group(backend="gloo", timeout=timeout)
    checkpoint = dist.new_group(backend="gloo", timeout=timeout)
    return Groups(device=device, backend=backend, control=control, checkpoint=checkpoint)


def shutdown() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()
