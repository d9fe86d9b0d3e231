"""Apply the planned parallelism (JETSTREAM_STRATEGY) to a model."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
from collections.abc import Callable
from typing import ContextManager

import torch
import torch.distributed as dist
from torch import nn

from .env import DistEnv, StrategyConfig

log = logging.getLogger("jsruntime")

_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": None}


class StrategyError(RuntimeError):
    """The planned strategy cannot run here; the message says what and why."""


def check(strategy: StrategyConfig, env: DistEnv, device: torch.device) -> None:
    """Reject what this machine cannot do, before any model is built."""
    p = strategy.parallelism
    if p == "deepspeed":
        if importlib.util.find_spec("deepspeed") is None:
            raise StrategyError(
                "parallelism 'deepspeed' was planned but the deepspeed package is not installed "
                "in the job's environment; install it or plan parallelism 'fsdp' (ZeRO-3-like "
                "FULL_SHARD, ZeRO-2-like SHARD_GRAD_OP)"
            )
        raise StrategyError(
            "parallelism 'deepspeed' is not applied by jsruntime.wrap (DeepSpeed owns the "
            "optimizer and the training step); call deepspeed.initialize yourself, or plan 'fsdp'"
        )
    if p == "none" and env.world_size > 1:
        raise StrategyError(
            f"parallelism 'none' with WORLD_SIZE={env.world_size}: every rank would train its own "
            "diverging copy of the model; plan 'ddp' or 'fsdp', or run one process"
        )
    if strategy.cpu_offload:
        if p != "fsdp":
            raise StrategyError(f"cpu_offload is an FSDP option; parallelism is {p!r}")
        if device.type == "cpu":
            raise StrategyError(
                "cpu_offload needs an accelerator: the job runs on the CPU, where parameters "
                "and optimizer state already live in host memory (FSDP2's CPUOffloadPolicy "
                "fails without one); plan cpu_offload: false"
            )
    if p == "fsdp" and strategy.sharding_strategy == "HYBRID_SHARD":
        if env.world_size % env.local_world_size != 0:
            raise StrategyError(
                f"HYBRID_SHARD needs the same number of processes on every node: WORLD_SIZE="
                f"{env.world_size} is not a multiple of LOCAL_WORLD_SIZE={env.local_world_size}"
            )


def autocast(strategy: StrategyConfig, device: torch.device) -> ContextManager[object]:
    """Mixed precision for the forward pass where the wrapper does not cast (DDP, none)."""
    dtype = _DTYPES[strategy.mixed_precision]
    if dtype is None or strategy.parallelism == "fsdp":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def default_shard_units(model: nn.Module) -> list[nn.Module]:
    """Modules that get their own FSDP unit: the members of every ModuleList (the layers)."""
    units: list[nn.Module] = []
    for module in model.modules():
        if isinstance(module, nn.ModuleList):
            units.extend(m for m in module if any(True for _ in m.parameters()))
    return units


def _ddp(model: nn.Module, device: torch.device) -> nn.Module:
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(
        model,
        device_ids=[device] if device.type == "cuda" else None,
        gradient_as_bucket_view=True,
    )


def _fsdp(
    model: nn.Module,
    strategy: StrategyConfig,
    env: DistEnv,
    device: torch.device,
    shard_units: Callable[[nn.Module], list[nn.Module]] | None,
) -> nn.Module:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import (
        CPUOffloadPolicy,
        MixedPrecisionPolicy,
        OffloadPolicy,
        fully_shard,
    )

    if strategy.sharding_strategy == "HYBRID_SHARD":
        nodes = env.world_size // env.local_world_size
        if nodes == 1:
            log.warning("jsruntime: HYBRID_SHARD on one node shards like FULL_SHARD (mesh 1x%d)", env.world_size)
        mesh = init_device_mesh(device.type, (nodes, env.local_world_size), mesh_dim_names=("replicate", "shard"))
    else:
        mesh = init_device_mesh(device.type, (env.world_size,), mesh_dim_names=("shard",))
    dtype = _DTYPES[strategy.mixed_precision]
    mp = MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=torch.float32) if dtype else MixedPrecisionPolicy()
    offload = CPUOffloadPolicy() if strategy.cpu_offload else OffloadPolicy()
    reshard = strategy.sharding_strategy != "SHARD_GRAD_OP"
    for unit in (shard_units or default_shard_units)(model):
        fully_shard(unit, mesh=mesh, reshard_after_forward=reshard, mp_policy=mp, offload_policy=offload)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard, mp_policy=mp, offload_policy=offload)
    return model


def wrap(
    model: nn.Module,
    strategy: StrategyConfig,
    env: DistEnv,
    device: torch.device,
    shard_units: Callable[[nn.Module], list[nn.Module]] | None = None,
) -> nn.Module:
    """Move ``model`` to ``device`` and wrap it as planned (DDP, FSDP2 or nothing)."""
    check(strategy, env, device)
    if not strategy.cpu_offload:
        model = model.to(device)
    p = strategy.parallelism
    if p == "fsdp" and strategy.sharding_strategy == "NO_SHARD":
        log.warning("jsruntime: FSDP NO_SHARD is plain data parallelism: using DDP")
        p = "ddp"
    if p == "none":
        return model
    if not dist.is_initialized():
        raise StrategyError(f"parallelism {p!r} needs a process group: call jsruntime.init() first")
    if p == "ddp":
        return _ddp(model, device)
    return _fsdp(model, strategy, env, device, shard_units)
