"""Offers (one per node pool) from the inventory, and from the nodes the cluster reports.

Pure: `facts_from_nodes` turns the apiserver's Node objects (and the pods' GPU requests, summed by
the client) into plain data; `offers` reads the inventory and those facts.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from jsctl.config.quantities import parse_bytes, parse_duration
from jsctl.model.cluster import Facts, Offer
from jsctl.providers.kubernetes.settings import GPU_RESOURCE, KubernetesSettings, Pool

UNKNOWN_CPUS = 2**31  # neither the inventory nor the cluster said: not a limit
UNKNOWN_MEMORY = 2**60
_QUANTITY = re.compile(r"([0-9]+(?:\.[0-9]+)?)(?:e([0-9]+))?(m|k|Ki|Mi|Gi|Ti|Pi|Ei|M|G|T|P|E)?")
_FACTOR = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def quantity(text: Any) -> float:
    """A Kubernetes quantity (`96`, `95500m`, `1Ti`, `1056763904Ki`) as a number; 0 when unreadable."""
    m = _QUANTITY.fullmatch(str(text if text is not None else "").strip())
    if not m:
        return 0.0
    return float(m.group(1)) * 10 ** int(m.group(2) or 0) * _FACTOR[m.group(3) or ""]


def facts_from_nodes(cluster_name: str, nodes: Iterable[Mapping[str, Any]], extra: Mapping[str, Any] | None = None,
                     gpu_resource: str = GPU_RESOURCE) -> Facts:
    """Plain data from the cluster's Node objects, for placement and `jsctl cluster status`.

    `nodes`: Node objects as the apiserver returns them (JSON as dicts): `metadata.name`,
    `metadata.labels`, `spec.taints`, `spec.unschedulable`, `status.allocatable` (`cpu`, `memory`,
    the GPU resource) and `status.conditions` (`Ready`).
    `extra` (all keys optional), summed by the client from the pods it lists:
      - `gpus_requested`: {node name: GPUs requested by that node's pods that have not finished
        (phase not Succeeded/Failed)};
      - `gpus_queued`: GPUs requested by pods not yet bound to a node (Pending, no spec.nodeName);
      - anything else (`crds`: the CRDs installed, `version`, ...) is copied into the data as given.
    The data: `nodes` {name: {labels, taints, ready, schedulable, gpus, gpus_used, cpus, memory}},
    `gpus_total` (every node's allocatable GPUs), `gpus_free` (unrequested GPUs on ready, schedulable
    nodes), `gpus_queued`; with a warning for each node that is not ready or cordoned.
    """
    extra = dict(extra or {})
    used = {str(k): int(v) for k, v in (extra.pop("gpus_requested", None) or {}).items()}
    queued = extra.pop("gpus_queued", None)
    table: dict[str, dict[str, Any]] = {}
    warnings = []
    for n in nodes:
        meta, spec, status = n.get("metadata") or {}, n.get("spec") or {}, n.get("status") or {}
        name = str(meta.get("name", ""))
        alloc = status.get("allocatable") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())
        node = {"labels": dict(meta.get("labels") or {}),
                "taints": [{k: t[k] for k in ("key", "value", "effect") if k in t} for t in spec.get("taints") or ()],
                "ready": ready, "schedulable": not spec.get("unschedulable", False),
                "gpus": int(quantity(alloc.get(gpu_resource))), "gpus_used": used.get(name, 0),
                "cpus": int(quantity(alloc.get("cpu"))), "memory": int(quantity(alloc.get("memory")))}
        table[name] = node
        if not ready:
            warnings.append(f"node {name} is not ready")
        elif not node["schedulable"]:
            warnings.append(f"node {name} is cordoned")
    total = sum(n["gpus"] for n in table.values())
    free = sum(max(n["gpus"] - n["gpus_used"], 0) for n in table.values() if usable(n))
    data = {**extra, "nodes": table, "gpus_total": total, "gpus_free": free,
            "gpus_queued": int(queued) if queued is not None else None}
    return Facts(cluster_name, data, tuple(warnings))


def usable(node: Mapping[str, Any]) -> bool:
    return bool(node.get("ready")) and bool(node.get("schedulable", True))


def pool_nodes(pool: Pool, facts: Facts | None) -> list[Mapping[str, Any]] | None:
    """The probed nodes the pool's node selector picks (None: the facts carry no nodes)."""
    if facts is None or "nodes" not in facts.data:
        return None
    nodes = facts.data.get("nodes") or {}
    return [nodes[k] for k in sorted(nodes)
            if all((nodes[k].get("labels") or {}).get(lk) == lv for lk, lv in pool.node_selector.items())]


def offers(settings: KubernetesSettings, facts: Facts | None) -> list[Offer]:
    return [_offer(settings, p, facts) for p in settings.pools]


def _offer(settings: KubernetesSettings, p: Pool, facts: Facts | None) -> Offer:
    live = pool_nodes(p, facts)
    ok = [n for n in live or () if usable(n)]
    seen = ok or live or []
    notes: list[str] = []
    gpus = p.gpus_per_node if p.gpus_per_node is not None else min((n["gpus"] for n in seen), default=0)
    gpu_type = p.gpu_type
    if gpu_type is None and gpus:
        gpu_type = "*"
        notes.append("GPU type not declared: matches any gpu.type")
    cpus = p.cpus_per_node or min((n["cpus"] for n in seen), default=0) or UNKNOWN_CPUS
    memory = (parse_bytes(p.memory_per_node) if p.memory_per_node
              else min((n["memory"] for n in seen), default=0) or UNKNOWN_MEMORY)
    max_nodes = p.nodes
    available = True
    if live is not None:
        if not ok:
            available = False
            notes.append("no ready nodes match the pool's node selector" if live else
                         "no node matches the pool's node selector")
        else:
            if max_nodes is not None and len(ok) < max_nodes:
                notes.append(f"only {len(ok)} of {max_nodes} nodes ready")
            max_nodes = len(ok) if max_nodes is None else min(max_nodes, len(ok))
            total = sum(n["gpus"] for n in ok)
            free = sum(max(n["gpus"] - n["gpus_used"], 0) for n in ok)
            if total:
                notes.append(f"{free} of {total} GPUs free now")
    max_time_s = None
    if p.max_time and p.max_time.upper() not in ("INFINITE", "UNLIMITED"):
        max_time_s = parse_duration(p.max_time)
    rate = p.gpu_hour_rate if p.gpu_hour_rate is not None else settings.gpu_hour_rate
    return Offer(cluster=settings.cluster, provider="kubernetes", pool=p.name, gpu_type=gpu_type if gpus else None,
                 gpus_per_node=int(gpus), max_nodes=max_nodes, cpus_per_node=int(cpus), memory_per_node=int(memory),
                 interconnect=p.fabric, nvlink=p.nvlink, max_time_s=max_time_s, gpu_hour_price=rate,
                 capacities=p.capacities, available=available, note="; ".join(notes) or None)
