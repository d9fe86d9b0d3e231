"""Size a job's strategy: which parallelism, and whether it fits in GPU memory (a first-order estimate).

Bytes per parameter with Adam in mixed precision: 2 (bf16 weights) + 2 (grads) + 12 (fp32 master,
momentum, variance) = 16. DDP keeps all of it on every GPU; FSDP FULL_SHARD divides all of it by the
world size, SHARD_GRAD_OP divides grads and optimizer state; cpu_offload moves the 12 bytes to host.
Activations are not modelled (they depend on the code), so the estimate is a lower bound.
"""
from __future__ import annotations

from dataclasses import dataclass

from jsctl.model.spec import JobSpec
from jsctl.model import gpus
from jsctl.model.job import Placement

GIB = 2**30


@dataclass(frozen=True)
class StrategyAdvice:
    parallelism: str  # ddp | fsdp | deepspeed | none
    config: tuple[tuple[str, object], ...]
    bytes_per_gpu: float | None  # model states per GPU, when the model size is known
    gpu_memory_bytes: float | None
    why: str

    @property
    def fits(self) -> bool | None:
        if self.bytes_per_gpu is None or not self.gpu_memory_bytes:
            return None
        return self.bytes_per_gpu <= self.gpu_memory_bytes

    def to_env(self) -> dict:
        return {"parallelism": self.parallelism, "config": dict(self.config)}

    def to_dict(self) -> dict:
        """The advice as data (the plan JSON's `strategy_advice`): the verdict is a field, not only words."""
        return {"parallelism": self.parallelism, "memory_per_gpu_bytes": self.bytes_per_gpu,
                "gpu_memory_bytes": self.gpu_memory_bytes, "fits": self.fits, "why": self.why,
                "text": self.describe()}

    def describe(self) -> str:
        cfg = dict(self.config)
        parts = [self.parallelism]
        if self.parallelism == "fsdp":
            parts.append(str(cfg.get("sharding_strategy", "FULL_SHARD")))
        if self.parallelism == "deepspeed" and "zero_stage" in cfg:
            parts.append(f"ZeRO-{cfg['zero_stage']}")
        text = " ".join(parts)
        extras = [str(cfg["mixed_precision"])] if cfg.get("mixed_precision") else []
        extras += [k for k in ("cpu_offload", "offload_optimizer", "offload_param") if cfg.get(k)]
        if extras:
            text += ", " + ", ".join(extras)
        if self.bytes_per_gpu is not None and self.gpu_memory_bytes:
            verdict = "fits" if self.fits else "DOES NOT FIT"
            text += f"   ({verdict}: {self.bytes_per_gpu / GIB:.1f} of {self.gpu_memory_bytes / GIB:.0f} GiB per GPU)"
        return text


def model_state_bytes(params: float, parallelism: str, config: dict, world: int) -> float:
    weights, grads, optim = 2 * params, 2 * params, 12 * params
    if config.get("cpu_offload") or config.get("offload_optimizer"):
        optim = 0.0
    if parallelism == "fsdp":
        mode = config.get("sharding_strategy", "FULL_SHARD")
        if mode == "FULL_SHARD":
            return (weights + grads + optim) / world
        if mode in ("SHARD_GRAD_OP", "HYBRID_SHARD"):
            return weights + (grads + optim) / world
    if parallelism == "deepspeed":
        stage = int(config.get("zero_stage", 0))
        if stage >= 3:
            return (weights + grads + optim) / world
        if stage == 2:
            return weights + (grads + optim) / world
        if stage == 1:
            return weights + grads + optim / world
    return weights + grads + optim


def advise(spec: JobSpec, placement: Placement) -> StrategyAdvice:
    config = dict(spec.strategy.config)
    world = placement.workers
    params = spec.model.parameters if spec.model else None
    models = gpus.resolve(placement.gpu_type) if placement.gpu_type else ()
    memory = min(m.memory_gib for m in models) * GIB if models else None
    chosen = spec.strategy.parallelism
    why = "as configured"
    if chosen == "auto":
        if world <= 1:
            chosen, why = "none", "one worker"
        elif params and memory and model_state_bytes(params, "ddp", config, world) > 0.7 * memory:
            chosen, why = "fsdp", "model states do not fit one GPU with DDP"
            config.setdefault("sharding_strategy", "FULL_SHARD")
        else:
            chosen, why = "ddp", "model fits one GPU" if params and memory else "model size unknown"
    need = model_state_bytes(params, chosen, config, max(world, 1)) if params else None
    return StrategyAdvice(chosen, tuple(sorted(config.items())), need, memory, why)
