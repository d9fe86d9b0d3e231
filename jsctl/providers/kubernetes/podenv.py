"""A container's environment and command in Kubernetes' own expansion syntax.

Kubernetes expands `$(NAME)` in `command`, `args` and env values (env values: only names defined
earlier in the list) and reads `$$` as one `$`; everything else passes through. So every literal `$`
is written `$$`, a run-time `${NAME}` of the launch contract becomes `$(NAME)` when the container
defines NAME, and the env list is ordered so that each value names only variables above it. A
`${NAME}` the container does not define (HOSTNAME: the container runtime's) stays literal text, for
a shell in the command to expand.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from jsctl.model.job import JobContext
from jsctl.providers.kubernetes.names import secret_name
from jsctl.providers.kubernetes.settings import DOWNWARD_NAMES
from jsctl.render import launch


def kube_text(text: str, ctx: JobContext, defined: Iterable[str]) -> str:
    """`text` for Kubernetes: `${NAME}` → `$(NAME)` for names in `defined`, every other `$` → `$$`."""
    names = set(defined)
    out: list[str] = []
    last = 0
    for m in launch.VAR.finditer(text):
        if m.group(1) in names and launch.expands(m.group(1), ctx):
            out.append(text[last:m.start()].replace("$", "$$") + f"$({m.group(1)})")
            last = m.end()
    out.append(text[last:].replace("$", "$$"))
    return "".join(out)


@dataclass(frozen=True)
class Env:
    """The container's variables: `values` (text with run-time `${NAME}`) and `sources` (valueFrom)."""

    values: Mapping[str, str]
    sources: Mapping[str, Mapping[str, Any]]

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.values) | frozenset(self.sources)

    def entries(self, ctx: JobContext) -> list[dict[str, Any]]:
        """The env list: valueFrom entries first, then values each after the names it refers to (in
        the launch contract's order otherwise); a reference that cannot come first (a cycle) stays literal."""
        out: list[dict[str, Any]] = [{"name": n, "valueFrom": dict(s)} for n, s in self.sources.items()]
        done = set(self.sources)
        for name in launch.dependency_order(self.values, ctx, done):
            out.append({"name": name, "value": kube_text(self.values[name], ctx, done)})
            done.add(name)
        return out


def field_ref(path: str) -> dict[str, Any]:
    return {"fieldRef": {"fieldPath": path}}


def build(ctx: JobContext, master_addr: str, master_port: int, rank_path: str, mounts: Mapping[str, str],
          deepspeed_path: str | None, drop: Iterable[str] = (), extra_refs: Iterable[str] = ()) -> Env:
    """The launch contract's environment on Kubernetes: launch.environment, MASTER_ADDR/PORT (the job's
    env_vars win), NODE_RANK and JETSTREAM_NODE_RANK from the pod's index (`rank_path`, a fieldRef), the
    downward-API names the job refers to, and the secrets from the job's Secret. `drop`: names the
    engine sets itself (Kubeflow Trainer's PET_*)."""
    spec = ctx.spec
    base = launch.environment(ctx, mounts, deepspeed_path)
    values: dict[str, str] = {"MASTER_ADDR": master_addr, "MASTER_PORT": str(master_port)}
    values.update(base)
    for name in drop:
        values.pop(name, None)
    sources: dict[str, Mapping[str, Any]] = {}
    for name in ("NODE_RANK", "JETSTREAM_NODE_RANK"):
        if name not in values:
            sources[name] = field_ref(rank_path)
    texts = [*values.values(), *spec.lifecycle.command, *(a for h in spec.lifecycle.pre_run for a in h),
             *(a for h in spec.lifecycle.post_success for a in h), *extra_refs]
    wanted = {r for t in texts for r in launch.runtime_refs(t, ctx)}
    if "JOB_COMPLETION_INDEX" in wanted and "JOB_COMPLETION_INDEX" not in values:
        sources["JOB_COMPLETION_INDEX"] = field_ref(rank_path)
    for name, path in DOWNWARD_NAMES.items():
        if name in wanted and name not in values:
            sources[name] = field_ref(path)
    for name in spec.environment.secrets:
        values.pop(name, None)
        sources[name] = {"secretKeyRef": {"name": secret_name(ctx.job_id), "key": name}}
    return Env(values, sources)
