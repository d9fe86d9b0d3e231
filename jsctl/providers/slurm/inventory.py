"""Offers (one per partition) from the inventory, or from what the cluster says about itself.

Pure: `facts_from_probe` turns the text of `sinfo --json` (or `sinfo -N -o ...`) and
`scontrol -o show partition` into plain data; `offers` reads the inventory and those facts.
"""
from __future__ import annotations

import json
import re
from typing import Any, Mapping

from jsctl.config.quantities import parse_bytes, parse_duration
from jsctl.model.cluster import Facts, Offer
from jsctl.providers.slurm.settings import SlurmSettings

UNKNOWN_CPUS = 2**31  # the inventory and the cluster did not say: not a limit
UNKNOWN_MEMORY = 2**60
USABLE_NODE_STATES = frozenset({"idle", "mixed", "allocated", "completing", "planned", "reserved"})
BAD_NODE_FLAGS = frozenset({"DRAIN", "DRAINING", "DRAINED", "FAIL", "NOT_RESPONDING", "POWERED_DOWN",
                            "POWERING_DOWN", "MAINTENANCE", "INVALID_REG", "REBOOT_ISSUED"})
SINFO_TEXT_FORMAT = "%N|%P|%T|%c|%m|%G"


def parse_slurm_time(text: str | None) -> int | None:
    """Slurm's time formats → seconds; UNLIMITED/INFINITE/NONE → None.

    `MM`, `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM`, `D-HH:MM:SS`.
    """
    if text is None:
        return None
    t = str(text).strip()
    if not t or t.upper() in ("UNLIMITED", "INFINITE", "NONE", "N/A"):
        return None
    days = 0
    if "-" in t:
        d, t = t.split("-", 1)
        days = int(d)
        parts = [int(x) for x in t.split(":")]
        while len(parts) < 3:
            parts.append(0)
        h, m, s = parts
    else:
        parts = [int(x) for x in t.split(":")]
        if len(parts) == 1:
            h, m, s = 0, parts[0], 0
        elif len(parts) == 2:
            h, (m, s) = 0, parts
        else:
            h, m, s = parts
    return ((days * 24 + h) * 60 + m) * 60 + s


def format_slurm_time(seconds: int) -> str:
    """Seconds → `--time` text: `D-HH:MM:SS` or `H:MM:SS` (rounded up to a whole minute)."""
    minutes = -(-int(seconds) // 60)
    d, rest = divmod(minutes, 24 * 60)
    h, m = divmod(rest, 60)
    return f"{d}-{h:02d}:{m:02d}:00" if d else f"{h}:{m:02d}:00"


def parse_gres(gres: str | None) -> tuple[str | None, int]:
    """`gpu:4`, `gpu:a100:8(S:0-1)`, `gpu:a100:4,nic:1` → (type or None, count)."""
    for item in (gres or "").split(","):
        item = re.sub(r"\(.*?\)", "", item).strip()
        fields = item.split(":")
        if not fields or fields[0] != "gpu":
            continue
        if len(fields) == 2 and fields[1].isdigit():
            return None, int(fields[1])
        if len(fields) >= 3 and fields[-1].isdigit():
            return fields[1], int(fields[-1])
    return None, 0


def _kv(line: str) -> dict[str, str]:
    return dict(tok.split("=", 1) for tok in line.split() if "=" in tok)


def facts_from_probe(cluster: str, sinfo: str, partitions_text: str, version: str | None = None) -> Facts:
    """Plain data from `sinfo --json` (22.05: a `nodes` list) or `sinfo -h -N -o SINFO_TEXT_FORMAT`,
    and `scontrol -o show partition`; with warnings for partitions that are down or lost nodes."""
    nodes: dict[str, dict[str, Any]] = {}
    text = sinfo.strip()
    if text.startswith("{"):
        for n in json.loads(text).get("nodes") or []:
            nodes[n["name"]] = {"state": str(n.get("state", "")).lower(),
                                "flags": [str(f).upper() for f in n.get("state_flags") or []],
                                "cpus": int(n.get("cpus") or 0), "memory_mb": int(n.get("real_memory") or 0),
                                "gres": n.get("gres") or "", "partitions": list(n.get("partitions") or [])}
    else:
        for line in text.splitlines():
            name, parts, state, cpus, mem, gres = (line.split("|") + [""] * 6)[:6]
            node = nodes.setdefault(name, {"state": "", "flags": [], "cpus": 0, "memory_mb": 0, "gres": "",
                                           "partitions": []})
            word = state.lower()
            node.update(state=word.rstrip("*~#!%$@^-+"), cpus=int(cpus or 0),
                        memory_mb=int(re.sub(r"\D", "", mem) or 0), gres=gres if gres != "(null)" else "")
            if word.startswith("drain"):
                node["flags"] = ["DRAIN"]
            node["partitions"].append(parts.rstrip("*"))
    partitions: dict[str, dict[str, Any]] = {}
    for line in partitions_text.splitlines():
        kv = _kv(line)
        if "PartitionName" not in kv:
            continue
        partitions[kv["PartitionName"]] = {
            "state": kv.get("State", "UNKNOWN"), "default": kv.get("Default") == "YES",
            "max_time_s": parse_slurm_time(kv.get("MaxTime")), "total_nodes": int(kv.get("TotalNodes", "0") or 0),
            "nodes": sorted(n for n, v in nodes.items() if kv["PartitionName"] in v["partitions"])}
    warnings = []
    for name, p in sorted(partitions.items()):
        usable = [n for n in p["nodes"] if node_usable(nodes[n])]
        p["usable_nodes"] = len(usable)
        if p["state"] != "UP":
            warnings.append(f"partition {name} is {p['state']}")
        elif len(usable) < len(p["nodes"]):
            warnings.append(f"partition {name}: {len(usable)} of {len(p['nodes'])} nodes usable "
                            f"({', '.join(sorted(set(nodes[n]['state'] for n in p['nodes'] if n not in usable)))})")
    data = {"partitions": partitions, "nodes": nodes}
    if version:
        data["version"] = version
    return Facts(cluster, data, tuple(warnings))


def node_usable(node: Mapping[str, Any]) -> bool:
    return node.get("state") in USABLE_NODE_STATES and not (set(node.get("flags") or ()) & BAD_NODE_FLAGS)


def _probed(facts: Facts | None, name: str) -> tuple[Mapping[str, Any] | None, list[Mapping[str, Any]]]:
    if facts is None:
        return None, []
    parts = facts.data.get("partitions") or {}
    nodes = facts.data.get("nodes") or {}
    p = parts.get(name)
    if p is None:
        return None, []
    return p, [nodes[n] for n in p.get("nodes") or () if n in nodes]


def offers(settings: SlurmSettings, facts: Facts | None) -> list[Offer]:
    """One offer per inventory partition; without any, one per partition the cluster reported."""
    listed = list(settings.partitions)
    if not listed and facts is not None:
        listed = [{"name": n} for n in sorted((facts.data.get("partitions") or {}))]
    return [_offer(settings, p, facts) for p in listed]


def _offer(settings: SlurmSettings, p: Mapping[str, Any], facts: Facts | None) -> Offer:
    name = p["name"]
    probed, pnodes = _probed(facts, name)
    usable = [n for n in pnodes if node_usable(n)]
    seen = usable or pnodes
    notes: list[str] = []
    gpus = p.get("gpus_per_node")
    gres_types = {parse_gres(n.get("gres"))[0] for n in seen}
    if gpus is None:
        gpus = min((parse_gres(n.get("gres"))[1] for n in seen), default=0)
    gpu_type = p.get("gpu_type")
    if gpu_type is None and gpus:
        known = gres_types - {None}
        gpu_type = known.pop() if len(known) == 1 and None not in gres_types else "*"
        if gpu_type == "*":
            notes.append("GPU type not declared: matches any gpu.type")
    cpus = p.get("cpus_per_node") or min((n.get("cpus") or 0 for n in seen), default=0) or UNKNOWN_CPUS
    if "memory_per_node" in p:
        memory = parse_bytes(p["memory_per_node"])
    else:
        memory = min((n.get("memory_mb") or 0 for n in seen), default=0) * 2**20 or UNKNOWN_MEMORY
    max_nodes = p.get("nodes")
    available = True
    if probed is not None:
        if probed.get("state") != "UP":
            available = False
            notes.append(f"partition is {probed.get('state')}")
        elif not usable:
            available = False
            notes.append("no usable nodes")
        elif max_nodes is None or len(usable) < max_nodes:
            if max_nodes is not None:
                notes.append(f"only {len(usable)} of {max_nodes} nodes usable now")
            max_nodes = len(usable)
    elif facts is not None and facts.data.get("partitions"):
        # advisory only: the probe may have reached another cluster (SLURM_CONF), sbatch will tell
        notes.append("the probed cluster lists no such partition")
    max_time = p.get("max_time")
    if max_time is not None:
        max_time_s = None if str(max_time).upper() in ("INFINITE", "UNLIMITED") else parse_duration(str(max_time))
    else:
        max_time_s = probed.get("max_time_s") if probed else None
    rate = p.get("gpu_hour_rate", settings.gpu_hour_rate)
    return Offer(
        cluster=settings.cluster, provider="slurm", pool=name, gpu_type=gpu_type if gpus else None,
        gpus_per_node=int(gpus), max_nodes=max_nodes, cpus_per_node=int(cpus), memory_per_node=int(memory),
        interconnect=p.get("interconnect"), nvlink=bool(p.get("nvlink", False)), max_time_s=max_time_s,
        node_hour_price=p.get("node_hour_rate"), gpu_hour_price=rate,
        capacities=tuple(p.get("capacities") or ("on-demand",)), available=available,
        note="; ".join(notes) or None)
