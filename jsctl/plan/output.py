"""How a Plan reads: Terraform's symbols for people, markdown for pull requests, versioned JSON for tools."""
from __future__ import annotations

import json
from typing import Any, Sequence

from jsctl import JSON_FORMAT_VERSION
from jsctl.errors import JsctlError
from jsctl.plan import cost, strategy_config
from jsctl.plan.model import SYMBOL, TF_ACTIONS, Plan, ResourceChange
from jsctl.plan.placement import PlacementResult, candidates_table
from jsctl.render import shjoin

VERB = {"create": "will be created", "update": "will be updated in-place", "replace": "must be replaced",
        "delete": "will be destroyed"}


def _money(x: float | None) -> str:
    return f"${x:,.2f}" if x is not None else "—"


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value) if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= limit else text[: limit - 1] + "…"


def job_lines(c: ResourceChange, show_artifacts: bool = False) -> list[str]:
    sym = SYMBOL[c.action]
    out = [f"  # {c.address} {VERB[c.action]}" + (f" ({'; '.join(c.why.reasons)})" if c.why.reasons and c.action != "replace" else "")]
    out.append(f"{sym:>3} job \"{c.name}\" {{")
    if c.action == "delete":
        out.append(f"      - id          = \"{c.job_id}\"")
        if c.before and c.before.get("handle"):
            out.append(f"      - handle      = \"{c.before['handle']}\"")
        out.append("    }")
        return out
    mark = "+" if c.action in ("create", "replace") else " "
    if c.action in ("update", "replace") and c.why.fields:
        for f in c.why.fields:
            out.append(f"      ~ {f.path} = {_short(f.before)} -> {_short(f.after)}")
    if c.action == "replace":
        for r in c.why.reasons:
            out.append(f"      # {r}")
    p = c.placement
    before_id = (c.before or {}).get("job_id")
    if before_id and before_id != c.job_id:
        out.append(f"      ~ id          = \"{before_id}\" -> \"{c.job_id}\"")
    else:
        out.append(f"      {mark} id          = \"{c.job_id}\"")
    if p:
        out.append(f"      {mark} placement   = {p.describe()}")
    if c.why.strategy:
        out.append(f"      {mark} strategy    = {c.why.strategy}")
        chosen_why = (c.why.strategy_advice or {}).get("why")
        if chosen_why and chosen_why != "as configured":  # parallelism: auto — the advisor's one line
            out.append(f"                    ({chosen_why})")
    generated = strategy_config.describe(c.strategy) if c.strategy else ""
    if generated:  # what JETSTREAM_STRATEGY (and a DeepSpeed job's config file) carries
        out.append(f"      {mark} config      = {generated}")
    if c.cost is not None:
        before = (c.before or {}).get("cost_basis", {}).get("price_per_hour")
        if c.action == "update" and before is not None and before != c.cost.price_per_hour:
            out.append(f"      ~ cost        = {_money(before)}/h -> {c.cost.text()}")
        else:
            out.append(f"      {mark} cost        = {c.cost.text()}")
        assumed = cost.format_assumptions(c.cost)
        if assumed:
            out.append(f"                    ({assumed})")
    if c.artifact:
        command = c.why.command
        if command:
            out.append(f"      {mark} command     = {shjoin(command)}")
        for name, path in c.outputs.items():
            out.append(f"      {mark} output      = {name} → {path}")
        if c.depends_on:
            deps = ", ".join(c.depends_on)
            how = " (the engine holds it until they have succeeded)" \
                if c.dependencies_enforced else " (apply submits it when they have succeeded)"
            out.append(f"      {mark} depends_on  = {deps}{how}")
        if c.why.scheduler:
            out.append(f"      {mark} scheduler   = {'REFUSED: ' if c.why.refused else ''}{c.why.scheduler}")
        if c.secrets:
            out.append(f"      {mark} secrets     = {', '.join(c.secrets)} (read from your environment at apply)")
        lines = sum(content.count("\n") for _, content in c.artifact.files)
        out.append(f"      {mark} artifact    = {c.artifact.summary}, {lines} lines, sha256 "
                   f"{c.artifact.digest[:6]}…{c.artifact.digest[-2:]}"
                   + ("" if show_artifacts else " (--show-artifacts to print)"))
        for note in c.artifact.notes:
            out.append(f"        note: {note}")
    out.append("    }")
    if show_artifacts and c.artifact:
        for name, content in c.artifact.files:
            out.append(f"    ---- {name} ----")
            out.extend("    " + line for line in content.rstrip("\n").split("\n"))
    return out


def render_text(plan: Plan, show_artifacts: bool = False, show_candidates: bool = True) -> str:
    out: list[str] = []
    if plan.refreshed:
        out += [plan.refreshed, ""]
    out += [f"Warning: {w}" for w in warnings(plan)]
    if warnings(plan):
        out.append("")
    if plan.refresh_only:
        return "\n".join(out + refresh_only_lines(plan))
    drift = [c for c in plan.changes if c.why.drift]
    if drift:
        out.append("Note: Objects have changed outside of jsctl")
        out.append("")
        for c in drift:
            out += [f"  # {c.address} has changed", f"  ~ {c.why.drift}", ""]
    acting = [c for c in plan.changes if c.action != "no-op"]
    if not acting:
        out.append("No changes. The jobs match the configuration and what is live.")
        return "\n".join(out)
    out += ["jsctl will perform the following actions:", ""]
    for c in acting:
        out += job_lines(c, show_artifacts)
        if show_candidates and c.action in ("create", "replace") and len(c.why.candidates) > 1:
            out.append(f"\n  Candidates considered for {c.address}:")
            out += ["    " + line for line in candidates_table(PlacementResult(c.placement, c.why.candidates))]
        out.append("")
    out.append(summary(plan))
    return "\n".join(out)


# --- drift: plan --refresh-only ------------------------------------------------------------------------
def refresh_only_lines(plan: Plan) -> list[str]:
    """Terraform's refresh-only plan: what changed outside jsctl, and that apply only records it."""
    drifted = [o for o in plan.observed if o.drift]
    if not drifted:
        return ["No changes. The jobs in state match what is live; there is nothing to record."]
    out = ["Note: Objects have changed outside of jsctl", ""]
    for o in drifted:
        out += [f"  # {o.address} has changed" + (" (the engine no longer knows it)" if o.drift.gone else ""),
                f"  ~ {o.drift.text()}", ""]
    n = len(drifted)
    out += ["This is a refresh-only plan: jsctl will not submit, update, replace or cancel any job to undo "
            "these changes. Apply it (jsctl apply --refresh-only) to record them in the state.", "",
            f"Plan: record {n} changed job{'s' if n != 1 else ''} in state; 0 to add, 0 to change, 0 to destroy."]
    return out


def summary(plan: Plan) -> str:
    add, change, destroy = plan.count()
    text = f"Plan: {add} to add, {change} to change, {destroy} to destroy."
    if plan.cost is not None and (plan.cost.per_hour or plan.cost.prior_per_hour or plan.cost.unpriced):
        text += "   " + cost.format_summary(plan.cost)
    return text


def warnings(plan: Plan) -> tuple[str, ...]:
    """What probes and checks said, then what the cost estimates found worth a warning."""
    return tuple(plan.warnings) + (plan.cost.warnings if plan.cost else ())


def why_text(c: ResourceChange) -> str:
    """What an action is for, in a few words: the markdown plan's Why column."""
    parts: list[str] = ["new"] if c.action == "create" else []
    edited = [f.path for f in c.why.fields]
    if edited and c.action in ("update", "replace"):
        parts.append("changed: " + ", ".join(edited))
    parts += c.why.reasons
    if c.action == "replace" and c.why.forces and not any("forces" in r for r in c.why.reasons):
        parts.append("forces replacement: " + ", ".join(c.why.forces))
    if c.why.drift:
        parts.append("changed outside jsctl")
    if c.action == "update" and not parts:
        parts.append("bookkeeping only (what runs stays as it is)")
    return "; ".join(parts)


def _gib(x: float) -> str:
    return f"{x / 2**30:8.2f} GiB"


def memory_lines(c: ResourceChange) -> list[str]:
    """Every term of one job's memory per GPU (`plan --explain-memory`), from the advice's data."""
    advice = c.why.strategy_advice or {}
    mem = advice.get("memory")
    if not mem:
        why = "no placement" if not advice else "model size unknown (give model.parameters or model.config)"
        return [f"  {c.address}: not estimated: {why}"]
    gpu = advice.get("gpu_memory_bytes")
    p = c.placement
    where = f"{mem['nodes']} × {mem['gpus_per_node']}" + (f" {p.gpu_type}" if p and p.gpu_type else "")
    out = [f"  {c.address}: {mem['option']}, {mem['precision']}, {where}"]
    m = mem.get("model") or {}
    shape = [f"{m['parameters'] / 1e9:.2f}B parameters ({m.get('source') or 'model'})"]
    for key, label in (("hidden", "hidden"), ("layers", "layers"), ("heads", "heads"), ("kv_heads", "KV heads"),
                       ("intermediate", "intermediate"), ("vocab", "vocab"), ("experts", "experts"),
                       ("sequence_length", "sequence"), ("micro_batch_size", "micro-batch")):
        if m.get(key):
            shape.append(f"{label} {m[key]}")
    out.append("    model: " + ", ".join(shape))
    width = max(len(t["name"]) for t in mem["terms"])
    for t in mem["terms"]:
        mark = ">=" if t["lower_bound"] else "  "
        out.append(f"    {t['name']:<{width}} {mark}{_gib(t['bytes'])}   {t['why']}")
    total = f"    {'total':<{width}} {'>=' if mem['lower_bound'] else '  '}{_gib(mem['total_bytes'])}"
    if gpu:
        verdict = {True: "fits", False: "DOES NOT FIT", None: "unknown"}[advice.get("fits")]
        total += f"   of {gpu / 2**30:.0f} GiB per GPU: {verdict}"
    out.append(total)
    if mem["lower_bound"]:
        out.append("    (>= a lower bound: its inputs are missing; the true figure is larger)")
    return out


def explain_memory(plan: Plan) -> str:
    """The `--explain-memory` section: memory per GPU with every term, per job."""
    out = ["Memory per GPU (estimate; every term):"]
    for c in plan.changes:
        if c.action == "delete":
            continue
        out += memory_lines(c) + [""]
    return "\n".join(out).rstrip("\n")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _error_text(exc: JsctlError) -> str:
    return f"Error: {exc.message}" + (f"\n  {exc.hint}" if exc.hint else "")


def render_markdown(plan: Plan | None, errors: Sequence[JsctlError] = ()) -> str:
    """The plan for a pull request comment; with `errors`, the error first and what could be planned."""
    out = ["### jsctl plan", ""]
    for exc in errors:
        out += ["**Error:** the plan failed; apply would not run.", "", "```text", _error_text(exc), "```", ""]
    if plan is None:
        return "\n".join(out).rstrip("\n")
    add, change, destroy = plan.count()
    out += [f"**{add}** to add, **{change}** to change, **{destroy}** to destroy.", ""]
    if plan.cost is not None and plan.has_changes:
        out += [cost.format_summary(plan.cost) + ".", ""]
        if plan.cost.budget is not None:
            out += [f"Budget: {cost.money(plan.cost.budget)}, "
                    f"{'within it' if plan.cost.within_budget else 'over it'}.", ""]
    out += [f"> **Warning:** {w}" for w in warnings(plan)]
    if warnings(plan):
        out.append("")
    if plan.refresh_only:  # --- drift
        return "\n".join(out + ["```text", *refresh_only_lines(plan), "```"])
    acting = [c for c in plan.changes if c.action != "no-op"]
    if not acting:
        return "\n".join(out + ["No changes."])
    out += ["| | Job | ID | Placement | $/h | Why |", "|---|---|---|---|---|---|"]
    for c in acting:
        where = c.placement.describe() if c.placement else (c.before or {}).get("handle", "")
        if not c.placement and c.action != "delete":
            where = "not placed"
        price = f"{c.price_per_hour:.2f}" if c.price_per_hour is not None else ""
        out.append(f"| `{SYMBOL[c.action]}` | `{c.address}` | `{c.job_id}` | {_cell(where or '')} | {price} | "
                   f"{_cell(why_text(c))} |")
    out.append("")
    for c in acting:
        out += [f"<details><summary><code>{c.address}</code> {VERB[c.action]}</summary>", "", "```diff"]
        out += job_lines(c)
        out += ["```", "</details>", ""]
    return "\n".join(out)


def error_dict(exc: JsctlError) -> dict:
    return {"message": exc.message, "hint": exc.hint}


def failed_json(errors: Sequence[JsctlError], plan: Plan | None = None, files: Sequence[str] = ()) -> dict:
    """The JSON document of a plan that failed: `errors`, and whatever could be planned."""
    if plan is not None:
        return to_json(plan, errors)
    return {"format_version": JSON_FORMAT_VERSION, "jsctl_version": _version(), "files": list(files),
            "errors": [error_dict(e) for e in errors], "warnings": [], "resource_changes": []}


def to_json(plan: Plan, errors: Sequence[JsctlError] = ()) -> dict:
    """A documented, versioned format modelled on `terraform show -json` (see docs/plan-json.md)."""
    changes = []
    for c in plan.changes:
        after = None
        if c.action != "delete":
            after = {"job_id": c.job_id, "generation": c.generation, "spec": c.spec,
                     "placement": c.placement.to_dict() if c.placement else None, "strategy": c.strategy,
                     "artifact": c.artifact.to_dict() if c.artifact else None,
                     "artifact_digest": c.artifact.digest if c.artifact else None,
                     "outputs": c.outputs, "depends_on": list(c.depends_on),
                     "dependencies_enforced": c.dependencies_enforced, "secrets": list(c.secrets),
                     "cost": c.cost.to_dict() if c.cost else None, "strategy_advice": c.why.strategy_advice}
        changes.append({
            "address": c.address, "name": c.name, "type": "job", "provider": c.provider, "cluster": c.cluster,
            "change": {"actions": TF_ACTIONS[c.action], "before": c.before, "after": after,
                       "reasons": list(c.why.reasons), "forces_replacement": list(c.why.forces),
                       "fields": [{"path": f.path, "before": f.before, "after": f.after} for f in c.why.fields]},
            "candidates": [x.to_dict() for x in c.why.candidates],
            "command": list(c.why.command), "drift": c.why.drift, "scheduler": c.why.scheduler,
            "refused": c.why.refused,
        })
    add, change, destroy = plan.count()
    return {"format_version": JSON_FORMAT_VERSION, "jsctl_version": _version(),
            "prior_state": {"serial": plan.prior_serial, "lineage": plan.prior_lineage, "exists": plan.state_exists},
            "files": list(plan.files), "workspace": plan.workspace, "destroy": plan.destroy,
            "refresh": plan.refresh, "refreshed": plan.refreshed,
            "refresh_only": plan.refresh_only, "resource_drift": [o.to_dict() for o in plan.observed],
            "warnings": list(warnings(plan)), "errors": [error_dict(e) for e in errors],
            "resource_changes": changes,
            "summary": {"add": add, "change": change, "destroy": destroy},
            "cost": plan.cost.to_dict() if plan.cost else None}


def _version() -> str:
    from jsctl import __version__

    return __version__
