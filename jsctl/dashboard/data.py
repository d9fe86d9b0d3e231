"""What the dashboard's pages show, gathered from the SDK (jsctl.api) as JSON-able dicts.

No web framework here: the app only routes requests to these methods. Every view is cached for a
moment (one refresh of the engines serves every open tab polling at once), and an action clears
the cache so the next poll shows what it did.
"""
from __future__ import annotations

import json
import math
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable

from jsctl import api
from jsctl.api.jobs import artifact_files
from jsctl.errors import JsctlError, UsageError
from jsctl.model.job import Placement

if TYPE_CHECKING:
    from jsctl.config.workspace import Workspace
    from jsctl.model.state import StateRecord

CURVES = ("loss", "samples_per_s", "tokens_per_s", "step_time_s", "peak_mem_bytes", "lr")
SERIES_LIMIT = 5000  # the newest points per curve sent to a page
LOG_LIMIT = 2000  # the most log lines one answer carries (a page asks again from where it stopped)
LOCK_TIMEOUT_S = 30.0  # actions wait this long for the state lock (the pages' own refreshes hold it briefly)
PAUSE_TIMEOUT_S = 300.0  # as `jsctl pause`'s default
ACTIONS = ("stop", "pause", "resume")
_MARK = '{"jetstream"'


class NotFound(UsageError):
    """No job in state answers to the reference (the app answers 404)."""


class Cache:
    """Values computed at most once per `ttl` seconds per key; callers asking meanwhile wait for the
    one computation in progress instead of starting their own. Errors are not cached."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[Any, threading.Lock] = {}
        self._values: dict[Any, tuple[float, Any]] = {}

    def get(self, key: Any, ttl: float, compute: Callable[[], Any]) -> Any:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            hit = self._values.get(key)
            if hit is not None and time.monotonic() - hit[0] < ttl:
                return hit[1]
            value = compute()
            self._values[key] = (time.monotonic(), value)
            return value

    def clear(self) -> None:
        with self._guard:
            self._values.clear()


def workflow_of(address: str) -> str | None:
    parts = address.split(".")
    return parts[1] if len(parts) >= 4 and parts[0] == "workflow" else None


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def metric_record(line: str) -> dict[str, Any] | None:
    """The runtime's JSON record on a log line (text before it, a log prefix, is ignored), else None."""
    start = line.find(_MARK)
    if start < 0:
        return None
    try:
        rec = json.loads(line[start:])
    except ValueError:
        return None
    return rec if isinstance(rec, dict) and isinstance(rec.get("jetstream"), str) else None


def per_rank(rec: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """The other ranks' figures a multi-process metric line carries (jsruntime's "ranks": loss, step
    time and peak memory, lists indexed by rank), each as a record of its own; rank 0 is the line."""
    ranks = rec.get("ranks")
    if not isinstance(ranks, dict):
        return []
    columns = {name: values for name, values in ranks.items() if name in CURVES and isinstance(values, list)}
    width = max((len(v) for v in columns.values()), default=0)
    return [(r, {"step": rec["step"], "time": rec.get("time"),
                 **{name: values[r] for name, values in columns.items() if r < len(values)}})
            for r in range(1, width)]


def placement_view(p: dict[str, Any]) -> dict[str, Any]:
    placement = Placement.from_dict(p) if p else None
    try:
        text = placement.describe() if placement else None
    except (TypeError, ValueError):
        text = None
    return {"cluster": p.get("cluster"), "pool": p.get("pool"), "nodes": int(p.get("nodes") or 1) if p else None,
            "gpus_per_node": int(p.get("gpus_per_node") or 0) if p else None, "gpu_type": p.get("gpu_type"),
            "emulated": bool(p.get("emulated")), "price_per_hour": p.get("price_per_hour"), "text": text}


def layout(p: dict[str, Any], names: tuple[str, ...]) -> list[dict[str, Any]]:
    """Where the ranks are: one entry per node (or pod) with its GPUs and the ranks on it (rank =
    node index × GPUs per node + local rank, as torchrun numbers them)."""
    if not p:
        return []
    nodes = max(int(p.get("nodes") or 1), 1)
    per = int(p.get("gpus_per_node") or 0)
    slots = per or 1
    count = max(nodes, len(names))
    return [{"name": names[i] if i < len(names) else f"node {i}", "gpus": per, "gpu_type": p.get("gpu_type"),
             "emulated": bool(p.get("emulated")), "ranks": list(range(i * slots, (i + 1) * slots))}
            for i in range(count)]


def workflows(jobs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each workflow's DAG: its jobs (addresses) and the edges between them (dependency → dependent)."""
    found: dict[str, dict[str, Any]] = {}
    members = {j["address"] for j in jobs}
    for j in jobs:
        name = j.get("workflow")
        if not name:
            continue
        entry = found.setdefault(name, {"jobs": [], "edges": []})
        entry["jobs"].append(j["address"])
        entry["edges"] += [[dep, j["address"]] for dep in j.get("depends_on") or () if dep in members]
    return found


class Dashboard:
    """The pages' data for one workspace, from jsctl.api."""

    def __init__(self, ws: Workspace, ttl_s: float = 1.0) -> None:
        self.ws = ws
        self.ttl = ttl_s
        self.cache = Cache()

    # ---- lookups -------------------------------------------------------------------------------------
    def address(self, ref: str) -> str:
        state = api.store_for(self.ws).read()
        if not state.find(ref):
            known = ", ".join(sorted(set(state.resources) | set(state.not_submitted))) or "none"
            raise NotFound(f"no job {ref!r} in state (jobs: {known})")
        return api.find(state, ref)

    # ---- the jobs page -------------------------------------------------------------------------------
    def jobs(self) -> dict[str, Any]:
        return self.cache.get("jobs", self.ttl, self._jobs)

    def _jobs(self) -> dict[str, Any]:
        warnings: list[str] = []
        rows = api.status(self.ws, None, warnings.append)
        state = api.store_for(self.ws).read()
        records, unsubmitted = state.records(), state.unsubmitted()
        now = time.time()
        jobs = []
        for row in rows:
            record, entry = records.get(row.address), unsubmitted.get(row.address)
            data = row.to_dict()
            data.update(self._record_view(record, entry))
            data["age_s"] = now - row.submitted_at if row.submitted_at else None
            jobs.append(data)
        return {"now": now, "jobs": jobs, "workflows": workflows(jobs), "warnings": warnings}

    @staticmethod
    def _record_view(record: StateRecord | None, entry: Any) -> dict[str, Any]:
        placement = dict(record.placement or {}) if record else {}
        basis = record.cost_basis if record else None
        source = record or entry
        return {"workflow": workflow_of(source.address) if source else None,
                "cluster": source.cluster if source else None, "provider": source.provider if source else None,
                "placement": placement_view(placement), "gpus": record.gpus if record else 0,
                "estimate": basis.expected() if basis else None, "bound": basis.bound if basis else None,
                "price_per_hour": basis.price_per_hour if basis else None,
                "depends_on": list(source.depends_on) if source else []}

    # ---- one job -------------------------------------------------------------------------------------
    def job(self, ref: str) -> dict[str, Any]:
        address = self.address(ref)
        return self.cache.get(("job", address), self.ttl, lambda: self._job(address))

    def _job(self, address: str) -> dict[str, Any]:
        warnings: list[str] = []
        detail = api.describe(self.ws, address, warnings.append)
        row, record = detail.status, detail.record
        out: dict[str, Any] = {"address": address, "status": row.to_dict(), "warnings": warnings,
                               "now": time.time(), **self._record_view(record, detail.not_submitted)}
        if detail.not_submitted is not None:
            out["not_submitted"] = detail.not_submitted.to_dict()
        if record is None:
            return out
        placement = dict(record.placement or {})
        art = record.artifact or {}
        advice = detail.recommendation
        out.update(
            job_id=record.job_id, handle=str(record.handle) if record.handle else None,
            generation=record.generation, strategy=dict(record.strategy or {}), outputs=dict(record.outputs),
            nodes=layout(placement, self._nodes(address, row.phase)),
            events=[e.to_dict() for e in record.events],
            engine_events=[e.to_dict() for e in detail.events], engine_events_error=detail.events_error,
            artifact={"summary": art.get("summary"), "digest": record.artifact_digest,
                      "files": [[f.name, f.text if f.text is not None else
                                 f"({f.digest}: the engine no longer holds this file)"]
                                for f in artifact_files(self.ws, record)]},
            recommendation=advice.describe() if advice is not None and advice.wrong else None)
        return out

    def _nodes(self, address: str, phase: str) -> tuple[str, ...]:
        """The nodes (or pods) the engine says the job runs on now; none when it is not running."""
        if phase not in ("RUNNING", "PAUSED", "PENDING"):
            return ()
        state = api.store_for(self.ws).read()
        if address not in state.resources:
            return ()
        only = replace(state, resources={address: state.resources[address]}, not_submitted={})
        live = api.refresh(self.ws, only).get(address)
        return tuple(live.nodes) if live is not None else ()

    # ---- a job's curves ------------------------------------------------------------------------------
    def metrics(self, ref: str) -> dict[str, Any]:
        address = self.address(ref)
        return self.cache.get(("metrics", address), self.ttl, lambda: self._metrics(address))

    def _metrics(self, address: str) -> dict[str, Any]:
        by_rank: dict[int, dict[int, dict[str, Any]]] = {}
        checkpoints: list[dict[str, Any]] = []
        events: list[dict[str, Any]] = []
        mem_kind = None
        try:
            lines = api.logs(self.ws, address, metrics=True)
            for line in lines:
                rec = metric_record(line)
                if rec is None:
                    continue
                kind = rec["jetstream"]
                if kind == "metrics" and isinstance(rec.get("step"), int):
                    rank = rec.get("rank") if isinstance(rec.get("rank"), int) else 0
                    by_rank.setdefault(rank, {})[rec["step"]] = rec  # a replay after a restart overwrites its steps
                    for other, figures in per_rank(rec):
                        by_rank.setdefault(other, {})[rec["step"]] = figures
                    mem_kind = rec.get("mem_kind", mem_kind)
                elif kind == "checkpoint" and isinstance(rec.get("step"), int):
                    checkpoints.append({"step": rec["step"], "mode": rec.get("mode"), "path": rec.get("path"),
                                        "blocking_s": _finite(rec.get("blocking_s")),
                                        "write_s": _finite(rec.get("write_s")), "time": _finite(rec.get("time"))})
                elif kind == "event":
                    events.append({"event": str(rec.get("event")), "step": rec.get("step") if isinstance(
                        rec.get("step"), int) else None, "time": _finite(rec.get("time"))})
        except JsctlError as exc:  # not submitted, or its log cannot be read now
            return {"address": address, "series": [], "checkpoints": [], "events": [], "unavailable": exc.message}
        series = []
        for rank, steps in sorted(by_rank.items()):
            keys = sorted(steps)[-SERIES_LIMIT:]
            curves = {name: [_finite(steps[s].get(name)) for s in keys] for name in CURVES}
            series.append({"rank": rank, "points": len(keys), "step": keys,
                           "time": [_finite(steps[s].get("time")) for s in keys], **curves})
        return {"address": address, "series": series, "checkpoints": checkpoints[-500:], "events": events[-500:],
                "mem_kind": mem_kind}

    # ---- a job's log ---------------------------------------------------------------------------------
    def logs(self, ref: str, after: int = 0, node: str | None = None, with_metrics: bool = False) -> dict[str, Any]:
        """The job's log lines from line `after` on (at most LOG_LIMIT, the newest), and `next`, where
        the following call starts. A log shorter than `after` started over: `reset` and all of it."""
        address = self.address(ref)
        key = ("logs", address, node or None, with_metrics)
        try:
            lines = self.cache.get(key, min(self.ttl, 0.5), lambda: [
                line.rstrip("\r\n") for line in api.logs(self.ws, address, node or None, metrics=with_metrics)])
        except JsctlError as exc:
            return {"address": address, "lines": [], "next": 0, "first": 0, "reset": False,
                    "unavailable": exc.message}
        total = len(lines)
        reset = after > total
        start = 0 if reset else max(after, 0)
        first = max(start, total - LOG_LIMIT)
        return {"address": address, "lines": lines[first:], "first": first, "next": total,
                "skipped": first - start, "reset": reset}

    # ---- clusters and cost ---------------------------------------------------------------------------
    def clusters(self) -> dict[str, Any]:
        return self.cache.get("clusters", max(self.ttl, 2.0), self._clusters)

    def _clusters(self) -> dict[str, Any]:
        warnings: list[str] = []
        rows = api.cluster_status(self.ws, warnings.append)
        jobs = self.jobs()["jobs"]
        out = []
        for r in rows:
            data = r.to_dict()
            data["jobs"] = [{k: j.get(k) for k in ("address", "name", "phase", "gpus", "cost_so_far",
                                                   "price_per_hour", "estimate")}
                            for j in jobs if j.get("cluster") == r.cluster]
            out.append(data)
        return {"now": time.time(), "clusters": out, "warnings": warnings}

    def cost(self) -> dict[str, Any]:
        return self.cache.get("cost", max(self.ttl, 2.0), self._cost)

    def _cost(self) -> dict[str, Any]:
        warnings: list[str] = []
        report = api.cost_report(self.ws, echo=warnings.append)
        data = report.to_dict()
        clusters: dict[str, dict[str, Any]] = {}
        for row in report.rows:
            c = clusters.setdefault(row.cluster or "—", {"cluster": row.cluster or "—", "actual": 0.0,
                                                         "estimate": 0.0, "runs": 0})
            c["actual"] = round(c["actual"] + (row.actual or 0.0), 2)
            c["estimate"] = round(c["estimate"] + (row.estimate or 0.0), 2)
            c["runs"] += 1
        data["clusters"] = sorted(clusters.values(), key=lambda c: c["cluster"])
        data["warnings"] = warnings
        return data

    # ---- actions (only with --allow-actions) ---------------------------------------------------------
    def act(self, verb: str, ref: str) -> dict[str, Any]:
        """stop, pause or resume, through the same SDK functions as the CLI's verbs."""
        if verb not in ACTIONS:
            raise NotFound(f"no action {verb!r}")
        address = self.address(ref)
        try:
            if verb == "pause":
                done = api.pause(self.ws, address, PAUSE_TIMEOUT_S, False, LOCK_TIMEOUT_S)
                return {"verb": "pause", "address": done.address, "handle": str(done.handle), "step": done.step,
                        "how": done.how}
            result = getattr(api, verb)(self.ws, address, LOCK_TIMEOUT_S)
            return {"verb": verb, "address": result.address, "handle": str(result.handle)}
        finally:
            self.cache.clear()
