"""Apply the planned parallelism (JETSTREAM_STRATEGY) to a model."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import math
import os
from collections.abc import Callable
from typing import ContextManager

import torch
import torch.distributed as dist
from torch import nn

from .env import AutoWrap, DistEnv, StrategyConfig

log = logging.getLogger("jsruntime")

_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": None}


class StrategyError(RuntimeError):
    """The planned strategy cannot run here; the message says what and why."""


def check(strategy: StrategyConfig, env: DistEnv, device: torch.device) -> None:
    """Reject what this machine cannot do, before any model is built."""
    p = strategy.parallelism
    if p == "deepspeed":
        # The program owns the engine: jsruntime sets up the process group and hands it the generated
        # config (rt.deepspeed_config, a path; JETSTREAM_DEEPSPEED_CONFIG). Offload is DeepSpeed's to check.
        path = strategy.deepspeed_config
        if path and not os.path.isfile(path):
            raise StrategyError(f"JETSTREAM_DEEPSPEED_CONFIG={path}: no such file (jsctl writes the generated "
                                "DeepSpeed config there before the job starts)")
        if importlib.util.find_spec("deepspeed") is None:
            log.warning("jsruntime: parallelism 'deepspeed' was planned but the deepspeed package is not "
                        "installed here; the program's deepspeed.initialize will fail")
        return
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
    if strategy.activation_checkpointing and p not in ("fsdp", "ddp", "none"):
        raise StrategyError(f"activation_checkpointing is applied by jsruntime for fsdp, ddp and none; "
                            f"parallelism is {p!r}")
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


def _class_names(module: nn.Module) -> set[str]:
    cls = type(module)
    return {cls.__name__, cls.__qualname__, f"{cls.__module__}.{cls.__qualname__}"}


def _post_order(module: nn.Module) -> list[nn.Module]:
    """Children before their parents (nested units must be sharded first)."""
    out: list[nn.Module] = []
    for child in module.children():
        out += _post_order(child)
    return out + [module]


def wrap_units(model: nn.Module, policy: AutoWrap) -> list[nn.Module]:
    """The modules the planned auto-wrap policy names, innermost first (the order fully_shard needs)."""
    if policy.policy == "module_classes":
        wanted = set(policy.module_classes)
        units = [m for m in _post_order(model) if m is not model and _class_names(m) & wanted]
        if not units:
            present = sorted({type(m).__name__ for m in model.modules()})
            raise StrategyError(f"auto_wrap names module classes {sorted(wanted)} but the model has none of "
                                f"them; its classes: {', '.join(present)}")
        return units
    if policy.policy == "size":
        assert policy.min_params is not None
        units = []

        def visit(module: nn.Module) -> int:  # parameters of this subtree not yet in a unit
            free = sum(visit(child) for child in module.children())
            free += sum(p.numel() for p in module.parameters(recurse=False))
            if module is not model and free >= policy.min_params:
                units.append(module)
                return 0
            return free

        visit(model)
        return units
    return default_shard_units(model)


def checkpoint_activations(units: list[nn.Module]) -> None:
    """Activation checkpointing on each unit: its forward runs again in backward instead of keeping
    its activations (torch.utils.checkpoint, non-reentrant, through the composable API that leaves
    the module tree and its state-dict keys as they are)."""
    from torch.distributed._composable import checkpoint

    for unit in units:
        checkpoint(unit)


def applied(model: nn.Module) -> dict[str, object]:
    """What the model looks like after wrap, read from the modules themselves (for the `wrap` event)."""
    from torch.distributed._composable.contract import _get_registry

    fsdp_units, checkpointed, reshard, mp = [], [], {}, {}
    for name, module in model.named_modules():
        registry = _get_registry(module) or {}
        if "fully_shard" in registry:
            fsdp_units.append(name or "<root>")
            with contextlib.suppress(Exception):  # FSDP2's internals: reported when they read as expected
                group = module._get_fsdp_state()._fsdp_param_group  # type: ignore[operator]
                if group is not None and name:  # the root's resharding is decided at its first forward
                    reshard[name] = group.post_forward_mesh_info is not None
                    policy = group.mp_policy
                    mp[name] = [str(policy.param_dtype).removeprefix("torch.") if policy.param_dtype else None,
                                str(policy.reduce_dtype).removeprefix("torch.") if policy.reduce_dtype else None]
        if "checkpoint" in registry:
            checkpointed.append(name)
    return {"fsdp_units": fsdp_units, "checkpointed": checkpointed, "reshard_after_forward": reshard,
            "mixed_precision": mp, "ddp": type(model).__name__ == "DistributedDataParallel"}


def _ddp(model: nn.Module, device: torch.device) -> nn.Module:
    from torch.nn.parallel import DistributedDataParallel

    ddp = DistributedDataParallel(
        model,
        device_ids=[device] if device.type == "cuda" else None,
        gradient_as_bucket_view=True,
    )
    _pin_buckets(ddp)
    return ddp


def _pin_buckets(ddp: nn.Module) -> None:
    """Give DDP its final gradient buckets now, computed from the parameter order alone.

    Why: DDP starts with one bucket holding every gradient and, after the first backward, rebuilds
    the buckets from the order in which gradients became ready (Reducer::rebuild_buckets: a small
    first bucket, then bucket_cap_mb ones). A job restarted at step k therefore reduces step k+1
    with the one-bucket layout while the uninterrupted job used the rebuilt one. The layout sets
    where each gradient element falls in the ring allreduce's chunks, and so the order in which the
    ranks' values are added: with more than two ranks, float addition in another order differs in
    the last bits, and a resumed run drifts away from an uninterrupted one.

    How: the reducer's one rebuild is triggered here, before training, from a replayed "backward"
    in which each parameter is marked ready in reverse parameter order (the order DDP itself
    assumes before it has measured one; Reducer::_autograd_hook is what DDP's mixed-precision path
    calls). The rebuild then happens as DDP would do it (same size limits, indices broadcast from
    rank 0), and never again, so every step of every run - fresh, restarted, resized - reduces
    with the same buckets. The replay all-reduces zeros once; the parameters' .grad are put back
    as they were (None before the first step).
    Cost: where the real ready order differs from the reverse parameter order, a bucket can wait
    for a gradient computed later (less overlap of communication with backward), as with DDP's
    own first-iteration layout under find_unused_parameters=True.
    """
    reducer = ddp.reducer  # type: ignore[attr-defined]
    if ddp.static_graph or ddp.find_unused_parameters or getattr(ddp, "_delay_all_reduce_params", None):
        return  # other rebuild rules there; leave DDP as it is
    needed = ("prepare_for_forward", "prepare_for_backward", "_autograd_hook", "_rebuild_buckets")
    if not all(hasattr(reducer, name) for name in needed):
        log.warning("jsruntime: this torch's DDP reducer lacks %s: gradient buckets are not pinned, so a "
                    "resumed job with more than 2 ranks may differ from an uninterrupted one in the last bits",
                    ", ".join(n for n in needed if not hasattr(reducer, n)))
        return
    # The reducer's parameters, in its indexing (DistributedDataParallel._build_params_for_reducer).
    params: list[nn.Parameter] = []
    seen: set[int] = set()
    for module_name, module in ddp.module.named_modules():  # type: ignore[union-attr]
        for name, p in module.named_parameters(recurse=False):
            if p.requires_grad and f"{module_name}.{name}" not in ddp.parameters_to_ignore and id(p) not in seen:
                seen.add(id(p))
                params.append(p)

    class _Replay(torch.autograd.Function):
        @staticmethod
        def forward(ctx: object, x: torch.Tensor) -> torch.Tensor:
            return x.clone()

        @staticmethod
        def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:
            for index in reversed(range(len(params))):
                reducer._autograd_hook(index)
            return grad

    grads_before = [p.grad for p in params]
    x = torch.zeros(1, device=ddp.device, requires_grad=True)  # type: ignore[attr-defined]
    reducer.prepare_for_forward()
    reducer.prepare_for_backward([])
    _Replay.apply(x).sum().backward()
    if not reducer._rebuild_buckets():
        raise StrategyError("jsruntime: DDP did not rebuild its gradient buckets from the replayed order")
    ddp._has_rebuilt_buckets = True  # type: ignore[attr-defined]
    for p, g in zip(params, grads_before):
        p.grad = g


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

    planned = strategy.mesh_shape
    if planned is not None and math.prod(planned) != env.world_size:
        log.warning("jsruntime: the plan's FSDP mesh %s does not hold WORLD_SIZE=%d (the job was resized): "
                    "using the launched shape", "x".join(map(str, planned)), env.world_size)
        planned = None
    if strategy.sharding_strategy == "HYBRID_SHARD":
        shape = planned if planned is not None and len(planned) == 2 else \
            (env.world_size // env.local_world_size, env.local_world_size)
        if shape[0] == 1:
            log.warning("jsruntime: HYBRID_SHARD on one node shards like FULL_SHARD (mesh 1x%d)", env.world_size)
        mesh = init_device_mesh(device.type, tuple(shape), mesh_dim_names=("replicate", "shard"))
    else:
        mesh = init_device_mesh(device.type, (env.world_size,), mesh_dim_names=("shard",))
    dtype = _DTYPES[strategy.mixed_precision]
    reduce = _DTYPES[strategy.reduce_dtype] or torch.float32
    mp = MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=reduce) if dtype else MixedPrecisionPolicy()
    offload = CPUOffloadPolicy() if strategy.cpu_offload else OffloadPolicy()
    reshard = strategy.resharding
    units = shard_units(model) if shard_units else wrap_units(model, strategy.auto_wrap)
    if strategy.activation_checkpointing:
        checkpoint_activations(units)
    for unit in units:
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
    if p == "deepspeed":
        raise StrategyError(
            "parallelism 'deepspeed': DeepSpeed owns the model, the optimizer and the training step, so "
            "jsruntime does not wrap it; call deepspeed.initialize(model=..., config=rt.deepspeed_config) "
            "(the config the plan generated)"
        )
    if p in ("none", "ddp") and strategy.activation_checkpointing:
        units = shard_units(model) if shard_units else wrap_units(model, strategy.auto_wrap)
        if not units:
            log.warning("jsruntime: activation_checkpointing: the auto-wrap policy finds no module to checkpoint")
        checkpoint_activations(units)
    if p == "none":
        return model
    if not dist.is_initialized():
        raise StrategyError(f"parallelism {p!r} needs a process group: call jsruntime.init() first")
    if p == "ddp":
        return _ddp(model, device)
    return _fsdp(model, strategy, env, device, shard_units)
