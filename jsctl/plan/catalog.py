"""The instance catalog: cloud instance types with their GPUs, shape, fabric and prices.

The built-in catalog (`jsctl/data/catalog.json`) holds list prices in one reference region per
cloud, each with the date it was read and its public source. A user catalog file (`catalog:` in
jsctl.yaml, YAML or JSON) adds entries or overrides fields of existing ones:

    instances:
      - cloud: aws
        name: p4de.24xlarge          # an existing entry: only the fields given change
        spot: 12.10
        date: 2026-11-28
        source: our AWS bill, November
      - cloud: aws                   # a new entry: every shape field is required
        name: p5e.48xlarge
        gpu: h200
        gpus: 8
        vcpus: 192
        memory: 2048Gi
        interconnect: efa
        region: us-east-1
        on_demand: 60.0

Problems in that file come back as positioned diagnostics (file:line:col), all at once.
"""
from __future__ import annotations

import functools
import json
import re
from importlib import resources
from typing import Any, Mapping

from jsctl.config.diagnostics import Diagnostic, did_you_mean, error, has_errors
from jsctl.config.loader import Document, load_file
from jsctl.config.quantities import parse_bytes
from jsctl.errors import ConfigError
from jsctl.model import gpus
from jsctl.model.catalog import GIB, Catalog, InstanceType

CLOUDS = ("aws", "gcp", "azure")
INTERCONNECTS = ("efa", "gpudirect-tcpx", "gpudirect-tcpxo", "gpudirect-rdma", "infiniband", "roce")

ENTRY_FIELDS = ("cloud", "name", "gpu", "gpus", "vcpus", "memory", "memory_gib", "interconnect", "nvlink", "region",
                "on_demand", "spot", "date", "source", "note")
REQUIRED_NEW = ("gpus", "vcpus", "region")  # plus gpu (null allowed for CPU-only), memory, a price
TOP_FIELDS = ("version", "about", "format_version", "sources", "instances")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


def _source_text(sources: Mapping[str, Any], ref: str) -> str:
    s = sources.get(ref)
    if isinstance(s, Mapping):
        return f"{s.get('url')}" + (f" (read {s['read']})" if s.get("read") else "")
    return str(ref)


def _entry(raw: Mapping[str, Any], sources: Mapping[str, Any], origin: str,
           base: InstanceType | None = None) -> InstanceType:
    """An InstanceType from a validated raw entry, over `base` when it overrides one."""
    if "memory" in raw:
        memory = parse_bytes(raw["memory"])
    elif "memory_gib" in raw:
        memory = int(float(raw["memory_gib"]) * GIB)
    else:
        memory = base.memory_bytes if base else 0
    gpu = raw["gpu"] if "gpu" in raw else (base.gpu_type if base else None)
    values = {
        "cloud": raw["cloud"], "name": raw["name"] if base is None else base.name,
        "gpu_type": gpus.canonical(gpu) if gpu else None,
        "gpus": int(raw.get("gpus", base.gpus if base else 0)),
        "vcpus": int(raw.get("vcpus", base.vcpus if base else 0)),
        "memory_bytes": memory,
        "interconnect": raw["interconnect"] if "interconnect" in raw else (base.interconnect if base else None),
        "nvlink": bool(raw["nvlink"]) if "nvlink" in raw else (base.nvlink if base else False),
        "region": str(raw.get("region", base.region if base else "")),
        "on_demand": _price(raw, "on_demand", base),
        "spot": _price(raw, "spot", base),
        "date": _date(raw, base),
        "source": _source_text(sources, raw["source"]) if raw.get("source") else
        (base.source if base and not _prices_given(raw) else origin),
        "note": raw.get("note", base.note if base else None),
        "origin": origin if base is None or raw.keys() - {"cloud", "name"} else base.origin,
    }
    return InstanceType(**values)


def _date(raw: Mapping[str, Any], base: InstanceType | None) -> str | None:
    if "date" in raw:
        return None if raw["date"] is None else str(raw["date"])
    return base.date if base and not _prices_given(raw) else None


def _prices_given(raw: Mapping[str, Any]) -> bool:
    return "on_demand" in raw or "spot" in raw


def _price(raw: Mapping[str, Any], key: str, base: InstanceType | None) -> float | None:
    if key in raw:
        return None if raw[key] is None else float(raw[key])
    return getattr(base, key) if base else None


@functools.lru_cache(maxsize=None)
def builtin() -> Catalog:
    raw = json.loads(resources.files("jsctl").joinpath("data", "catalog.json").read_text("utf-8"))
    sources = raw.get("sources") or {}
    return Catalog(tuple(_entry(e, sources, "built-in catalog") for e in raw["instances"]))


def validate_document(doc: Document, base: Catalog) -> list[Diagnostic]:
    """Positioned diagnostics for a user catalog document (every problem, not just the first)."""
    out: list[Diagnostic] = []

    def at(path: tuple, msg: str, hint: str | None = None, key: bool = False) -> None:
        p = doc.where(path, key=key)
        out.append(error("CAT01", msg, doc.path, p.line, p.col, hint=hint, length=p.length))

    data = doc.data
    if not isinstance(data, dict):
        at((), "a catalog file is a mapping with an 'instances' list")
        return out
    for k in data:
        if k not in TOP_FIELDS:
            at((k,), f"unknown field '{k}' in catalog{did_you_mean(k, TOP_FIELDS)}", key=True)
    sources = data.get("sources") or {}
    if not isinstance(sources, dict):
        at(("sources",), "'sources' must be a mapping of name to {url, read}")
        sources = {}
    items = data.get("instances")
    if items is None:
        at((), "a catalog file needs an 'instances' list")
        return out
    if not isinstance(items, list):
        at(("instances",), "'instances' must be a list of instance types")
        return out
    seen: dict[tuple[str, str], int] = {}
    for i, e in enumerate(items):
        path = ("instances", i)
        if not isinstance(e, dict):
            at(path, "each instance type is a mapping (cloud, name, gpu, gpus, ...)")
            continue
        for k in e:
            if k not in ENTRY_FIELDS:
                at(path + (k,), f"unknown field '{k}' in instance type{did_you_mean(k, ENTRY_FIELDS)}", key=True)
        cloud, name = e.get("cloud"), e.get("name")
        if cloud not in CLOUDS:
            at(path + ("cloud",) if "cloud" in e else path,
               f"'cloud' must be one of {', '.join(CLOUDS)}" + (f", got '{cloud}'" if cloud is not None else ""))
        if not isinstance(name, str) or not name.strip():
            at(path + ("name",) if "name" in e else path, "'name' (the instance type) is required")
            continue
        if cloud not in CLOUDS:
            continue
        key = (cloud, name.lower())
        if key in seen:
            at(path + ("name",), f"instance type {cloud}/{name} is listed twice (first at line "
               f"{doc.where(('instances', seen[key], 'name')).line})")
        seen[key] = i
        existing = base.get(cloud, name)
        _check_fields(e, path, at, sources)
        if existing is None:
            missing = [f for f in REQUIRED_NEW if f not in e]
            if "gpu" not in e:
                missing.insert(0, "gpu")
            if "memory" not in e and "memory_gib" not in e:
                missing.append("memory")
            if "on_demand" not in e and "spot" not in e:
                missing.append("on_demand or spot")
            if missing:
                at(path + ("name",), f"new instance type {cloud}/{name} needs {', '.join(missing)}",
                   hint="an entry that overrides a built-in one needs only the fields that change; "
                        f"{cloud} has: {', '.join(base.names(cloud)[:6])}…" if base.names(cloud) else None)
    return out


def _check_fields(e: dict, path: tuple, at: Any, sources: Mapping[str, Any]) -> None:
    gpu = e.get("gpu")
    if gpu is not None and (not isinstance(gpu, str) or not gpus.resolve(gpu)):
        at(path + ("gpu",), f"unknown GPU type '{gpu}'{did_you_mean(str(gpu), gpus.known_names())}",
           hint="known types: " + ", ".join(gpus.known_names()))
    elif gpu is not None and gpus.model(gpu) is None:
        at(path + ("gpu",), f"'{gpu}' is a GPU family; an instance type carries one model "
           f"({', '.join(m.name for m in gpus.resolve(gpu))})")
    for k in ("gpus", "vcpus"):
        if k in e and (isinstance(e[k], bool) or not isinstance(e[k], int) or e[k] < (0 if k == "gpus" else 1)):
            at(path + (k,), f"'{k}' must be a {'non-negative' if k == 'gpus' else 'positive'} integer, got {e[k]!r}")
    if "memory" in e:
        try:
            if parse_bytes(e["memory"]) <= 0:
                raise ValueError
        except (ValueError, TypeError, AttributeError):
            at(path + ("memory",), f"'memory' must be a quantity like 1152Gi, got {e['memory']!r}")
    if "memory_gib" in e and (isinstance(e["memory_gib"], bool) or not isinstance(e["memory_gib"], (int, float))
                              or e["memory_gib"] <= 0):
        at(path + ("memory_gib",), f"'memory_gib' must be a positive number, got {e['memory_gib']!r}")
    ic = e.get("interconnect")
    if ic is not None and ic not in INTERCONNECTS:
        at(path + ("interconnect",), f"unknown interconnect '{ic}'{did_you_mean(str(ic), INTERCONNECTS)}",
           hint="known: " + ", ".join(INTERCONNECTS) + " (leave it out for ordinary networking)")
    if "nvlink" in e and not isinstance(e["nvlink"], bool):
        at(path + ("nvlink",), f"'nvlink' must be true or false, got {e['nvlink']!r}")
    for k in ("on_demand", "spot"):
        v = e.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0):
            at(path + (k,), f"'{k}' must be a price in $/hour (a number ≥ 0), got {v!r}")
    if e.get("date") is not None and not DATE.match(str(e["date"])):
        at(path + ("date",), f"'date' must be a date like 2026-11-28, got {e['date']!r}")
    if "region" in e and not (isinstance(e["region"], str) and e["region"]):
        at(path + ("region",), "'region' must be a region name like us-east-1")
    if ("on_demand" in e or "spot" in e) and "source" not in e:
        at(path + ("on_demand" if "on_demand" in e else "spot",), "a price needs its 'source' (and a 'date')",
           hint="say where the price comes from, e.g. source: https://aws.amazon.com/ec2/pricing/ or 'our bill'",
           key=True)


def merge(base: Catalog, doc: Document) -> Catalog:
    """The base catalog with a validated user document's entries added or overriding fields."""
    sources = {**(doc.data.get("sources") or {})}
    origin = doc.path
    entries = {i.key: i for i in base.instances}
    order = [i.key for i in base.instances]
    for e in doc.data.get("instances") or []:
        key = (e["cloud"], e["name"].lower())
        old = entries.get(key)
        entries[key] = _entry(e, sources, origin, old)
        if old is None:
            order.append(key)
    return Catalog(tuple(entries[k] for k in order))


def load(path: str | None, base: Catalog | None = None) -> Catalog:
    """The built-in catalog, with the user's catalog file applied when `path` is given.

    Raises ConfigError with every diagnostic (and the file's text in `.sources`) when the file is bad.
    """
    base = base or builtin()
    if not path:
        return base
    doc, diags = load_file(path)
    if doc is not None and not has_errors(diags):
        diags.extend(validate_document(doc, base))
    if doc is None or has_errors(diags):
        exc = ConfigError(diags, f"catalog file {path} has errors")
        exc.sources = {doc.path: doc.text} if doc else {}  # type: ignore[attr-defined]
        raise exc
    return merge(base, doc)

