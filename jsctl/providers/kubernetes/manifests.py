"""A job's manifest: every object, in apply order, and what the plan should say about them (pure)."""
from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from jsctl.model.job import JobContext
from jsctl.providers.kubernetes import names, pod as pods, podenv, workloads, yamltext
from jsctl.providers.kubernetes.request import ObjectRef
from jsctl.providers.kubernetes.settings import MASTER_PORT, KubernetesSettings
from jsctl.render import launch

RANK_PATHS = {"job": workloads.JOB_INDEX_PATH, "jobset": workloads.JOB_INDEX_PATH,
              "kubeflow": workloads.JOB_INDEX_PATH, "volcano": workloads.VOLCANO_INDEX_PATH}
STATUS_FROM = {"job": "the Job's status (and its pods')", "jobset": "the JobSet's status (JobSet controller)",
               "volcano": "the Volcano Job's status: status is tracked only where a Volcano controller runs",
               "kubeflow": "the TrainJob's status: status is tracked only where a Kubeflow Trainer controller runs"}


@dataclass(frozen=True)
class Manifest:
    objects: tuple[dict[str, Any], ...]
    workload: ObjectRef
    notes: tuple[str, ...]

    @property
    def text(self) -> str:
        return yamltext.dump_all(self.objects)

    @property
    def refs(self) -> tuple[ObjectRef, ...]:
        return tuple(workloads.ref(o) for o in self.objects)


def queue_of(ctx: JobContext, settings: KubernetesSettings) -> str | None:
    if settings.flavor == "volcano":
        return ctx.spec.queue or settings.volcano_queue
    return ctx.spec.queue or settings.queue


def build(ctx: JobContext, settings: KubernetesSettings) -> Manifest:
    flavor = settings.flavor
    pool = settings.pool(ctx.placement.pool)
    ds_text = launch.deepspeed_config(ctx)
    store = pods.storage(ctx, settings, ds_text is not None)
    ds_path = posixpath.join(pods.DEEPSPEED_DIR, launch.DEEPSPEED_CONFIG_FILE) if ds_text else None
    env = podenv.build(ctx, names.master_host(ctx.job_id, flavor, settings.namespace), MASTER_PORT,
                       RANK_PATHS[flavor], store.paths, ds_path,
                       drop=workloads.TRAINER_PET if flavor == "kubeflow" else ())
    subdomain = ctx.job_id if flavor == "job" else None
    pod = {"metadata": pods.pod_metadata(ctx), "spec": pods.pod_spec(ctx, settings, pool, env, store, subdomain)}
    if flavor == "kubeflow":
        pod["spec"].pop("initContainers", None)  # a TrainJob cannot add containers (validate warns)
    meta = pods.metadata(ctx, settings, ctx.job_id)
    queue = queue_of(ctx, settings)
    objects: list[dict[str, Any]] = []
    if ds_text:
        objects.append({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": pods.metadata(ctx, settings, names.deepspeed_config_map(ctx.job_id)),
                        "data": {launch.DEEPSPEED_CONFIG_FILE: ds_text}})
    if flavor == "job":
        objects += workloads.job(ctx, meta, pod, queue)
    elif flavor == "jobset":
        objects += workloads.jobset(ctx, meta, pod, queue, pods.post_success_pod(ctx, settings, pool, env, store))
    elif flavor == "volcano":
        objects += workloads.volcano(ctx, meta, pod, queue)
    else:
        objects += workloads.trainjob(ctx, meta, pod, queue, settings.training_runtime)
    workload = workloads.ref(objects[-1])
    return Manifest(tuple(objects), workload, tuple(notes(ctx, settings, objects, store, queue, ds_path)))


def notes(ctx: JobContext, settings: KubernetesSettings, objects: list[dict[str, Any]], store: pods.Storage,
          queue: str | None, ds_path: str | None) -> list[str]:
    flavor = settings.flavor
    spec = ctx.spec
    out = [f"{flavor}: " + ", ".join(f"{o['kind']} {o['metadata']['name']}" for o in objects)
           + f" in namespace {settings.namespace}; status from {STATUS_FROM[flavor]}"]
    if flavor in ("volcano", "kubeflow"):
        crd = {"volcano": "jobs.batch.volcano.sh", "kubeflow": "trainjobs.trainer.kubeflow.org"}[flavor]
        out[0] += f" (CRD {crd})"
    out.append(f"rendezvous: MASTER_ADDR {names.master_host(ctx.job_id, flavor, settings.namespace)}, "
               f"MASTER_PORT {MASTER_PORT}; NODE_RANK from the pod's index"
               + ("; Trainer sets PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT"
                  if flavor == "kubeflow" else ""))
    if flavor == "volcano":
        out.append("jsctl pause/resume: not for Volcano Jobs (no suspend); cancel and apply again instead")
    if queue and flavor == "volcano":
        out.append(f"Volcano queue {queue}")
    elif queue:
        out.append(f"Kueue: LocalQueue {queue} (created suspended; Kueue admits it)")
    elif flavor == "volcano":
        out.append("Volcano queue default")
    if ctx.depends_on:
        out.append("after " + ", ".join(ctx.depends_on) + ": Kubernetes has no dependencies between jobs; "
                   "jsctl apply waits for them to succeed, then submits this job")
    for m in (*spec.inputs, *spec.outputs):
        rule = settings.storage_rule(m.path)
        if rule is not None:
            where = f"PVC {rule.pvc}" + (f" (subPath under {rule.sub_path})" if rule.sub_path else "") \
                if rule.pvc else f"hostPath under {rule.host_path}"
            out.append(f"storage {m.name}: {m.path} → {store.paths[m.name]} from {where}")
    if store.unmapped:
        out.append("not mounted (no storage prefix of the cluster covers them): "
                   + ", ".join(f"{m.name} {m.path}" for m in store.unmapped))
    if spec.environment.secrets:
        out.append(f"secrets {', '.join(spec.environment.secrets)}: from Secret {names.secret_name(ctx.job_id)}, "
                   "created by jsctl apply from its environment")
    if spec.lifecycle.pre_run and flavor != "kubeflow":
        out.append(f"pre_run: {len(spec.lifecycle.pre_run)} init container(s), run on the first pod")
    if spec.lifecycle.pre_run or spec.lifecycle.post_success or spec.lifecycle.post_failure:
        skipped = [k for k, v in (("pre_run", flavor == "kubeflow" and spec.lifecycle.pre_run),
                                  ("post_success", flavor != "jobset" and spec.lifecycle.post_success),
                                  ("post_failure", spec.lifecycle.post_failure)) if v]
        if skipped:
            out.append(f"not run on Kubernetes ({flavor}): {', '.join(skipped)}")
    if spec.lifecycle.post_success and flavor == "jobset":
        out.append(f"post_success: replicated job {workloads.POST_JOB} (one pod), after {names.REPLICATED_JOB} "
                   "completes (dependsOn); its failure fails the JobSet")
    if ds_path:
        out.append(f"DeepSpeed config: ConfigMap {names.deepspeed_config_map(ctx.job_id)} mounted at {ds_path} "
                   f"(${launch.DEEPSPEED_CONFIG_ENV})")
    if launch.command(ctx)[:3] == launch.LAUNCHER:
        out.append("jsruntime: the image must have it installed (python -m jsruntime.launch starts the command)")
    return out
