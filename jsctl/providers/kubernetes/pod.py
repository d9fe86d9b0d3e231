"""The pod every flavor runs: image, command, environment, resources, scheduling, storage, hooks."""
from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import Any, Mapping

from jsctl.model.job import JobContext
from jsctl.model.spec import Mount
from jsctl.providers.kubernetes import names, podenv
from jsctl.providers.kubernetes.podenv import Env
from jsctl.providers.kubernetes.request import ADDRESS_ANNOTATION, GENERATION_LABEL, JOB_ID_LABEL, LABELS_ANNOTATION
from jsctl.providers.kubernetes.settings import KubernetesSettings, Pool
from jsctl.render import launch

DEEPSPEED_DIR = "/etc/jsctl/deepspeed"
GRACE_S = 180  # SIGTERM → SIGKILL: torchrun's 120 s shutdown timeout for a checkpoint, and margin
# the first pod runs pre_run (the launch contract: hooks run once, on the first node); the others wait
# for it at torchrun's rendezvous. The hook's words are this shell's arguments: nothing is interpreted.
FIRST_POD_ONLY = 'if [ "${NODE_RANK:-0}" != 0 ]; then exit 0; fi; exec "$@"'


def memory_text(n: int) -> str:
    for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def job_labels(ctx: JobContext) -> dict[str, str]:
    """jsctl's labels: on every object of the job."""
    return {JOB_ID_LABEL: ctx.job_id, GENERATION_LABEL: str(ctx.generation)}


def metadata(ctx: JobContext, settings: KubernetesSettings, name: str, labels: Mapping[str, str] | None = None,
             ) -> dict[str, Any]:
    return {"name": name, "namespace": settings.namespace, "labels": {**job_labels(ctx), **(labels or {})},
            "annotations": {ADDRESS_ANNOTATION: ctx.address}}


def pod_metadata(ctx: JobContext) -> dict[str, Any]:
    """The pods also carry the job's labels (those Kubernetes accepts) and all of them as JSON."""
    mine = {k: v for k, v in ctx.spec.labels if names.label_key(k) and names.label_value(v)}
    return {"labels": {**dict(sorted(mine.items())), **job_labels(ctx)},
            "annotations": {ADDRESS_ANNOTATION: ctx.address,
                            LABELS_ANNOTATION: json.dumps(dict(ctx.spec.labels), sort_keys=True,
                                                          ensure_ascii=False)}}


@dataclass(frozen=True)
class Storage:
    volumes: tuple[dict[str, Any], ...]
    mounts: tuple[dict[str, Any], ...]  # volumeMounts
    paths: Mapping[str, str]  # storage name → path in the container (JETSTREAM_MOUNT_*)
    unmapped: tuple[Mount, ...]  # entries no storage prefix covers: not mounted


def storage(ctx: JobContext, settings: KubernetesSettings, deepspeed: bool) -> Storage:
    """Storage entries as PVC or hostPath volumes per the inventory's prefixes; the DeepSpeed ConfigMap."""
    volumes: dict[str, dict[str, Any]] = {}
    mounts: list[dict[str, Any]] = []
    paths: dict[str, str] = {}
    unmapped: list[Mount] = []
    spec = ctx.spec
    for m in (*spec.inputs, *spec.outputs):
        target = m.mount_path or m.path
        paths[m.name] = target
        rule = settings.storage_rule(m.path)
        if rule is None:
            unmapped.append(m)
            continue
        rest = rule.rest(posixpath.normpath(m.path))
        output = m in spec.outputs
        if rule.pvc:
            vname = f"pvc-{names.env_safe(rule.pvc)}"
            volumes.setdefault(vname, {"name": vname, "persistentVolumeClaim": {"claimName": rule.pvc}})
            mount = {"name": vname, "mountPath": target}
            sub = posixpath.join(rule.sub_path or "", rest).strip("/")
            if sub:
                mount["subPath"] = sub
        else:
            vname = f"storage-{names.env_safe(m.name)}"
            if vname in volumes:  # names that differ only in case or punctuation
                vname = f"{vname}-{len(volumes)}"
            host = posixpath.join(rule.host_path or "/", rest) if rest else rule.host_path
            volumes[vname] = {"name": vname, "hostPath": {"path": host, **({"type": "DirectoryOrCreate"}
                                                                          if output else {})}}
            mount = {"name": vname, "mountPath": target}
        if not output:
            mount["readOnly"] = True
        mounts.append(mount)
    if deepspeed:
        volumes["deepspeed-config"] = {"name": "deepspeed-config",
                                       "configMap": {"name": names.deepspeed_config_map(ctx.job_id)}}
        mounts.append({"name": "deepspeed-config", "mountPath": DEEPSPEED_DIR, "readOnly": True})
    return Storage(tuple(volumes.values()), tuple(mounts), paths, tuple(unmapped))


def resources(ctx: JobContext, settings: KubernetesSettings, pool: Pool | None) -> dict[str, Any]:
    """requests and limits of one pod (a node's share): GPUs, CPUs and memory from the per-GPU figures,
    and the pool's interconnect resources when the job spans nodes."""
    p = ctx.placement
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    if p.cpus_per_task:
        requests["cpu"] = str(p.cpus_per_task)
    if p.memory_per_node:
        requests["memory"] = limits["memory"] = memory_text(p.memory_per_node)
    extended = {settings.gpu_resource: p.gpus_per_node} if p.gpus_per_node else {}
    if pool is not None and p.nodes > 1:
        extended.update(pool.interconnect_resources)
    for k, v in extended.items():
        requests[k] = limits[k] = str(v)
    out: dict[str, Any] = {}
    if requests:
        out["requests"] = requests
    if limits:
        out["limits"] = limits
    return out


def argv_fields(argv: tuple[str, ...], ctx: JobContext, env: Env) -> dict[str, Any]:
    """Exec form: `command` is the program, `args` the rest (no shell); `$` escaped for Kubernetes."""
    words = [podenv.kube_text(a, ctx, env.names) for a in argv]
    return {"command": words[:1], "args": words[1:]} if len(words) > 1 else {"command": words}


def container(ctx: JobContext, env: Env, res: dict[str, Any], store: Storage, argv: tuple[str, ...],
              name: str = names.CONTAINER) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": ctx.spec.environment.image or ""}
    c.update(argv_fields(argv, ctx, env))
    c["env"] = env.entries(ctx)
    if res:
        c["resources"] = res
    if store.mounts:
        c["volumeMounts"] = [dict(m) for m in store.mounts]
    return c


def init_containers(ctx: JobContext, env: Env, store: Storage) -> list[dict[str, Any]]:
    """pre_run hooks, in order, in the job's image, with its environment and storage: on the first pod."""
    out = []
    for i, hook in enumerate(ctx.spec.lifecycle.pre_run, 1):
        c = container(ctx, env, {}, store, ("/bin/sh", "-c", FIRST_POD_ONLY, f"pre-run-{i}", *hook), f"pre-run-{i}")
        out.append(c)
    return out


def pod_spec(ctx: JobContext, settings: KubernetesSettings, pool: Pool | None, env: Env, store: Storage,
             subdomain: str | None = None) -> dict[str, Any]:
    """The pod's spec; restartPolicy Never (what a podFailurePolicy requires: jsctl's recovery decides)."""
    spec: dict[str, Any] = {"restartPolicy": "Never"}
    if subdomain:
        spec["subdomain"] = subdomain
    priority = settings.priority_classes.get(ctx.spec.priority)
    if priority:
        spec["priorityClassName"] = priority
    if settings.service_account:
        spec["serviceAccountName"] = settings.service_account
    if settings.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": n} for n in settings.image_pull_secrets]
    if pool is not None and pool.node_selector:
        spec["nodeSelector"] = dict(pool.node_selector)
    if pool is not None and pool.tolerations:
        spec["tolerations"] = [dict(t) for t in pool.tolerations]
    if ctx.spec.checkpoint_output is not None:
        spec["terminationGracePeriodSeconds"] = GRACE_S
    inits = init_containers(ctx, env, store)
    if inits:
        spec["initContainers"] = inits
    spec["containers"] = [container(ctx, env, resources(ctx, settings, pool), store, launch.command(ctx))]
    if store.volumes:
        spec["volumes"] = [dict(v) for v in store.volumes]
    return spec


def post_success_pod(ctx: JobContext, settings: KubernetesSettings, pool: Pool | None, env: Env, store: Storage,
                     ) -> dict[str, Any] | None:
    """One pod that runs the post_success hooks in order (all but the last as init containers), in the
    job's image with its environment and storage, where the job ran; None without hooks."""
    hooks = ctx.spec.lifecycle.post_success
    if not hooks:
        return None
    steps = [container(ctx, env, {}, store, h, f"post-success-{i}") for i, h in enumerate(hooks, 1)]
    spec = pod_spec(ctx, settings, pool, env, store)
    spec.pop("initContainers", None)
    spec.pop("terminationGracePeriodSeconds", None)
    if len(steps) > 1:
        spec = {**{k: v for k, v in spec.items() if k != "containers"}, "initContainers": steps[:-1],
                "containers": steps[-1:]}
    else:
        spec["containers"] = steps
    if "volumes" in spec:  # after the containers, as pod_spec writes them
        spec["volumes"] = spec.pop("volumes")
    return {"metadata": pod_metadata(ctx), "spec": spec}
