"""Saved plans (`plan -out FILE`): everything apply needs, plus the state's serial and lineage."""
from __future__ import annotations

import json

from dataclasses import fields

from jsctl.errors import PlanError
from jsctl.files import write_json
from jsctl.plan.cost import CostEstimate
from jsctl.plan.model import Explanation, Plan, ResourceChange
from jsctl.model.job import Placement
from jsctl.plan.output import to_json
from jsctl.model.artifact import RenderedArtifact
from jsctl.providers import registry

KIND = "jsctl-plan"


def save(plan: Plan, path: str) -> None:
    data = {"kind": KIND, **to_json(plan)}
    write_json(path, data, indent=1)


def _cost(d: dict | None) -> CostEstimate | None:
    if not d:
        return None
    names = {f.name for f in fields(CostEstimate)}
    return CostEstimate(**{**{k: v for k, v in d.items() if k in names}, "duration_from": d.get("duration_from") or ""})


def load(path: str) -> Plan:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise PlanError(f"cannot read plan file {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise PlanError(f"{path} is not a jsctl plan file")
    changes = []
    for rc in data["resource_changes"]:
        ch = rc["change"]
        actions = ch["actions"]
        action = "replace" if actions == ["delete", "create"] else actions[0]
        after = ch.get("after") or {}
        art = after.get("artifact")
        changes.append(ResourceChange(
            address=rc["address"], name=rc["name"], action=action,
            job_id=after.get("job_id") or (ch.get("before") or {}).get("job_id"),
            generation=after.get("generation") or (ch.get("before") or {}).get("generation"),
            provider=rc.get("provider"), cluster=rc.get("cluster"),
            placement=Placement.from_dict(after.get("placement")),
            artifact=RenderedArtifact.from_dict(art, registry.get(rc["provider"]).request_type()) if art else None,
            spec=after.get("spec"),
            before=ch.get("before"), depends_on=tuple(after.get("depends_on") or ()),
            dependencies_enforced=bool(after.get("dependencies_enforced")),
            strategy=after.get("strategy") or {}, outputs=after.get("outputs") or {}, cost=_cost(after.get("cost")),
            why=Explanation(tuple(ch.get("reasons") or ()), tuple(ch.get("forces_replacement") or ()),
                            command=tuple(rc.get("command") or ()), drift=rc.get("drift"),
                            scheduler=rc.get("scheduler"), refused=bool(rc.get("refused")),
                            strategy_advice=after.get("strategy_advice"))))
    prior = data["prior_state"]
    from jsctl.plan.drift import Observation  # --- drift: a saved --refresh-only plan

    observed = tuple(Observation.from_dict(o) for o in data.get("resource_drift") or ())
    return Plan(tuple(changes), prior["serial"], prior["lineage"], prior["exists"], tuple(data.get("files") or ()),
                data.get("workspace"), data.get("destroy", False), refresh=data.get("refresh", True),
                refresh_only=bool(data.get("refresh_only")), observed=observed)
