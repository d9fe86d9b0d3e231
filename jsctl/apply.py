"""Apply a Plan: under the state lock, walk the DAG, submit, and record each job as soon as it is live."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable

from jsctl.config.workspace import Workspace
from jsctl.errors import JsctlError, PlanError, ProviderError
from jsctl.plan import dag
from jsctl.plan.model import Plan, ResourceChange, placement_dict
from jsctl.providers import registry
from jsctl.model.status import JobHandle, LiveStatus
from jsctl.providers.base import ProviderClient
from jsctl.model.state import State
from jsctl.state.store import StateStore

Echo = Callable[[str], None]


@dataclass
class ApplyResult:
    added: int = 0
    changed: int = 0
    destroyed: int = 0
    skipped: dict[str, str] = field(default_factory=dict)  # address -> why it was not submitted
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.skipped and not self.failed


class Clients:
    """One client per cluster, made on first use."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._made: dict[str, ProviderClient] = {}

    def get(self, cluster_name: str) -> ProviderClient:
        if cluster_name not in self._made:
            cluster = self.workspace.cluster(cluster_name)
            if cluster is None:
                raise ProviderError(f"cluster '{cluster_name}' is not in this workspace any more",
                                    hint="restore it in jsctl.yaml to manage its jobs")
            self._made[cluster_name] = registry.get(cluster.provider).client(cluster, self.workspace.dir)
        return self._made[cluster_name]


def check_fresh(plan: Plan, state: State, state_exists: bool) -> None:
    if plan.state_exists and (state.lineage != plan.prior_lineage or state.serial != plan.prior_serial):
        raise PlanError(f"the saved plan is stale: it was made against state serial {plan.prior_serial}, "
                        f"lineage {plan.prior_lineage[:8]}…, and the state is now serial {state.serial}, "
                        f"lineage {state.lineage[:8]}…", hint="run jsctl plan again and apply the new plan")
    if not plan.state_exists and state_exists and state.resources:
        raise PlanError("the saved plan is stale: it was made before any state existed, and state exists now",
                        hint="run jsctl plan again and apply the new plan")


def secret_values(plan: Plan) -> dict[str, str]:
    needed = sorted({s for c in plan.changes if c.action in ("create", "replace") for s in c.secrets})
    missing = [s for s in needed if s not in os.environ]
    if missing:
        raise JsctlError(f"secret{'s' if len(missing) > 1 else ''} not set in your environment: "
                         f"{', '.join(missing)}", hint="export them before apply; their values are passed to "
                         "the job and never written to plan files or state")
    return {s: os.environ[s] for s in needed}


def record_for(c: ResourceChange, handle: JobHandle, now: float) -> dict:
    return {
        "address": c.address, "name": c.name, "provider": c.provider, "cluster": c.cluster, "job_id": c.job_id,
        "generation": c.generation, "handle": str(handle), "spec": c.spec,
        "artifact_digest": c.artifact.digest if c.artifact else None,
        "artifact": c.artifact.to_dict() if c.artifact else None, "placement": placement_dict(c.placement),
        "strategy": c.strategy, "depends_on": list(c.depends_on), "outputs": c.outputs,
        "status": {"phase": "PENDING", "engine_state": "submitted"},
        "created_at": now, "updated_at": now, "submitted_at": now,
        "cost_basis": {"price_per_hour": c.price_per_hour, "capacity": c.placement.capacity if c.placement else None,
                       "bound": c.cost.bound if c.cost else c.run_bound,
                       "estimate": c.cost.expected if c.cost else c.run_bound},
        "events": [{"time": now, "event": f"submitted as {handle}"}],
    }


def status_dict(s: LiveStatus) -> dict:
    return {"phase": s.phase, "engine_state": s.engine_state, "reason": s.reason, "started_at": s.started_at,
            "ended_at": s.ended_at, "exit_code": s.exit_code, "restarts": s.restarts}


def apply(plan: Plan, workspace: Workspace, store: StateStore, echo: Echo, poll_s: float = 1.0) -> ApplyResult:
    """Carry out a plan. The caller holds the state lock."""
    state = store.read()
    check_fresh(plan, state, os.path.exists(store.path))
    secrets = secret_values(plan)
    clients = Clients(workspace)
    result = ApplyResult()
    for c in plan.changes:
        if c.action in ("delete", "replace") and c.before and c.before.get("handle"):
            handle = JobHandle.parse(c.before["handle"])
            echo(f"{c.address}: stopping {handle}...")
            clients.get(handle.cluster).cancel(handle)
            if c.action == "delete":
                state.remove(c.address)
                store.write(state)
                result.destroyed += 1
                echo(f"{c.address}: destroyed")
    blocked: dict[str, str] = {}
    edges = {c.address: c.depends_on for c in plan.changes if c.action != "delete"}
    for c in plan.changes:
        if c.action == "update":
            record = dict(state.resources[c.address])
            record.update(spec=c.spec, artifact_digest=c.artifact.digest if c.artifact else None,
                          artifact=c.artifact.to_dict() if c.artifact else None, updated_at=time.time())
            state.put(c.address, record)
            store.write(state)
            result.changed += 1
            echo(f"{c.address}: updated in place")
            continue
        if c.action not in ("create", "replace"):
            continue
        if c.address in blocked:
            result.skipped[c.address] = blocked[c.address]
            echo(f"{c.address}: not submitted: {blocked[c.address]}")
            continue
        client = clients.get(c.cluster)
        caps = registry.get(c.provider).capabilities()
        upstream: dict[str, JobHandle] = {}
        why_not = None
        for dep in c.depends_on:
            record = state.resources.get(dep)
            if record is None or not record.get("handle"):
                why_not = f"dependency {dep} was not submitted"
                break
            handle = JobHandle.parse(record["handle"])
            upstream[dep] = handle
            same_engine = handle.cluster == c.cluster and caps.dependencies
            if not same_engine:
                echo(f"{c.address}: waiting for {dep} to succeed...")
                live = wait_terminal(clients.get(handle.cluster), handle, poll_s)
                record = dict(record, status=status_dict(live))
                state.put(dep, record)
                store.write(state)
                if live.phase != "SUCCEEDED":
                    why_not = f"dependency {dep} ended {live.phase}" + (f" ({live.reason})" if live.reason else "")
                    break
        if why_not:
            result.skipped[c.address] = why_not
            echo(f"{c.address}: not submitted: {why_not}")
            for child in dag.descendants(edges, [c.address]):
                blocked.setdefault(child, f"upstream {c.address} was not submitted")
            continue
        try:
            handle = client.adopt(c.artifact)
            if handle is not None:
                echo(f"{c.address}: found {handle} already submitted for {c.job_id}; adopting it")
            else:
                handle = client.submit(c.artifact, secrets, upstream)
        except JsctlError as exc:
            result.failed[c.address] = exc.message
            echo(f"{c.address}: submit failed: {exc.message}")
            for child in dag.descendants(edges, [c.address]):
                blocked.setdefault(child, f"upstream {c.address} failed to submit")
            continue
        record = record_for(c, handle, time.time())
        prior = c.before or state.resources.get(c.address)
        if c.action == "replace" and prior:  # earlier runs stay, for cost reports
            record["history"] = [*(prior.get("history") or []), {"job_id": prior.get("job_id"),
                                 "status": prior.get("status"), "cost_basis": prior.get("cost_basis")}]
            record["events"] = [*(prior.get("events") or []), *record["events"]]
        state.put(c.address, record)
        store.write(state)
        if c.action == "replace":
            result.destroyed += 1
        result.added += 1
        echo(f"{c.address}: submitted {handle} ({c.job_id})")
    return result


def wait_terminal(client: ProviderClient, handle: JobHandle, poll_s: float) -> LiveStatus:
    while True:
        live = client.refresh([handle])[handle]
        if live.terminal or live.phase == "UNKNOWN":
            return live
        time.sleep(poll_s)
