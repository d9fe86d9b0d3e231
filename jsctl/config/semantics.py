"""Checks a JSON Schema cannot express: GPU names, field combinations, unique names and paths."""
from __future__ import annotations

from typing import Any

from jsctl.config.diagnostics import Diagnostic, did_you_mean, error, warning
from jsctl.config.loader import Document
from jsctl.model import gpus

FSDP_ONLY = ("sharding_strategy", "cpu_offload", "reduce_dtype")
DEEPSPEED_ONLY = ("zero_stage", "offload_optimizer", "offload_param", "gradient_clipping")  # in the DeepSpeed JSON


def check_job(doc: Document, data: dict) -> list[Diagnostic]:
    out: list[Diagnostic] = []

    def at(path: tuple, msg: str, hint: str | None = None, key: bool = False, sev: str = "error") -> None:
        p = doc.where(path, key=key)
        make = error if sev == "error" else warning
        out.append(make("CHECK", msg, doc.path, p.line, p.col, hint=hint))

    res = ((data.get("compute") or {}).get("resources") or {})
    gpu = res.get("gpu")
    base = ("compute", "resources")
    if gpu and gpu.get("type") is not None and not gpus.resolve(str(gpu["type"])):
        at(base + ("gpu", "type"), f"unknown GPU type '{gpu['type']}'{did_you_mean(str(gpu['type']), gpus.known_names())}",
           hint="known types: " + ", ".join(gpus.known_names()))
    if gpu and gpu.get("per_node") and gpu["count"] % gpu["per_node"]:
        at(base + ("gpu", "per_node"), f"gpu.count {gpu['count']} is not a multiple of per_node {gpu['per_node']}")
    if not gpu:
        for section, field in (("cpu", "per_gpu"), ("memory", "per_gpu")):
            if field in (res.get(section) or {}):
                at(base + (section, field), f"'{section}.{field}' needs a gpu request; a CPU-only job uses "
                   f"'{section}.{'count' if section == 'cpu' else 'total'}'", key=True)
    strategy = data.get("strategy") or {}
    parallelism = strategy.get("parallelism", "auto")
    config = strategy.get("config") or {}
    for name in config:
        if name in FSDP_ONLY and parallelism not in ("fsdp", "auto"):
            at(("strategy", "config", name), f"'{name}' applies to parallelism fsdp, not {parallelism}", key=True)
        if name in DEEPSPEED_ONLY and parallelism not in ("deepspeed", "auto"):
            at(("strategy", "config", name), f"'{name}' applies to parallelism deepspeed, not {parallelism}", key=True)
    if strategy.get("launcher_args") and not strategy.get("launcher"):
        at(("strategy", "launcher_args"), "'launcher_args' is ignored without 'launcher'", key=True, sev="warning")
    env = data.get("environment") or {}
    for i, name in enumerate(env.get("secrets") or []):
        if name in (env.get("env_vars") or {}):
            at(("environment", "secrets", i), f"secret '{name}' is also set in env_vars: a secret's value must "
               "never be written in the file", hint=f"remove {name} from env_vars; it is read from your "
               "environment at apply")
    _check_storage(doc, data.get("storage") or {}, at)
    for i, code in enumerate((data.get("recovery") or {}).get("restart_on_exit_codes") or []):
        if not 0 <= code <= 255:
            at(("recovery", "restart_on_exit_codes", i), f"exit code must be between 0 and 255, got {code}")
    return out


def _check_storage(doc: Document, storage: dict, at: Any) -> None:
    names: dict[str, tuple] = {}
    mounts: dict[str, tuple] = {}
    for kind in ("inputs", "outputs"):
        for i, item in enumerate(storage.get(kind) or []):
            path = ("storage", kind, i)
            name = item.get("name")
            if name in names:
                at(path + ("name",), f"storage name '{name}' is used twice (first at line "
                   f"{doc.where(names[name]).line})")
            else:
                names[name] = path + ("name",)
            mount = item.get("mount_path")
            if mount is not None:
                if not str(mount).startswith("/"):
                    at(path + ("mount_path",), f"'mount_path' must be an absolute path, got '{mount}'")
                elif mount in mounts:
                    at(path + ("mount_path",), f"mount_path '{mount}' is used twice (first at line "
                       f"{doc.where(mounts[mount]).line})")
                else:
                    mounts[mount] = path + ("mount_path",)
