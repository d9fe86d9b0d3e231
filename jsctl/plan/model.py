"""The Plan: pure data that says exactly what apply will do; printable, JSON-able, savable."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jsctl.plan.cost import CostEstimate, PlanCost
from jsctl.plan.diff import FieldChange
from jsctl.plan.placement import Candidate
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.job import Placement

ACTIONS = ("create", "update", "replace", "delete", "no-op")
SYMBOL = {"create": "+", "update": "~", "replace": "-/+", "delete": "-", "no-op": " "}
TF_ACTIONS = {"create": ["create"], "update": ["update"], "replace": ["delete", "create"], "delete": ["delete"],
              "no-op": ["no-op"]}


@dataclass(frozen=True)
class ResourceChange:
    address: str
    name: str
    action: str
    reasons: tuple[str, ...] = ()
    job_id: str | None = None
    generation: int | None = None
    provider: str | None = None
    cluster: str | None = None
    placement: Placement | None = None
    candidates: tuple[Candidate, ...] = ()
    artifact: RenderedArtifact | None = None
    spec: dict | None = None  # the resolved job document
    file: str | None = None
    before: dict | None = None  # the prior state record
    fields: tuple[FieldChange, ...] = ()
    depends_on: tuple[str, ...] = ()
    strategy: dict = field(default_factory=dict)
    strategy_text: str = ""
    secrets: tuple[str, ...] = ()
    outputs: dict = field(default_factory=dict)
    drift: str | None = None
    price_per_hour: float | None = None
    run_bound: float | None = None
    cost: CostEstimate | None = None
    scheduler: str | None = None  # --check-remote: the engine's answer (start estimate, or why not)
    refused: bool = False  # --check-remote: the engine says it cannot run this job


@dataclass(frozen=True)
class Plan:
    changes: tuple[ResourceChange, ...]
    prior_serial: int
    prior_lineage: str
    state_exists: bool
    files: tuple[str, ...] = ()
    workspace: str | None = None
    destroy: bool = False
    warnings: tuple[str, ...] = ()
    refreshed: str = ""
    cost: PlanCost | None = None

    def count(self) -> tuple[int, int, int]:
        add = sum(1 for c in self.changes if c.action in ("create", "replace"))
        change = sum(1 for c in self.changes if c.action == "update")
        destroy = sum(1 for c in self.changes if c.action in ("delete", "replace"))
        return add, change, destroy

    @property
    def has_changes(self) -> bool:
        return any(c.action != "no-op" for c in self.changes)

    def change(self, address: str) -> ResourceChange | None:
        return next((c for c in self.changes if c.address == address), None)


def placement_dict(p: Placement | None) -> dict | None:
    if p is None:
        return None
    return {"cluster": p.cluster, "provider": p.provider, "pool": p.pool, "nodes": p.nodes,
            "gpus_per_node": p.gpus_per_node, "gpu_type": p.gpu_type, "cpus_per_task": p.cpus_per_task,
            "memory_per_node": p.memory_per_node, "interconnect": p.interconnect, "capacity": p.capacity,
            "price_per_hour": p.price_per_hour, "emulated": p.emulated}


def placement_from(d: dict | None) -> Placement | None:
    return Placement(**d) if d else None


def candidate_dict(c: Candidate) -> dict[str, Any]:
    o = c.offer
    return {"cluster": o.cluster, "provider": o.provider, "pool": o.pool, "region": o.region,
            "gpu_type": o.gpu_type, "nodes": c.nodes, "gpus_per_node": c.gpus_per_node,
            "price_per_hour": c.price_per_hour, "feasible": c.feasible, "chosen": c.chosen,
            "reasons": list(c.reasons)}
