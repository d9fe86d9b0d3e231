"""The Batch v1 Job a jsctl job becomes (pure): one task group of `nodes` tasks, one per VM, each running
the job's image with `/bin/sh -c SCRIPT`, where SCRIPT (jsctl.providers.cloud.entry_script) derives
MASTER_ADDR from the first host of BATCH_HOSTS_FILE and NODE_RANK from BATCH_TASK_INDEX, exports the
launch contract and execs the launched command.

No computeResource: with taskCountPerNode 1 each task has its VM (the machine type) to itself. Storage
is not mounted (the plan says so): the job sees its paths as written."""
from __future__ import annotations

from typing import Any

from jsctl.model.job import JobContext
from jsctl.model.status import REQUEUE_EXIT_CODE
from jsctl.providers.cloud import entry_script
from jsctl.providers.gcp_batch.request import ADDRESS_LABEL, GENERATION_LABEL, JOB_ID_LABEL
from jsctl.providers.gcp_batch.settings import GcpSettings, label_value, valid_label
from jsctl.render import launch, shquote

MAX_RETRIES = 10  # Batch's limit for maxRetryCount
SPOT_PREEMPTED = 50001  # the exit code Batch gives a task whose Spot VM was preempted
DEEPSPEED_PATH = "/tmp/jsctl/" + launch.DEEPSPEED_CONFIG_FILE
ACCELERATORS = {"a100-80gb": "nvidia-a100-80gb", "a100-40gb": "nvidia-tesla-a100", "a100": "nvidia-tesla-a100",
                "h100-80gb": "nvidia-h100-80gb", "h100": "nvidia-h100-80gb", "h200": "nvidia-h200-141gb",
                "l4": "nvidia-l4", "t4": "nvidia-tesla-t4", "v100": "nvidia-tesla-v100"}
PROLOGUE = (
    # the hosts file (requireHostsFile) lists the task group's VMs, task 0's first; `|| true`: a last
    # line without a newline makes `read` fail after it has set the variable (and the script runs set -e)
    'MASTER_ADDR=127.0.0.1',
    'if [ -n "${BATCH_HOSTS_FILE:-}" ] && [ -s "$BATCH_HOSTS_FILE" ]; then',
    '  read -r MASTER_ADDR _ < "$BATCH_HOSTS_FILE" || true',
    'fi',
    'export MASTER_ADDR',
    'export NODE_RANK="${BATCH_TASK_INDEX:-0}"',
    'export JETSTREAM_NODE_RANK="$NODE_RANK"',
    'export JETSTREAM_RESTART_COUNT="${BATCH_TASK_RETRY_ATTEMPT:-0}"',
)


def mounts(ctx: JobContext) -> dict[str, str]:
    """Storage paths as the job sees them: Batch mounts nothing jsctl names (see the plan's note)."""
    return {m.name: m.mount_path or m.path for m in (*ctx.spec.inputs, *ctx.spec.outputs)}


def script(ctx: JobContext) -> str:
    prologue = list(PROLOGUE)
    ds = launch.deepspeed_config(ctx)
    if ds:
        prologue += ["mkdir -p /tmp/jsctl", f"cat > {shquote(DEEPSPEED_PATH)} <<'JSCTL_DEEPSPEED_EOF'",
                     ds.rstrip("\n"), "JSCTL_DEEPSPEED_EOF"]
    return entry_script(ctx, prologue, mounts(ctx), DEEPSPEED_PATH if ds else None)


def secret_resource(resource: str) -> str:
    """A mapped secret as secretVariables takes it: a version (`latest` when the mapping names none)."""
    return resource if "/versions/" in resource else resource + "/versions/latest"


def labels(ctx: JobContext) -> dict[str, str]:
    out = {k: v for k, v in ctx.spec.labels if valid_label(k, v)}
    out.update({ADDRESS_LABEL: label_value(ctx.address), JOB_ID_LABEL: label_value(ctx.job_id),
                GENERATION_LABEL: str(ctx.generation)})
    return dict(sorted(out.items()))


def recovery(ctx: JobContext) -> dict[str, Any]:
    """maxRetryCount and the one lifecycle policy Batch takes: exit 75 (the runtime checkpointed after a
    preemption signal) retries the task; so does a preempted Spot VM; other codes as
    recovery.restart_on_exit_codes says (none listed: any failure retries while restarts remain)."""
    rec = ctx.spec.recovery
    retries = MAX_RETRIES if ctx.spec.checkpoint_output else min(max(rec.max_restarts, 1), MAX_RETRIES)
    out: dict[str, Any] = {"maxRetryCount": retries}
    codes = {REQUEUE_EXIT_CODE} | ({SPOT_PREEMPTED} if ctx.placement.capacity == "spot" else set())
    if rec.max_restarts and not rec.restart_on_exit_codes:
        return out  # no policy: Batch retries any failure, maxRetryCount times
    if rec.max_restarts:
        codes |= {c for c in rec.restart_on_exit_codes if c}
    out["lifecyclePolicies"] = [{"action": "RETRY_TASK", "actionCondition": {"exitCodes": sorted(codes)}}]
    return out


def job(ctx: JobContext, settings: GcpSettings) -> dict[str, Any]:
    p = ctx.placement
    spec = ctx.spec
    container = {"imageUri": spec.environment.image or "", "entrypoint": "/bin/sh", "commands": ["-c", script(ctx)]}
    task: dict[str, Any] = {"runnables": [{"container": container}]}
    if spec.compute.time_limit_s:
        task["maxRunDuration"] = f"{spec.compute.time_limit_s}s"
    task.update(recovery(ctx))
    secrets = {s: secret_resource(settings.secrets[s]) for s in spec.environment.secrets if s in settings.secrets}
    if secrets:
        task["environment"] = {"secretVariables": dict(sorted(secrets.items()))}
    group: dict[str, Any] = {"taskCount": str(p.nodes), "parallelism": str(p.nodes), "taskCountPerNode": "1",
                             "taskSpec": task}
    if p.nodes > 1:
        group.update(requireHostsFile=True, permissiveSsh=True)
    policy: dict[str, Any] = {"machineType": p.pool,
                              "provisioningModel": "SPOT" if p.capacity == "spot" else "STANDARD"}
    if p.gpus_per_node and p.gpu_type:
        policy["accelerators"] = [{"type": ACCELERATORS.get(p.gpu_type, f"nvidia-{p.gpu_type}"),
                                   "count": str(p.gpus_per_node)}]
    instance: dict[str, Any] = {"policy": policy}
    if p.gpus_per_node:
        instance["installGpuDrivers"] = True
    allocation: dict[str, Any] = {"location": {"allowedLocations": [f"regions/{settings.region}"]},
                                  "instances": [instance]}
    if settings.service_account:
        allocation["serviceAccount"] = {"email": settings.service_account}
    if settings.network or settings.subnetwork:
        nic = {k: v for k, v in (("network", settings.network), ("subnetwork", settings.subnetwork)) if v}
        if settings.no_external_ip:
            nic["noExternalIpAddress"] = True
        allocation["network"] = {"networkInterfaces": [nic]}
    return {"taskGroups": [group], "allocationPolicy": allocation, "labels": labels(ctx),
            "logsPolicy": {"destination": "CLOUD_LOGGING"}}
