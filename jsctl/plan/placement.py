"""Placement: which offer (partition, pool, instance type, this machine) runs a job, and why.

Pure: a function of the job spec, the offers the providers listed, and the preference order.
Every offer becomes a Candidate with the reasons it cannot run the job (empty when it can).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

from jsctl.config.quantities import format_bytes, format_duration
from jsctl.config.spec import JobSpec
from jsctl.plan import gpus
from jsctl.providers.base import Offer, Placement


@dataclass(frozen=True)
class Candidate:
    offer: Offer
    nodes: int
    gpus_per_node: int
    price_per_hour: float | None
    reasons: tuple[str, ...]  # why it cannot run the job; empty = feasible
    chosen: bool = False

    @property
    def feasible(self) -> bool:
        return not self.reasons


@dataclass(frozen=True)
class PlacementResult:
    placement: Placement | None
    candidates: tuple[Candidate, ...]  # chosen first, then feasible by price, then misses by closeness

    @property
    def feasible(self) -> bool:
        return self.placement is not None


def shape(count: int, per_node: int | None, node_gpus: int, max_nodes: int | None) -> tuple[int, int, str | None]:
    """(nodes, gpus per node, note): fill nodes; pack evenly when the count does not divide."""
    if per_node:
        return count // per_node, per_node, None
    if node_gpus <= 0:
        return 0, 0, None
    if count <= node_gpus:
        return 1, count, None
    nodes = math.ceil(count / node_gpus)
    while count % nodes:
        nodes += 1
    note = None if count == nodes * node_gpus else f"packed as {nodes} × {count // nodes} ({count} does not fill {node_gpus}-GPU nodes)"
    return nodes, count // nodes, note


def evaluate(spec: JobSpec, offer: Offer) -> Candidate:
    c = spec.compute
    reasons: list[str] = []
    if not offer.available:
        reasons.append(f"{offer.pool} is not available ({offer.note or 'down'})")
    if c.gpu:
        nodes, per_node, _ = shape(c.gpu.count, c.gpu.per_node, offer.gpus_per_node, offer.max_nodes)
        if not offer.gpu_type or offer.gpus_per_node <= 0:
            reasons.append("no GPUs")
            nodes, per_node = 0, 0
        else:
            if c.gpu.type and offer.gpu_type != "*" and not gpus.matches(c.gpu.type, offer.gpu_type):
                reasons.append(f"gpu type {offer.gpu_type} ≠ {c.gpu.type}")
            if per_node > offer.gpus_per_node:
                reasons.append(f"needs {per_node} GPUs per node, nodes have {offer.gpus_per_node}")
            if offer.max_nodes is not None and nodes > offer.max_nodes:
                reasons.append(f"needs {nodes} node{'s' if nodes != 1 else ''} × {per_node} GPUs, "
                               f"{offer.pool} has {offer.max_nodes} node{'s' if offer.max_nodes != 1 else ''} "
                               f"× {offer.gpus_per_node}")
        cpus = (c.cpu_per_gpu or 0) * per_node
        mem = (c.memory_per_gpu or 0) * per_node
    else:
        nodes, per_node = 1, 0
        cpus, mem = c.cpu_count or 1, c.memory_total or 0
    if cpus > offer.cpus_per_node:
        reasons.append(f"needs {cpus} CPUs per node, nodes have {offer.cpus_per_node}")
    if mem > offer.memory_per_node:
        reasons.append(f"needs {format_bytes(mem)} memory per node, nodes have {format_bytes(offer.memory_per_node)}")
    if c.topology == "interconnect" and not offer.interconnect:
        reasons.append("no multi-node interconnect (topology: interconnect)")
    if c.topology == "nvlink" and not offer.nvlink:
        reasons.append("no NVLink (topology: nvlink)")
    if c.time_limit_s and offer.max_time_s is not None and c.time_limit_s > offer.max_time_s:
        reasons.append(f"time_limit {format_duration(c.time_limit_s)} over max time {format_duration(offer.max_time_s)}")
    if c.capacity not in offer.capacities:
        reasons.append(f"no {c.capacity} capacity")
    return Candidate(offer, nodes, per_node, price(offer, nodes, per_node, c.capacity), tuple(reasons))


def price(offer: Offer, nodes: int, per_node: int, capacity: str) -> float | None:
    """$/hour for the whole allocation."""
    if offer.gpu_hour_price is not None and per_node:
        return round(offer.gpu_hour_price * nodes * per_node, 4)
    node_price = offer.spot_node_hour_price if capacity == "spot" else offer.node_hour_price
    if node_price is None and capacity == "spot":
        node_price = offer.node_hour_price
    return round(node_price * nodes, 4) if node_price is not None else None


def place(spec: JobSpec, offers: Sequence[Offer], prefer: Sequence[str] = ()) -> PlacementResult:
    """Choose the cheapest feasible offer (clusters in `prefer` order first)."""
    if spec.compute.target:
        offers = [o for o in offers if o.cluster == spec.compute.target]
    candidates = [evaluate(spec, o) for o in offers]
    rank = {name: i for i, name in enumerate(prefer)}

    def key(cand: Candidate) -> tuple:
        return (rank.get(cand.offer.cluster, len(rank)), cand.price_per_hour if cand.price_per_hour is not None
                else math.inf, cand.nodes, cand.offer.cluster, cand.offer.pool)

    feasible = sorted((c for c in candidates if c.feasible), key=key)
    misses = sorted((c for c in candidates if not c.feasible), key=lambda c: (len(c.reasons), key(c)))
    if not feasible:
        return PlacementResult(None, tuple(misses))
    best = replace(feasible[0], chosen=True)
    o = best.offer
    c = spec.compute
    placement = Placement(
        cluster=o.cluster, provider=o.provider, pool=o.pool, nodes=best.nodes, gpus_per_node=best.gpus_per_node,
        gpu_type=(c.gpu.type if o.gpu_type == "*" else o.gpu_type) if c.gpu else None,
        cpus_per_task=(c.cpu_per_gpu * best.gpus_per_node) if c.gpu and c.cpu_per_gpu else c.cpu_count,
        memory_per_node=(c.memory_per_gpu * best.gpus_per_node) if c.gpu and c.memory_per_gpu else c.memory_total,
        interconnect=o.interconnect, capacity=c.capacity, price_per_hour=best.price_per_hour)
    return PlacementResult(placement, (best, *feasible[1:], *misses))


def candidates_table(result: PlacementResult, limit: int = 8) -> list[str]:
    """Lines of the candidates table, like an optimizer's: cluster, where, shape, $/h, note."""
    rows = [("CLUSTER", "WHERE", "SHAPE", "$/h", "NOTE")]
    for cand in result.candidates[:limit]:
        o = cand.offer
        where = o.pool + (f" ({o.region})" if o.region else "")
        shape_ = f"{cand.nodes} × {cand.gpus_per_node} {o.gpu_type if o.gpu_type != '*' else 'workers'}" \
            if cand.gpus_per_node else (f"{cand.nodes} node" if cand.nodes else "—")
        cost = f"{cand.price_per_hour:.2f}" if cand.price_per_hour is not None else "—"
        if cand.chosen:
            note = "chosen: cheapest feasible"
        elif cand.feasible:
            note = "feasible"
        else:
            note = "; ".join(cand.reasons)
            shape_ = shape_ if not any("GPUs per node" in r or "no GPUs" in r for r in cand.reasons) else "—"
        rows.append((o.cluster, where, shape_, cost, note))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return ["  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4] for r in rows]
