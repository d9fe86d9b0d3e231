"""Views across clusters and time: cluster status (capacity, jsctl's jobs and their cost), cost report."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from jsctl.api.live import Echo, observe, refresh, store_for, survey

if TYPE_CHECKING:
    from jsctl.config.workspace import Workspace
    from jsctl.model.cluster import Facts, Offer
    from jsctl.plan.report import CostReport


@dataclass(frozen=True)
class ClusterStatus:
    """One cluster for `jsctl cluster status`: GPUs total, free and queued, and jsctl's jobs there.

    GPUs free and queued are what the cluster's probe reports (the provider knows who else uses the
    cluster; jsctl's own jobs are only part of it), else unknown. The total is the probe's, else the
    sum of the cluster's bounded offers. A cluster whose every offer grows on demand (no node limit)
    is elastic: it has no total.
    """

    cluster: str
    provider: str
    reachable: bool  # its probe answered
    elastic: bool
    gpus_total: int | None
    gpus_free: int | None
    gpus_queued: int | None
    jobs_running: tuple[str, ...]  # addresses of jsctl's jobs running there
    jobs_in_state: tuple[str, ...]  # addresses of every jsctl job recorded there
    per_hour: float  # Σ recorded $/h of the running jobs
    so_far: float  # Σ what their current runs have cost so far

    def to_dict(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "provider": self.provider, "gpus_total": self.gpus_total,
                "gpus_free": self.gpus_free, "gpus_queued": self.gpus_queued, "reachable": self.reachable,
                "elastic": self.elastic, "jobs_running": list(self.jobs_running), "per_hour": self.per_hour,
                "so_far": self.so_far, "jobs_in_state": list(self.jobs_in_state)}


def offers(ws: Workspace, facts: Mapping[str, Facts]) -> list[Offer]:
    """Every place the workspace's clusters offer, as the planner sees them."""
    from jsctl.plan import catalog
    from jsctl.plan.planner import offers_for

    return offers_for(ws, facts, catalog.load(ws.catalog))


def cluster_status(ws: Workspace, echo: Echo | None = None) -> tuple[ClusterStatus, ...]:
    from jsctl.plan.report import cluster_costs

    state = store_for(ws).read()
    live, facts = survey(ws, state, echo)  # every cluster at once; one warning for one that does not answer
    state = observe(ws, state, live)
    found = offers(ws, facts)
    records = state.records()
    costs = cluster_costs(records, time.time())
    rows = []
    for c in ws.clusters:
        data = facts[c.name].data if c.name in facts else {}
        mine = [o for o in found if o.cluster == c.name]
        here = [r for r in records.values() if r.cluster == c.name]
        total = data.get("gpus_total")
        if total is None and mine and all(o.max_nodes is not None for o in mine):
            total = sum(o.gpus_per_node * (o.max_nodes or 0) for o in mine)
        free, queued = data.get("gpus_free"), data.get("gpus_queued")
        cc = costs.get(c.name)
        rows.append(ClusterStatus(c.name, c.provider, c.name in facts, bool(mine) and all(o.max_nodes is None
                                                                                          for o in mine),
                                  total, free, queued, cc.jobs if cc else (), tuple(sorted(r.address for r in here)),
                                  cc.per_hour if cc else 0.0, cc.so_far if cc else 0.0))
    return tuple(rows)


def cost_report(ws: Workspace, job: str | None = None, since: str | None = None,
                echo: Echo | None = None) -> CostReport:
    """Actual cost of the runs in state (the price recorded at submission × run time), refreshed first.
    `since`: a date (2026-11-01) or a span back from now (7d, 12h)."""
    from jsctl.errors import UsageError
    from jsctl.plan import report

    state = store_for(ws).read()
    state = observe(ws, state, refresh(ws, state, echo))
    now = time.time()
    try:
        start = report.parse_since(since, now) if since else None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return report.cost_report(state.records(), now, job, start)
