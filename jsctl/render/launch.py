"""What every provider runs: the launched command and the job's environment, from a JobContext.

Arguments may hold `${NAME}` for names set when the job runs (JETSTREAM_*, MASTER_ADDR, JOB_ID,
the job's env_vars and secrets); they expand at run time, like Kubernetes' `$(VAR)`, and nothing
else in an argument is ever interpreted.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from jsctl.config.variables import is_runtime_name
from jsctl.errors import RenderError
from jsctl.model.job import JobContext
from jsctl.model.status import REQUEUE_EXIT_CODE
from jsctl.render import shquote

VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
SHELLS = frozenset({"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/usr/bin/bash", "/usr/bin/env"})
PYTHONS = frozenset({"python", "python3"})
# torchrun, preemption-aware (jsruntime.launch): it adds --signals-to-handle=...,SIGUSR1 so that a
# preemption signal reaches the workers instead of killing torchrun, and exits with the requeue
# code (75) when the workers checkpointed on that signal (torchrun alone would exit 1).
# `--exec COMMAND...` runs a command that starts torchrun itself (a user-written torchrun, a shell)
# the same way: signals forwarded to its process group, exit 75 after a preemption checkpoint.
LAUNCHER = ("python", "-m", "jsruntime.launch")
EXEC = "--exec"
# torchrun's options for a job: given on the command line when jsctl wraps a script, and as
# PET_<OPTION> in every job's environment, where torchrun takes an option's default from when the
# command line does not give it (torch/distributed/argparse_util.py) - so that a torchrun the user
# writes joins the same one rendezvous on the first node.
TORCHRUN_OPTIONS = (("--nnodes", "${JETSTREAM_NNODES}"), ("--nproc_per_node", "${JETSTREAM_GPUS_PER_NODE}"),
                    ("--rdzv_backend", "c10d"), ("--rdzv_endpoint", "${MASTER_ADDR}:${MASTER_PORT}"),
                    ("--rdzv_id", "${JOB_ID}"),
                    ("--shutdown-timeout", "120"))  # time for a preemption checkpoint before SIGKILL
DEFAULT_LAUNCHER_ARGS = tuple(f"{opt}={value}" for opt, value in TORCHRUN_OPTIONS)
# = jsruntime.launch.SIGNALS_TO_HANDLE (a test keeps them equal): torchrun's default list plus SIGUSR1
SIGNALS_TO_HANDLE = "SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1"
TORCHRUN_MODULES = frozenset({"torch.distributed.run", "torch.distributed.launch"})
# A DeepSpeed job's generated config (JETSTREAM_STRATEGY's `deepspeed`, jsctl.plan.strategy_config) also
# reaches it as a file, written by the provider; its path is in this variable (docs/launch-contract.md).
DEEPSPEED_CONFIG_ENV = "JETSTREAM_DEEPSPEED_CONFIG"
DEEPSPEED_CONFIG_FILE = "deepspeed_config.json"


def pet_name(option: str) -> str:
    """torchrun option → the variable it reads its default from: `--nproc_per_node` → PET_NPROC_PER_NODE."""
    return "PET_" + option.lstrip("-").replace("-", "_").upper()


def runtime_names(ctx: JobContext) -> frozenset[str]:
    env = ctx.spec.environment
    return frozenset({"JOB_ID", *(k for k, _ in env.env_vars), *env.secrets})


def expands(name: str, ctx: JobContext) -> bool:
    return is_runtime_name(name, ctx.runtime_names) or name in runtime_names(ctx)


def is_python(word: str) -> bool:
    return re.fullmatch(r"python(3(\.\d+)?)?", os.path.basename(word)) is not None


def starts_torchrun(argv: tuple[str, ...]) -> bool:
    """The command is torchrun itself: `torchrun ...` or `python -m torch.distributed.run ...`."""
    return os.path.basename(argv[0]) == "torchrun" or (
        is_python(argv[0]) and len(argv) > 2 and argv[1] == "-m" and argv[2] in TORCHRUN_MODULES)


def command(ctx: JobContext) -> tuple[str, ...]:
    """lifecycle.command as launched on every node (docs/launch-contract.md):

    - a script or `python -m module` with strategy.launcher torchrun: in the launcher, with
      launcher_args or DEFAULT_LAUNCHER_ARGS;
    - torchrun written by the user, and a shell (with launcher torchrun): run as written under
      `jsruntime.launch --exec`; torchrun takes what its command line does not say from PET_*;
    - anything else: as written.
    """
    argv = ctx.spec.lifecycle.command
    strategy = ctx.spec.strategy
    if is_python(argv[0]) and argv[1:3] == LAUNCHER[1:]:
        return argv  # the user runs the launcher already
    if starts_torchrun(argv) or (strategy.launcher == "torchrun" and argv[0] in SHELLS):
        return (*LAUNCHER, EXEC, *argv)
    if strategy.launcher != "torchrun":
        return argv
    args = strategy.launcher_args or DEFAULT_LAUNCHER_ARGS
    if argv[0] in PYTHONS:
        argv = argv[1:]
    if argv and argv[0] != "-m" and not argv[0].endswith(".py"):
        return (*LAUNCHER, *args, "--no-python", *argv)
    return (*LAUNCHER, *args, *argv)


def deepspeed_config(ctx: JobContext) -> str | None:
    """The text of the DeepSpeed JSON file the job gets (None unless the plan generated one)."""
    ds = dict(ctx.strategy).get("deepspeed") if ctx.strategy else None
    return json.dumps(ds, indent=2, sort_keys=True) + "\n" if ds else None


def environment(ctx: JobContext, mounts: Mapping[str, str] | None = None,
                deepspeed_config_path: str | None = None) -> dict[str, str]:
    """Variables every job gets (secrets excluded: they travel at submit, never in an artifact).

    Values that depend on the allocation (MASTER_ADDR, MASTER_PORT) are set by the provider at run
    time; values here may name them (and any name of this environment) as `${NAME}`, which the
    provider expands when the job runs. The job's env_vars win over everything, PET_* included.
    `deepspeed_config_path`: where the provider puts the DeepSpeed JSON file (deepspeed_config), as
    the job sees it; JETSTREAM_DEEPSPEED_CONFIG names it when the plan generated one.
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
        if deepspeed_config_path and deepspeed_config(ctx):
            env[DEEPSPEED_CONFIG_ENV] = deepspeed_config_path
    for name, path in (mounts or {}).items():
        env[f"JETSTREAM_MOUNT_{env_name(name)}"] = path
    ckpt = spec.checkpoint_output
    if ckpt is not None:
        env["JETSTREAM_CHECKPOINT_DIR"] = (mounts or {}).get(ckpt.name) or ckpt.mount_path or ckpt.path
        if ckpt.save_every:
            env["JETSTREAM_SAVE_FREQUENCY"] = str(ckpt.save_every)
        if ckpt.keep_latest:
            env["JETSTREAM_KEEP_LATEST"] = str(ckpt.keep_latest)
    env.update(dict(spec.environment.env_vars))
    for name, value in _TORCHRUN_ENV.items():
        env.setdefault(name, value)  # after env_vars: a value may name one of them (MASTER_ADDR)
    return env


def runtime_refs(text: str, ctx: JobContext) -> list[str]:
    """The run-time names `${NAME}` in `text` refers to."""
    return [m.group(1) for m in VAR.finditer(text) if expands(m.group(1), ctx)]


def dependency_order(values: Mapping[str, str], ctx: JobContext, defined: Iterable[str] = ()) -> list[str]:
    """The names of `values` in the order an engine that expands references only to names defined
    earlier needs (a shell's exports, Kubernetes' env list): each after the names among `values` its
    value refers to, the given order otherwise; `defined` are set before all of them. A cycle keeps
    the given order (its references then stay literal)."""
    done = set(defined)
    pending = [n for n in values if n not in done]
    out: list[str] = []
    while pending:
        ready = next((n for n in pending if all(r in done or r not in values for r in runtime_refs(values[n], ctx))),
                     pending[0])
        pending.remove(ready)
        out.append(ready)
        done.add(ready)
    return out


def torchrun_environment() -> dict[str, str]:
    """PET_*: the defaults of every torchrun in the job (one c10d rendezvous on MASTER_ADDR:MASTER_PORT
    across all nodes, SIGUSR1 handled, time to checkpoint); its own command-line options win."""
    env = {pet_name(opt): value for opt, value in TORCHRUN_OPTIONS}
    env[pet_name("--signals-to-handle")] = SIGNALS_TO_HANDLE
    return env


_TORCHRUN_ENV = torchrun_environment()  # what `environment` adds to every job (read only)


def env_name(name: str) -> str:
    """Storage name → the suffix of JETSTREAM_MOUNT_<NAME>: `pretrained-model` → PRETRAINED_MODEL."""
    return re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def expand(arg: str, env: Mapping[str, str]) -> str:
    """Run-time expansion of `${NAME}` from the job's environment (unknown names stay as written)."""
    return VAR.sub(lambda m: env.get(m.group(1), m.group(0)), arg)


def shell_word(arg: str, ctx: JobContext) -> str:
    """One shell word: literal text single-quoted, run-time `${NAME}` left to expand, nothing else."""
    if "${" not in arg:  # no reference: the whole word is literal (most words)
        return shquote(arg)
    parts: list[str] = []
    last = 0
    names = None  # the job's own run-time names, made on the first reference
    for m in VAR.finditer(arg):
        name = m.group(1)
        if not is_runtime_name(name, ctx.runtime_names):
            names = runtime_names(ctx) if names is None else names
            if name not in names:
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


@dataclass(frozen=True)
class RuntimePackage:
    """The jsruntime package installed beside jsctl (pure Python), which a provider brings to a job
    whose image may lack it: its directory here, its files, and a hash of their contents."""

    source: str  # the package directory on this machine
    files: tuple[str, ...]  # paths relative to it, sorted
    digest: str  # sha256 of the paths and contents, 16 hex digits

    @property
    def name(self) -> str:
        """`jsruntime-<digest>`: the directory a provider stages it in (same contents, same name)."""
        return f"jsruntime-{self.digest}"


@functools.lru_cache(maxsize=None)
def runtime_package() -> RuntimePackage:
    spec = importlib.util.find_spec("jsruntime")  # finds, does not import
    if spec is None or not spec.submodule_search_locations:
        raise RenderError("the jsruntime package is not installed beside jsctl", hint="pip install jsctl")
    source = list(spec.submodule_search_locations)[0]
    files = []
    for root, dirs, names in os.walk(source):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files += [os.path.relpath(os.path.join(root, n), source) for n in names if not n.endswith((".pyc", ".pyo"))]
    h = hashlib.sha256()
    for rel in sorted(files):
        with open(os.path.join(source, rel), "rb") as fh:
            h.update(rel.replace(os.sep, "/").encode() + b"\0" + fh.read() + b"\0")
    return RuntimePackage(source, tuple(sorted(files)), h.hexdigest()[:16])
