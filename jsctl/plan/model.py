"""The Plan: pure data that says exactly what apply will do; printable, JSON-able, savable."""
from __future__ import annotations

from dataclasses import dataclass, field

from jsctl.plan.cost import CostEstimate, PlanCost
from jsctl.model.diff import FieldChange
from jsctl.plan.placement import Candidate
from jsctl.model.artifact import Action, RenderedArtifact
from jsctl.model.job import Placement

SYMBOL = {"create": "+", "update": "~", "replace": "-/+", "delete": "-", "no-op": " "}
TF_ACTIONS = {"create": ["create"], "update": ["update"], "replace": ["delete", "create"], "delete": ["delete"],
              "no-op": ["no-op"]}


@dataclass(frozen=True)
class Explanation:
    """What the plan tells people about a change. Apply never reads it."""

    reasons: tuple[str, ...] = ()
    forces: tuple[str, ...] = ()  # request fields whose change forces replacement (the provider's diff)
    fields: tuple[FieldChange, ...] = ()  # the job document's changed fields (what the user edited)
    candidates: tuple[Candidate, ...] = ()  # every placement considered, chosen first
    strategy: str = ""  # the strategy advice in words
    command: tuple[str, ...] = ()  # what each node launches (the launch contract's command)
    drift: str | None = None  # changed outside jsctl
    scheduler: str | None = None  # --check-remote: the engine's answer (start estimate, or why not)
    refused: bool = False  # --check-remote: the engine says it cannot run this job
    strategy_advice: dict | None = None  # the strategy advice as data: parallelism, memory per GPU, fits, why


@dataclass(frozen=True)
class ResourceChange:
    """One address of the plan: what apply does there and everything it needs to do it."""

    address: str
    name: str
    action: Action
    job_id: str | None = None
    generation: int | None = None
    provider: str | None = None
    cluster: str | None = None
    placement: Placement | None = None
    artifact: RenderedArtifact | None = None  # what submit sends (None for a delete or an infeasible job)
    spec: dict | None = None  # the resolved job document, recorded in state
    file: str | None = None  # the job file it came from
    before: dict | None = None  # the prior state record
    depends_on: tuple[str, ...] = ()
    dependencies_enforced: bool = False  # the engine itself holds the job until depends_on succeed (capabilities)
    strategy: dict = field(default_factory=dict)  # what JETSTREAM_STRATEGY carries
    outputs: dict = field(default_factory=dict)  # output name → path, for later jobs' references
    cost: CostEstimate | None = None
    why: Explanation = Explanation()

    def __post_init__(self) -> None:
        object.__setattr__(self, "action", Action(self.action))

    @property
    def secrets(self) -> tuple[str, ...]:
        """Secret names whose values apply reads from the environment."""
        return self.artifact.secrets if self.artifact else ()

    @property
    def price_per_hour(self) -> float | None:
        return self.placement.price_per_hour if self.placement else None

    @property
    def run_bound(self) -> float | None:
        """At most this much for one run (time_limit or --duration), when a price is known."""
        return self.cost.worst if self.cost else None


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
    refresh: bool = True  # False: --refresh=false, planned from state and the inventory alone
    # --- drift (plan --refresh-only): record what changed outside jsctl, nothing else ---
    refresh_only: bool = False
    observed: tuple = ()  # drift.Observation per job of state its engine answered for

    def count(self) -> tuple[int, int, int]:
        add = sum(1 for c in self.changes if c.action in ("create", "replace"))
        change = sum(1 for c in self.changes if c.action == "update")
        destroy = sum(1 for c in self.changes if c.action in ("delete", "replace"))
        return add, change, destroy

    @property
    def has_changes(self) -> bool:
        if self.refresh_only:
            return any(o.drift for o in self.observed)
        return any(c.action != "no-op" for c in self.changes)

    def change(self, address: str) -> ResourceChange | None:
        return next((c for c in self.changes if c.address == address), None)
