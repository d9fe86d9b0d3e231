"""The workload object of each flavor, around the pod of pod.py: an Indexed Job (with its headless
Service), a JobSet, a Volcano Job, a Kubeflow TrainJob. Fields the controllers' webhooks would
default are written out, so that the objects work where no webhook runs."""
from __future__ import annotations

from typing import Any

from jsctl.model.job import JobContext
from jsctl.model.status import REQUEUE_EXIT_CODE
from jsctl.providers.kubernetes import names
from jsctl.providers.kubernetes.request import JOB_ID_LABEL, ObjectRef

KUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_INDEX_PATH = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
VOLCANO_INDEX_PATH = "metadata.labels['volcano.sh/task-index']"
TRAINER_MANAGER = "jsctl.dev/jsctl"
POST_JOB = "post-success"  # the JobSet's replicated job that runs post_success hooks
# set by Kubeflow Trainer's torch runtime in the trainer container (its validation refuses them in trainer.env)
TRAINER_PET = ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT")


def pod_failure_policy(ctx: JobContext) -> dict[str, Any]:
    """Exit 75 (the runtime checkpointed after a preemption signal) and disruptions replace the pod
    without counting; with recovery.restart_on_exit_codes, any other failing code fails the job."""
    rules: list[dict[str, Any]] = [
        {"action": "Ignore", "onExitCodes": {"containerName": names.CONTAINER, "operator": "In",
                                             "values": [REQUEUE_EXIT_CODE]}},
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]
    codes = ctx.spec.recovery.restart_on_exit_codes
    if codes:
        rules.append({"action": "FailJob", "onExitCodes": {
            "containerName": names.CONTAINER, "operator": "NotIn",
            "values": sorted({c for c in codes if c} | {REQUEUE_EXIT_CODE})}})
    return {"rules": rules}


def _suspend_and_queue(meta: dict[str, Any], spec: dict[str, Any], queue: str | None) -> None:
    if queue:
        meta["labels"][KUEUE_LABEL] = queue
        spec["suspend"] = True


def indexed_job_spec(ctx: JobContext, pod: dict[str, Any], backoff: int) -> dict[str, Any]:
    n = ctx.placement.nodes
    spec: dict[str, Any] = {"completionMode": "Indexed", "completions": n, "parallelism": n,
                            "backoffLimit": backoff, "podFailurePolicy": pod_failure_policy(ctx)}
    if ctx.spec.compute.time_limit_s:
        spec["activeDeadlineSeconds"] = ctx.spec.compute.time_limit_s
    spec["template"] = pod
    return spec


def job(ctx: JobContext, meta: dict[str, Any], pod: dict[str, Any], queue: str | None) -> list[dict[str, Any]]:
    """A headless Service (the pods' DNS names) and an Indexed Job; recovery.max_restarts per node."""
    service = {"apiVersion": "v1", "kind": "Service", "metadata": dict(meta, labels=dict(meta["labels"])),
               "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                        "selector": {JOB_ID_LABEL: ctx.job_id}}}
    spec = indexed_job_spec(ctx, pod, ctx.spec.recovery.max_restarts * ctx.placement.nodes)
    body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}
    _suspend_and_queue(meta, spec, queue)
    return [service, body]


def jobset(ctx: JobContext, meta: dict[str, Any], pod: dict[str, Any], queue: str | None,
           post: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One replicated job of N pods; a failure recreates them all (recovery.max_restarts times). With
    post_success hooks, a second replicated job of one pod runs them once the first completes
    (dependsOn); its failure fails the JobSet without a restart."""
    policy: dict[str, Any] = {"maxRestarts": ctx.spec.recovery.max_restarts, "restartStrategy": "Recreate"}
    rules = []
    if post is not None:
        rules.append({"name": "post-success-failed", "action": "FailJobSet", "targetReplicatedJobs": [POST_JOB]})
    if ctx.spec.recovery.restart_on_exit_codes:
        rules.append({"name": "not-restartable", "action": "FailJobSet", "onJobFailureReasons": ["PodFailurePolicy"]})
    if rules:
        policy["rules"] = rules
    template_meta = {"labels": dict(meta["labels"]), "annotations": dict(meta["annotations"])}
    replicated = [{"name": names.REPLICATED_JOB, "groupName": "default", "replicas": 1, "template": {
        "metadata": template_meta, "spec": indexed_job_spec(ctx, pod, 0)}}]
    if post is not None:
        replicated.append({"name": POST_JOB, "groupName": "default", "replicas": 1,
                           "dependsOn": [{"name": names.REPLICATED_JOB, "status": "Complete"}], "template": {
                               "metadata": template_meta, "spec": {"completionMode": "Indexed", "completions": 1,
                                                                   "parallelism": 1, "backoffLimit": 0,
                                                                   "template": post}}})
    spec: dict[str, Any] = {
        "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True, "subdomain": ctx.job_id},
        "successPolicy": {"operator": "All", "targetReplicatedJobs": [r["name"] for r in replicated]},
        "startupPolicy": {"startupPolicyOrder": "AnyOrder"},
        "failurePolicy": policy,
        "replicatedJobs": replicated}
    _suspend_and_queue(meta, spec, queue)
    return [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta, "spec": spec}]


def volcano(ctx: JobContext, meta: dict[str, Any], pod: dict[str, Any], queue: str | None) -> list[dict[str, Any]]:
    """A gang of N pods (minAvailable N); the svc plugin gives them DNS names, env their index."""
    rec = ctx.spec.recovery
    policies: list[dict[str, Any]] = [{"exitCode": REQUEUE_EXIT_CODE, "action": "RestartJob"},
                                      {"event": "PodEvicted", "action": "RestartJob"}]
    codes = sorted({c for c in rec.restart_on_exit_codes if c and c != REQUEUE_EXIT_CODE})
    if rec.max_restarts and codes:
        policies += [{"exitCode": c, "action": "RestartJob"} for c in codes]
        policies.append({"event": "PodFailed", "action": "TerminateJob"})
    else:
        policies.append({"event": "PodFailed", "action": "RestartJob" if rec.max_restarts else "TerminateJob"})
    n = ctx.placement.nodes
    pod = dict(pod, spec=dict(pod["spec"]))
    if ctx.spec.compute.time_limit_s:
        pod["spec"]["activeDeadlineSeconds"] = ctx.spec.compute.time_limit_s
    spec: dict[str, Any] = {"schedulerName": "volcano", "minAvailable": n, "queue": queue or "default",
                            # RestartJob counts against maxRetry also after a preemption checkpoint (exit 75):
                            # room for as many requeues as the local supervisor allows (100)
                            "maxRetry": max(rec.max_restarts, 1) + (100 if ctx.spec.checkpoint_output else 0),
                            "plugins": {"svc": ["--publish-not-ready-addresses=true"], "env": []},
                            "policies": policies}
    if pod["spec"].get("priorityClassName"):
        spec["priorityClassName"] = pod["spec"]["priorityClassName"]
    spec["tasks"] = [{"name": names.REPLICATED_JOB, "replicas": n, "minAvailable": n, "template": pod}]
    return [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": meta, "spec": spec}]


def trainjob(ctx: JobContext, meta: dict[str, Any], pod: dict[str, Any], queue: str | None,
             runtime: str) -> list[dict[str, Any]]:
    """The trainer (image, command, nodes, resources, env) and the rest of the pod as a runtime patch of
    the torch runtime's `node` job (Trainer sets PET_NNODES, PET_NODE_RANK, ... itself)."""
    p = ctx.placement
    main = pod["spec"]["containers"][0]
    trainer: dict[str, Any] = {"image": main["image"], "command": main["command"]}
    if main.get("args"):
        trainer["args"] = main["args"]
    trainer.update({"numNodes": p.nodes, "numProcPerNode": max(p.gpus_per_node, 1)})
    if main.get("resources"):
        trainer["resourcesPerNode"] = main["resources"]
    trainer["env"] = main["env"]
    patch_pod = {k: v for k, v in pod["spec"].items()
                 if k in ("nodeSelector", "tolerations", "volumes", "serviceAccountName", "imagePullSecrets",
                          "terminationGracePeriodSeconds")}
    if main.get("volumeMounts"):
        patch_pod["containers"] = [{"name": names.CONTAINER, "volumeMounts": main["volumeMounts"]}]
    patch = {"manager": TRAINER_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": names.REPLICATED_JOB, "template": {"spec": {"template": {
            "metadata": pod["metadata"], "spec": patch_pod}}}}]}}}}
    spec: dict[str, Any] = {"runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime",
                                           "name": runtime}}
    if ctx.spec.compute.time_limit_s:
        spec["activeDeadlineSeconds"] = ctx.spec.compute.time_limit_s
    spec["trainer"] = trainer
    spec["runtimePatches"] = [patch]
    _suspend_and_queue(meta, spec, queue)
    return [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": meta, "spec": spec}]


def ref(obj: dict[str, Any]) -> ObjectRef:
    return ObjectRef(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])
