"""Placement: which offer (partition, pool, instance type, this machine) runs a job, and why.

Pure: a function of the job spec, the offers the providers listed, and the preference order.
Every offer becomes a Candidate with the reasons it cannot run the job (empty when it can).

Rules, in the order a candidate is checked:
  * availability       an offer marked unavailable (partition down) is a miss.
  * GPU type / family  `a100` accepts either A100; `a100-80gb` (or an alias) only that model.
                       An offer of emulated GPUs (`*`, the local machine) accepts any type.
  * GPUs per node      `gpu.per_node` is taken as asked (and must fit the nodes). Otherwise nodes
                       are filled: 32 GPUs on 8-GPU nodes is 4 × 8. A count that does not fill
                       whole nodes is split evenly (12 → 2 × 6), because every node of a job
                       runs the same number of workers; a split that would leave more than half
                       of each node idle (13 → 13 × 1) is rejected with the reason.
  * cpu / memory       `cpu.per_gpu` × GPUs per node and `memory.per_gpu` × GPUs per node must
                       fit a node. When they do not and `per_node` is free, fewer GPUs go on each
                       node (256Gi per GPU on 1152Gi nodes: 4 per node) and the note says so.
  * nodes              a pool with a fixed node count (a partition) must have enough nodes.
  * topology           `interconnect` needs a multi-node fabric (InfiniBand, EFA, GPUDirect-TCPX)
                       when the job spans nodes; `nvlink` needs NVLink when a node holds more
                       than one of the job's GPUs.
  * GPU memory         with a model size (model.parameters or model.config): the GPU must hold the model
                       under at least one strategy of memory.CANDIDATES (offload and activation
                       checkpointing included; what offload moves must fit the node's memory). The reason
                       says what the leanest needs (jsctl/plan/advisor.py).
  * time_limit         must not exceed the pool's max time.
  * capacity           `spot` / `backfill` only where the offer sells it.
Among feasible candidates the first cluster in `prefer:` order wins, then the cheapest $/hour,
then the fewest nodes. `compute.target` (a cluster, or `cluster/pool`) narrows the offers first.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from jsctl.config.quantities import format_bytes, format_duration
from jsctl.model.spec import Compute, JobSpec
from jsctl.model import gpus
from jsctl.model.cluster import Offer
from jsctl.model.job import Placement
from jsctl.plan import advisor, memory
from jsctl.plan.memory import ModelShape

# how far a miss is from working, per kind of reason (nearest misses are listed first)
_WEIGHT = {"type": 100, "nogpu": 100, "target": 100, "down": 40, "per_node": 12, "split": 12, "nodes": 8,
           "capacity": 6, "fabric": 6, "nvlink": 6, "time": 4, "cpu": 4, "memory": 4, "gpu_memory": 50}


@dataclass(frozen=True)
class Candidate:
    offer: Offer
    nodes: int
    gpus_per_node: int
    price_per_hour: float | None
    reasons: tuple[str, ...]  # why it cannot run the job; empty = feasible
    chosen: bool = False
    notes: tuple[str, ...] = ()  # how it would run (packing), when feasible
    capacity: str = "on-demand"
    distance: int = field(default=0, compare=False)  # 0 when feasible; larger = further from working
    shape_ok: bool = True  # False when the shape itself is the problem (type, GPUs per node)
    why: str | None = None  # for the chosen one: why it won (cheapest feasible, first in prefer order ...)
    asked: str = field(default="", compare=False)  # what the job asked for, in words ("32 a100-80gb GPUs")

    @property
    def feasible(self) -> bool:
        return not self.reasons

    def to_dict(self) -> dict[str, Any]:
        o = self.offer
        return {"cluster": o.cluster, "provider": o.provider, "pool": o.pool, "region": o.region,
                "gpu_type": o.gpu_type, "nodes": self.nodes if self.shape_ok else None,
                "gpus_per_node": self.gpus_per_node if self.shape_ok else None, "capacity": self.capacity,
                "price_per_hour": self.price_per_hour, "feasible": self.feasible, "chosen": self.chosen,
                "reasons": list(self.reasons), "notes": list(self.notes), "why": self.why}


@dataclass(frozen=True)
class PlacementResult:
    placement: Placement | None
    candidates: tuple[Candidate, ...]  # chosen first, then feasible by rank, then misses nearest first
    why: str | None = None  # why the chosen one won, or why nothing could be considered

    @property
    def feasible(self) -> bool:
        return self.placement is not None

    @property
    def chosen(self) -> Candidate | None:
        return self.candidates[0] if self.candidates and self.candidates[0].chosen else None

    def to_dict(self) -> dict[str, Any]:
        p = self.placement
        return {"feasible": self.feasible, "why": self.why,
                "placement": None if p is None else p.to_dict(),
                "candidates": [c.to_dict() for c in self.candidates]}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def shape(count: int, per_node: int | None, node_gpus: int, max_nodes: int | None = None,
          cap: int | None = None, cap_why: str = "cpu/memory per GPU") -> tuple[int, int, str | None]:
    """(nodes, gpus per node, note): fill nodes, split evenly when the count does not divide.

    `cap` is the most GPUs per node the job's cpu/memory per GPU allow (None = no limit) and
    `cap_why` what sets it. The note is None for a full fit, says how the GPUs were packed, or
    starts with "cannot" when no even split leaves at least half of each node in use. (`max_nodes`
    is checked by `evaluate`, which reports it as its own reason.)
    """
    if per_node:
        return math.ceil(count / per_node), per_node, None
    if node_gpus <= 0:
        return 0, 0, None
    limit = node_gpus if cap is None else max(0, min(node_gpus, cap))
    if limit == 0:
        return math.ceil(count / node_gpus), min(count, node_gpus), None
    if count <= limit:
        return 1, count, None
    k = next(k for k in range(limit, 0, -1) if count % k == 0)
    nodes = count // k
    if k == node_gpus:
        return nodes, k, None
    if limit < node_gpus and k * 2 >= limit:
        return nodes, k, f"packed as {nodes} × {k}: {cap_why} allows {limit} of {node_gpus} GPUs per node"
    if k * 2 >= node_gpus:
        return nodes, k, f"packed as {nodes} × {k}: {count} GPUs do not fill {node_gpus}-GPU nodes"
    return nodes, k, (f"cannot split {count} GPUs evenly onto {node_gpus}-GPU nodes: the best even split, "
                      f"{nodes} × {k}, leaves {node_gpus - k} of {node_gpus} GPUs idle on each node "
                      f"(ask for a multiple of {limit}, or set gpu.per_node)")


def price(offer: Offer, nodes: int, per_node: int, capacity: str) -> float | None:
    """$/hour for the whole allocation: GPU-hour rates charge GPUs used; instances charge whole nodes."""
    if offer.gpu_hour_price is not None and per_node:
        return round(offer.gpu_hour_price * nodes * per_node, 4)
    node_price = offer.spot_node_hour_price if capacity == "spot" else offer.node_hour_price
    if node_price is None and capacity == "spot":
        node_price = offer.node_hour_price
    return round(node_price * nodes, 4) if node_price is not None else None


@dataclass(frozen=True)
class _Need:
    """What a job asks of a node, computed once per job (placement runs for many offers)."""

    compute: Compute
    count: int
    gpu_type: str | None
    per_node: int | None
    cpu_per_gpu: int
    mem_per_gpu: int
    model: ModelShape | None = None  # None: model size unknown, no GPU memory rule
    precision: str = "bf16"
    memo: dict = field(default_factory=dict, compare=False, repr=False)  # GPU memory verdicts by shape

    def gpu_memory_miss(self, offer: Offer, nodes: int, per_node: int) -> str | None:
        if self.model is None or offer.emulated:
            return None
        key = (offer.gpu_type, nodes, per_node, offer.memory_per_node, offer.max_nodes)
        if key not in self.memo:
            self.memo[key] = advisor.memory_miss(self.model, offer.gpu_type, nodes, per_node, self.precision,
                                                 offer.memory_per_node or None, offer.max_nodes)
        return self.memo[key]


def _need(spec: JobSpec, model: ModelShape | None = None) -> _Need:
    c = spec.compute
    g = c.gpu
    return _Need(c, g.count if g else 0, g.type if g else None, g.per_node if g else None,
                 c.cpu_per_gpu or 0, c.memory_per_gpu or 0, model, advisor.precision(spec))


def _evaluate(need: _Need, offer: Offer) -> Candidate:
    c = need.compute
    reasons: list[str] = []
    kinds: list[str] = []
    notes: tuple[str, ...] = ()
    shape_ok = True

    def miss(kind: str, text: str) -> None:
        kinds.append(kind)
        reasons.append(text)

    if not offer.available:
        miss("down", f"{offer.pool} is not available ({offer.note or 'down'})")
    if need.count:
        node_gpus = offer.gpus_per_node if offer.gpu_type else 0
        cap, cap_why = None, ""
        if not need.per_node and node_gpus:
            cap = node_gpus
            if need.cpu_per_gpu and offer.cpus_per_node // need.cpu_per_gpu < cap:
                cap = offer.cpus_per_node // need.cpu_per_gpu
                cap_why = f"cpu.per_gpu {need.cpu_per_gpu} on {offer.cpus_per_node}-CPU nodes"
            if need.mem_per_gpu and offer.memory_per_node // need.mem_per_gpu < cap:
                cap = offer.memory_per_node // need.mem_per_gpu
                cap_why = (f"memory.per_gpu {format_bytes(need.mem_per_gpu)} on "
                           f"{format_bytes(offer.memory_per_node)} nodes")
        nodes, per_node, note = shape(need.count, need.per_node, node_gpus, offer.max_nodes, cap, cap_why)
        if node_gpus <= 0:
            miss("nogpu", "no GPUs")
            shape_ok = False
            nodes, per_node = 0, 0
        else:
            if need.gpu_type and offer.gpu_type != "*" and not gpus.matches(need.gpu_type, offer.gpu_type):
                if gpus.matches(offer.gpu_type, need.gpu_type):  # a family offered, a model asked
                    miss("type", f"gpu type {offer.gpu_type} does not say which model; {need.gpu_type} asked "
                         "(name the model in the pool's gpu_type)")
                else:
                    miss("type", f"gpu type {offer.gpu_type} ≠ {need.gpu_type}")
                shape_ok = False
            if need.per_node and need.count % need.per_node:
                miss("split", f"gpu.count {need.count} is not a multiple of gpu.per_node {need.per_node}")
                shape_ok = False
            if per_node > node_gpus and offer.emulated:
                miss("per_node", f"{per_node} GPUs per node asked; {_emulated(offer)}")
                shape_ok = False
            elif per_node > node_gpus:
                miss("per_node", f"needs {per_node} GPUs per node, nodes have {node_gpus}")
                shape_ok = False
            if note and note.startswith("cannot"):
                miss("split", note)
                shape_ok = False
            elif note:
                notes = (note,)
            if offer.max_nodes is not None and nodes > offer.max_nodes and per_node <= node_gpus and offer.emulated:
                miss("nodes", f"{need.count} GPUs asked ({_plural(nodes, 'node')} × {per_node}); {_emulated(offer)}")
            elif offer.max_nodes is not None and nodes > offer.max_nodes and per_node <= node_gpus:
                miss("nodes", f"needs {_plural(nodes, 'node')} × {per_node} GPUs, {offer.pool} has "
                     f"{_plural(offer.max_nodes, 'node')} × {node_gpus}")
            too_small = need.gpu_memory_miss(offer, nodes, per_node) if shape_ok else None
            if too_small:
                miss("gpu_memory", too_small)
        cpus = need.cpu_per_gpu * per_node
        mem = need.mem_per_gpu * per_node
        if c.cpu_count and not need.cpu_per_gpu and nodes:
            cpus = math.ceil(c.cpu_count / nodes)
        if c.memory_total and not need.mem_per_gpu and nodes:
            mem = math.ceil(c.memory_total / nodes)
    else:
        nodes, per_node = 1, 0
        cpus, mem = c.cpu_count or 1, c.memory_total or 0
    if shape_ok and cpus > offer.cpus_per_node:  # (an impossible shape makes these beside the point)
        what = f" (cpu.per_gpu {need.cpu_per_gpu} × {per_node})" if need.cpu_per_gpu and per_node else ""
        miss("cpu", f"needs {cpus} CPUs per node{what}, nodes have {offer.cpus_per_node}")
    if shape_ok and mem > offer.memory_per_node:
        what = (f" (memory.per_gpu {format_bytes(need.mem_per_gpu)} × {per_node})"
                if need.mem_per_gpu and per_node else "")
        miss("memory", f"needs {format_bytes(mem)} memory per node{what}, nodes have "
             f"{format_bytes(offer.memory_per_node)}")
    if c.topology == "interconnect" and nodes > 1 and not offer.interconnect:
        miss("fabric", f"no multi-node interconnect for {nodes} nodes (topology: interconnect)")
    if c.topology == "nvlink" and per_node > 1 and not offer.nvlink:
        miss("nvlink", "no NVLink between the GPUs of a node (topology: nvlink)")
    if c.time_limit_s and offer.max_time_s is not None and c.time_limit_s > offer.max_time_s:
        miss("time", f"time_limit {format_duration(c.time_limit_s)} over max time "
             f"{format_duration(offer.max_time_s)}")
    if c.capacity not in offer.capacities:
        if c.capacity == "spot" and offer.spot_node_hour_price is not None:
            miss("capacity", "no spot capacity: the cluster does not allow spot (spot: true)")
        else:
            miss("capacity", f"no {c.capacity} capacity")
    return Candidate(offer, nodes, per_node, price(offer, nodes, per_node, c.capacity), tuple(reasons),
                     notes=notes, capacity=c.capacity, distance=sum(_WEIGHT[k] for k in kinds), shape_ok=shape_ok,
                     asked=_asked(need) if need.count else "")


def _asked(need: _Need) -> str:
    return f"{need.count} {need.gpu_type + ' ' if need.gpu_type else ''}GPU{'s' if need.count != 1 else ''}"


def _emulated_most(offer: Offer) -> int:
    return offer.gpus_per_node * (offer.max_nodes or 1)


def _emulated(offer: Offer) -> str:
    """How an offer of emulated GPUs reads in a miss: they are worker processes, and how many there can be."""
    most = _emulated_most(offer)
    return f"it has {most} emulated GPU{'s' if most != 1 else ''} (worker processes on this machine's CPU)"


def _target_filter(target: str, offers: Sequence[Offer]) -> list[Offer]:
    cluster, _, pool = target.partition("/")
    return [o for o in offers if o.cluster == cluster and (not pool or o.pool == pool)]


_FROM_SPEC: ModelShape = ModelShape(parameters=0.0, source="(read from the job)")  # place()'s default


def place(spec: JobSpec, offers: Sequence[Offer], prefer: Sequence[str] = (),
          model: ModelShape | None = _FROM_SPEC) -> PlacementResult:
    """Choose where a job runs: `prefer` order first (clusters, or `cluster/pool`), then cheapest.

    `model`: the model's shape for the GPU memory rule (None: unknown, no rule); by default read from
    the job (memory.model_shape)."""
    if model is _FROM_SPEC:
        model = memory.model_shape(spec, os.path.dirname(os.path.abspath(spec.file)))
    target = spec.compute.target
    if target:
        narrowed = _target_filter(target, offers)
        if not narrowed:
            clusters = sorted({o.cluster for o in offers})
            return PlacementResult(None, (), f"compute.target '{target}' matches no cluster"
                                   f"{' or pool' if '/' in target else ''} in the inventory "
                                   f"(clusters: {', '.join(clusters) or 'none'})")
        offers = narrowed
    need = _need(spec, model)
    candidates = [_evaluate(need, o) for o in offers]
    rank = {name: i for i, name in enumerate(prefer)}
    last = len(rank)

    def order(cand: Candidate) -> tuple:
        o = cand.offer
        r = min(rank.get(f"{o.cluster}/{o.pool}", last), rank.get(o.cluster, last))
        idle_gpus = bool(o.gpus_per_node) and not cand.gpus_per_node  # a CPU job on a GPU node wastes it
        return (r, cand.price_per_hour if cand.price_per_hour is not None else math.inf, idle_gpus, cand.nodes,
                o.cluster, o.pool)

    feasible = sorted((c for c in candidates if c.feasible), key=order)
    misses = sorted((c for c in candidates if not c.feasible), key=lambda c: (c.distance, len(c.reasons), order(c)))
    if not feasible:
        why = "no feasible placement" if candidates else "no offers: the inventory has no clusters to place on"
        return PlacementResult(None, tuple(misses), why)
    why = _why(feasible[0], feasible, order, last)
    best = replace(feasible[0], chosen=True, why=why)
    o = best.offer
    c = spec.compute
    placement = Placement(
        cluster=o.cluster, provider=o.provider, pool=o.pool, nodes=best.nodes, gpus_per_node=best.gpus_per_node,
        gpu_type=(c.gpu.type if o.gpu_type == "*" else o.gpu_type) if c.gpu else None,
        cpus_per_task=(c.cpu_per_gpu * best.gpus_per_node) if c.gpu and c.cpu_per_gpu else c.cpu_count,
        memory_per_node=(c.memory_per_gpu * best.gpus_per_node) if c.gpu and c.memory_per_gpu else c.memory_total,
        interconnect=o.interconnect, capacity=c.capacity, price_per_hour=best.price_per_hour,
        emulated=o.emulated)
    return PlacementResult(placement, (best, *feasible[1:], *misses), why)


def _why(best: Candidate, feasible: list[Candidate], order: Any, last: int) -> str:
    if len(feasible) == 1:
        return "only feasible"
    if order(best)[0] < last:
        cheapest = min(feasible, key=lambda c: c.price_per_hour if c.price_per_hour is not None else math.inf)
        if cheapest is not feasible[0] and (cheapest.price_per_hour or math.inf) < (best.price_per_hour or math.inf):
            return "first in prefer order"
    if best.price_per_hour is None:
        return "first feasible (no prices known)"
    return "cheapest feasible"


def _shape_text(cand: Candidate) -> str:
    o = cand.offer
    if not cand.shape_ok or cand.nodes <= 0:
        return "—"
    if cand.gpus_per_node:
        return f"{cand.nodes} × {cand.gpus_per_node} {o.gpu_type if o.gpu_type != '*' else 'workers'}"
    return _plural(cand.nodes, "node")


def candidates_table(result: PlacementResult, limit: int = 8) -> list[str]:
    """Lines of the candidates table, like an optimizer's: cluster, where, shape, $/h, note."""
    rows = [("CLUSTER", "WHERE", "SHAPE", "$/h", "NOTE")]
    for cand in result.candidates[:limit]:
        o = cand.offer
        spot = cand.capacity if cand.capacity != "on-demand" and cand.capacity in o.capacities else None
        extra = [x for x in (o.region, spot) if x]
        where = o.pool + (f" ({', '.join(extra)})" if extra else "")
        shape_ = _shape_text(cand)
        cost = f"{cand.price_per_hour:,.2f}" if cand.price_per_hour is not None and shape_ != "—" else "—"
        if cand.chosen:
            note = "; ".join((f"chosen: {cand.why or result.why or 'cheapest feasible'}", *cand.notes))
        elif cand.feasible:
            note = "; ".join(cand.notes)
        else:
            note = "; ".join(cand.reasons)
        rows.append((o.cluster, where, shape_, cost, note))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join((r[0].ljust(widths[0]), r[1].ljust(widths[1]), r[2].ljust(widths[2]),
                        r[3].rjust(widths[3]) if n else r[3].ljust(widths[3]), r[4])).rstrip()
             for n, r in enumerate(rows)]
    hidden = len(result.candidates) - limit
    if hidden > 0:
        lines.append(f"… and {hidden} more candidate{'s' if hidden != 1 else ''} (--json lists all)")
    return lines


def format_candidates(result: PlacementResult, address: str, limit: int = 8, indent: str = "  ") -> str:
    """The block the plan prints under a job: a heading, the table, and for a miss what to change."""
    head = f"{indent}Candidates considered for {address}:"
    if not result.candidates:
        return f"{indent}No candidates for {address}: {result.why}"
    body = [f"{indent}  {line}" for line in candidates_table(result, limit)]
    return "\n".join([head, *body])


def infeasible_message(result: PlacementResult, address: str, misses: int = 3) -> str:
    """`job.x cannot be placed: ...` with the nearest misses and the reason each failed."""
    if result.feasible:
        return ""
    if not result.candidates:
        return f"{address} cannot be placed: {result.why}"
    asked = next((c.asked for c in result.candidates if c.asked), "")
    lines = [f"{address} cannot be placed: {f'it asks for {asked} and ' if asked else ''}no cluster in the "
             "inventory can run it. Nearest misses:"]
    for cand in result.candidates[:misses]:
        o = cand.offer
        lines.append(f"  {o.cluster} / {o.pool}: {'; '.join(cand.reasons)}")
    if all(c.offer.emulated for c in result.candidates):  # only this machine: say what it is, and what to add
        most = max(_emulated_most(c.offer) for c in result.candidates)
        names = ", ".join(sorted({c.offer.cluster for c in result.candidates}))
        lines.append(f"  The GPUs of {names} are worker processes on this machine's CPU: enough to try a job with "
                     f"up to {most} GPU{'s' if most != 1 else ''} (a smaller gpu.count), not to run "
                     f"{asked or 'this job'}.")
        lines.append("  To run it, add a cluster that has such GPUs under `clusters:` in jsctl.yaml (in this "
                     "directory, or --workspace FILE); `jsctl cluster status` shows the clusters in use.")
    return "\n".join(lines)
