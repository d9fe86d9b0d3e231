"""The job definition and SubmitJob body for a job (pure): a single-node container job, or a
multinode parallel job (nodeProperties) for more than one node, whose containers run the launch
contract's `sh -c` entry script (jsctl.providers.cloud.entry_script) after the prologue below."""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from jsctl.model.job import JobContext
from jsctl.model.status import REQUEUE_EXIT_CODE
from jsctl.providers.aws_batch.request import ADDRESS_TAG, GENERATION_TAG, HASH_TAG, JOB_ID_TAG
from jsctl.providers.aws_batch.settings import AwsSettings
from jsctl.providers.cloud import entry_script

MIB = 2**20
MIN_TIMEOUT_S = 60  # attemptDurationSeconds' lower bound
MAX_ATTEMPTS = 10
MAX_EVALUATE_ON_EXIT = 5
# AWS tags: up to 128/256 characters of letters, digits, spaces and _.:/=+-@ (keys not starting aws:)
TAG_KEY = re.compile(r"^(?!aws:)[\w .:/=+\-@]{1,128}$")
TAG_VALUE = re.compile(r"^[\w .:/=+\-@]{0,256}$")

# What the container does before the launch contract: AWS Batch sets AWS_BATCH_JOB_NODE_INDEX,
# AWS_BATCH_JOB_MAIN_NODE_INDEX and AWS_BATCH_JOB_NUM_NODES on every node of a multinode job, and
# AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS on every node but the main one; the main node uses its
# own address. A single-node job rendezvous on itself. Attempts count from 1.
PROLOGUE = (
    'if [ -n "${AWS_BATCH_JOB_NUM_NODES:-}" ]; then',
    '  NODE_RANK="${AWS_BATCH_JOB_NODE_INDEX:-0}"',
    '  if [ "${AWS_BATCH_JOB_NODE_INDEX:-0}" = "${AWS_BATCH_JOB_MAIN_NODE_INDEX:-0}" ]; then',
    '    MASTER_ADDR="$(hostname -i 2>/dev/null | cut -d" " -f1 || true)"',
    '    MASTER_ADDR="${MASTER_ADDR:-$(hostname)}"',
    '  else',
    '    MASTER_ADDR="${AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS:?not set on a worker node}"',
    '  fi',
    'else',
    '  NODE_RANK=0',
    '  MASTER_ADDR=127.0.0.1',
    'fi',
    'export NODE_RANK MASTER_ADDR',
    'export JETSTREAM_NODE_RANK="$NODE_RANK"',
    'export JETSTREAM_RESTART_COUNT="$(( ${AWS_BATCH_JOB_ATTEMPT:-1} - 1 ))"',
)


def content_hash(body: Any) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def mounts(ctx: JobContext) -> dict[str, str]:
    return {m.name: m.mount_path or m.path for m in (*ctx.spec.inputs, *ctx.spec.outputs)}


def resources(ctx: JobContext) -> list[dict[str, str]]:
    p = ctx.placement
    vcpus = p.cpus_per_task or max(1, 4 * p.gpus_per_node)
    memory = p.memory_per_node or max(2048, 16 * 1024 * p.gpus_per_node) * MIB
    out = [{"type": "VCPU", "value": str(vcpus)}, {"type": "MEMORY", "value": str(-(-memory // MIB))}]
    if p.gpus_per_node:
        out.insert(0, {"type": "GPU", "value": str(p.gpus_per_node)})
    return out


def retry_strategy(ctx: JobContext) -> dict[str, Any]:
    """Exit 75 (a preemption checkpoint) and a reclaimed spot host retry; other codes per
    recovery.restart_on_exit_codes (none listed: any failure retries while attempts remain)."""
    rec = ctx.spec.recovery
    attempts = min(MAX_ATTEMPTS, max(2, rec.max_restarts + 1))
    rules = [{"onStatusReason": "Host EC2*", "action": "RETRY"},
             {"onExitCode": str(REQUEUE_EXIT_CODE), "action": "RETRY"}]
    codes = [c for c in rec.restart_on_exit_codes if c != REQUEUE_EXIT_CODE]
    rules += [{"onExitCode": str(c), "action": "RETRY"} for c in codes[:MAX_EVALUATE_ON_EXIT - 3]]
    if codes or rec.max_restarts == 0:
        rules.append({"onExitCode": "*", "action": "EXIT"})
    return {"attempts": attempts, "evaluateOnExit": rules}


def tags(ctx: JobContext) -> tuple[dict[str, str], list[str]]:
    """jsctl's tags and the job's labels that are valid AWS tags; (tags, labels left out)."""
    out = {ADDRESS_TAG: ctx.address, JOB_ID_TAG: ctx.job_id, GENERATION_TAG: str(ctx.generation)}
    skipped = []
    for key, value in ctx.spec.labels:
        if TAG_KEY.match(key) and TAG_VALUE.match(value) and not key.startswith("jsctl:"):
            out[key] = value
        else:
            skipped.append(key)
    return out, skipped


def container(ctx: JobContext, settings: AwsSettings, secrets: list[dict[str, str]]) -> dict[str, Any]:
    script = entry_script(ctx, PROLOGUE, mounts(ctx))
    body: dict[str, Any] = {
        "image": ctx.spec.environment.image or "",
        "command": ["sh", "-c", script],
        "resourceRequirements": resources(ctx),
        "logConfiguration": {"logDriver": "awslogs", "options": {"awslogs-group": settings.log_group,
                                                                  "awslogs-region": settings.region}},
    }
    if secrets:
        body["secrets"] = secrets
    if settings.execution_role_arn:
        body["executionRoleArn"] = settings.execution_role_arn
    if settings.job_role_arn:
        body["jobRoleArn"] = settings.job_role_arn
    return body


def secret_refs(ctx: JobContext, settings: AwsSettings) -> tuple[list[dict[str, str]], tuple[tuple[str, str], ...]]:
    """`secrets: [{name, valueFrom}]`: the inventory's ARN, else the SSM parameter submit writes."""
    refs, written = [], []
    for name in ctx.spec.environment.secrets:
        arn = settings.secrets.get(name)
        if arn is None:
            arn = f"{settings.secret_prefix}/{ctx.job_id}/{name}"
            written.append((name, arn))
        refs.append({"name": name, "valueFrom": arn})
    return refs, tuple(written)


def build(ctx: JobContext, settings: AwsSettings) -> tuple[dict[str, Any], dict[str, Any], tuple[tuple[str, str], ...],
                                                          list[str]]:
    """(RegisterJobDefinition body, SubmitJob body, SSM parameters to write, labels not tagged)."""
    p = ctx.placement
    refs, written = secret_refs(ctx, settings)
    job_tags, skipped = tags(ctx)
    spec = container(ctx, settings, refs)
    definition: dict[str, Any] = {"jobDefinitionName": ctx.job_id, "platformCapabilities": ["EC2"]}
    if p.nodes > 1:
        definition["type"] = "multinode"
        definition["nodeProperties"] = {"numNodes": p.nodes, "mainNode": 0,
                                        "nodeRangeProperties": [{"targetNodes": "0:", "container": spec}]}
    else:
        definition["type"] = "container"
        definition["containerProperties"] = spec
    definition["retryStrategy"] = retry_strategy(ctx)
    if ctx.spec.compute.time_limit_s:
        definition["timeout"] = {"attemptDurationSeconds": max(MIN_TIMEOUT_S, ctx.spec.compute.time_limit_s)}
    digest = content_hash(definition)
    definition["tags"] = {**job_tags, HASH_TAG: digest}
    submit = {"jobName": ctx.job_id, "jobQueue": settings.queue(p.capacity), "tags": {**job_tags, HASH_TAG: digest},
              "propagateTags": True}
    return definition, submit, written, skipped
