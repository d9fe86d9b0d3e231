"""What every provider runs: the launched command and the job's environment, from a JobContext.

Arguments may hold `${NAME}` for names set when the job runs (JETSTREAM_*, MASTER_ADDR, JOB_ID,
the job's env_vars and secrets); they expand at run time, like Kubernetes' `$(VAR)`, and nothing
else in an argument is ever interpreted.
"""
from __future__ import annotations

import json
import os
import re
from typing import Mapping

from jsctl.config.quantities import parse_frequency
from jsctl.config.variables import is_runtime_name
from jsctl.model.job import JobContext
from jsctl.model.status import REQUEUE_EXIT_CODE
from jsctl.render import shquote

VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
SHELLS = frozenset({"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/usr/bin/bash", "/usr/bin/env"})
PYTHONS = frozenset({"python", "python3"})
# torchrun, preemption-aware (jsruntime.launch): it adds --signals-to-handle=...,SIGUSR1 so that a
# preemption signal reaches the workers instead of killing torchrun, and exits with the requeue
# code (75) when the workers checkpointed on that signal (torchrun alone would exit 1).
LAUNCHER = ("python", "-m", "jsruntime.launch")
DEFAULT_LAUNCHER_ARGS = ("--nnodes=${JETSTREAM_NNODES}", "--nproc_per_node=${JETSTREAM_GPUS_PER_NODE}",
                         "--rdzv_backend=c10d",
                         "--rdzv_endpoint=${MASTER_ADDR}:${MASTER_PORT}", "--rdzv_id=${JOB_ID}",
                         "--shutdown-timeout=120")  # time for a preemption checkpoint before SIGKILL


def runtime_names(ctx: JobContext) -> frozenset[str]:
    env = ctx.spec.environment
    return frozenset({"JOB_ID", *(k for k, _ in env.env_vars), *env.secrets})


def expands(name: str, ctx: JobContext) -> bool:
    return is_runtime_name(name, ctx.runtime_names) or name in runtime_names(ctx)


def command(ctx: JobContext) -> tuple[str, ...]:
    """lifecycle.command, wrapped in the launcher when the strategy names one and the command does not."""
    argv = ctx.spec.lifecycle.command
    strategy = ctx.spec.strategy
    if strategy.launcher != "torchrun" or os.path.basename(argv[0]) == "torchrun" or argv[0] in SHELLS:
        return argv
    args = strategy.launcher_args or DEFAULT_LAUNCHER_ARGS
    if argv[0] in PYTHONS:
        argv = argv[1:]
    if argv and argv[0] != "-m" and not argv[0].endswith(".py"):
        return (*LAUNCHER, *args, "--no-python", *argv)
    return (*LAUNCHER, *args, *argv)


def environment(ctx: JobContext, mounts: Mapping[str, str] | None = None) -> dict[str, str]:
    """Variables every job gets (secrets excluded: they travel at submit, never in an artifact).

    Values that depend on the allocation (MASTER_ADDR, MASTER_PORT) are set
    by the provider at run time.
    """
    p = ctx.placement
    spec = ctx.spec
    env: dict[str, str] = {
        "JOB_ID": ctx.job_id,
        "JETSTREAM_JOB_ID": ctx.job_id,
        "JETSTREAM_ADDRESS": ctx.address,
        "JETSTREAM_GENERATION": str(ctx.generation),
        "JETSTREAM_NNODES": str(p.nodes),
        "JETSTREAM_GPUS_PER_NODE": str(max(p.gpus_per_node, 1)),
        "JETSTREAM_WORLD_SIZE": str(p.nodes * max(p.gpus_per_node, 1)),
        "JETSTREAM_REQUEUE_EXIT_CODE": str(REQUEUE_EXIT_CODE),
        "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1",
    }
    if ctx.strategy:
        env["JETSTREAM_STRATEGY"] = json.dumps(dict(ctx.strategy), sort_keys=True)
    for name, path in (mounts or {}).items():
        env[f"JETSTREAM_MOUNT_{env_name(name)}"] = path
    ckpt = spec.checkpoint_output
    if ckpt is not None:
        env["JETSTREAM_CHECKPOINT_DIR"] = (mounts or {}).get(ckpt.name) or ckpt.mount_path or ckpt.path
        if ckpt.save_frequency:
            parse_frequency(ckpt.save_frequency)
            env["JETSTREAM_SAVE_FREQUENCY"] = ckpt.save_frequency
        if ckpt.keep_latest:
            env["JETSTREAM_KEEP_LATEST"] = str(ckpt.keep_latest)
    env.update(dict(spec.environment.env_vars))
    return env


def env_name(name: str) -> str:
    """Storage name → the suffix of JETSTREAM_MOUNT_<NAME>: `pretrained-model` → PRETRAINED_MODEL."""
    return re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def expand(arg: str, env: Mapping[str, str]) -> str:
    """Run-time expansion of `${NAME}` from the job's environment (unknown names stay as written)."""
    return VAR.sub(lambda m: env.get(m.group(1), m.group(0)), arg)


def shell_word(arg: str, ctx: JobContext) -> str:
    """One shell word: literal text single-quoted, run-time `${NAME}` left to expand, nothing else."""
    parts: list[str] = []
    last = 0
    for m in VAR.finditer(arg):
        if not expands(m.group(1), ctx):
            continue
        if m.start() > last:
            parts.append(shquote(arg[last:m.start()]))
        parts.append(f'"${{{m.group(1)}}}"')
        last = m.end()
    if last < len(arg) or not parts:
        parts.append(shquote(arg[last:]))
    return "".join(parts)


def shell_command(argv: tuple[str, ...], ctx: JobContext) -> str:
    return " ".join(shell_word(a, ctx) for a in argv)
