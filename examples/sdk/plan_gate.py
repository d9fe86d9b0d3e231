"""Gate a pipeline on the plan: apply only when the plan stays within a cost bound and replaces (or
destroys) no running job; otherwise exit 1 and say why, before anything is submitted.

    python examples/sdk/plan_gate.py -f examples/quickstart.yaml --max-cost 5

The cost bound is the plan's own budget check (`jsctl plan --max-cost`): every job's run bound (its
price for time_limit, or the expected cost with rework when larger) and the plan's total must be at
most USD. The plan is applied as it was checked: if state changed in between, apply refuses it as
stale. Exit codes: 0 applied (or nothing to do), 1 the gate or the apply failed, 2 bad arguments.
"""
from __future__ import annotations

import argparse
import sys

import jsctl


def say(line: str = "") -> None:
    print(line, flush=True)


def fail(reason: str, details: list[str] | tuple[str, ...] = ()) -> int:
    print(f"Gate failed: {reason}", file=sys.stderr)
    for line in details:
        print(f"  {line}", file=sys.stderr)
    return 1


def gate(the_plan: jsctl.Plan, allow_destroy: bool) -> list[str]:
    """Why this plan must not be applied (nothing: it may)."""
    reasons = []
    for change in the_plan.changes:
        if change.action == "replace":
            edited = ", ".join(f.path for f in change.why.fields)
            why = "; ".join([*([f"{edited} changed"] if edited else []), *change.why.reasons]) or "the job changed"
            reasons.append(f"{change.address} would be replaced (stopped and submitted again): {why}")
        elif change.action == "delete" and not allow_destroy:
            reasons.append(f"{change.address} would be destroyed: {'; '.join(change.why.reasons) or 'not in the files'}")
    return reasons


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-f", "--file", dest="files", action="append", required=True, metavar="FILE",
                    help="a job or workflow file (repeatable)")
    ap.add_argument("--max-cost", type=float, required=True, metavar="USD",
                    help="the most the plan may cost: each job's run bound and the plan's total")
    ap.add_argument("-v", "--var", dest="vars", action="append", default=[], metavar="NAME=VALUE",
                    help="a variable for the files (repeatable)")
    ap.add_argument("--workspace", default=None, help="the workspace file (default ./jsctl.yaml, else local)")
    ap.add_argument("--allow-destroy", action="store_true", help="let the plan destroy jobs no file names any more")
    args = ap.parse_args(argv)
    if not args.max_cost >= 0:
        ap.error(f"--max-cost must be 0 or more, got {args.max_cost:g}")

    try:
        variables, problems = jsctl.variables(args.vars)
        if any(d.severity == "error" for d in problems):
            raise jsctl.ConfigError(problems)
        ws = jsctl.open_workspace(args.workspace)
        try:
            the_plan = jsctl.plan(args.files, variables, ws=ws, max_cost=args.max_cost,
                                  echo=lambda line: print(line, file=sys.stderr))
        except jsctl.PlanError as exc:
            planned = getattr(exc, "plan", None)
            if planned is not None and planned.cost is not None and not planned.cost.within_budget:
                return fail(f"cost: the plan is over the bound of ${args.max_cost:,.2f} "
                            f"({', '.join(planned.cost.over_budget)})", planned.cost.budget_messages)
            return fail(f"plan: {exc.message}", [exc.hint] if exc.hint else [])
        add, change, destroy = the_plan.count()
        cost = the_plan.cost
        say(f"Plan: {add} to add, {change} to change, {destroy} to destroy."
            + (f" Run bound ${cost.bound:,.2f} (at most ${args.max_cost:,.2f} allowed)." if cost else ""))
        for warning in the_plan.warnings:
            say(f"Warning: {warning}")
        if not the_plan.has_changes:
            say("No changes: nothing to apply.")
            return 0
        reasons = gate(the_plan, args.allow_destroy)
        if reasons:
            return fail(f"{len(reasons)} change{'s' if len(reasons) != 1 else ''} the gate does not allow", reasons)
        say("Gate passed: applying.")
        result = jsctl.apply(the_plan, ws, on_event=lambda event: say(f"  {event.type}: {event.address}"))
    except jsctl.ConfigError as exc:
        return fail(exc.message, [f"{d.location()}: {d.severity}: {d.message}" for d in exc.diagnostics])
    except jsctl.JsctlError as exc:
        return fail(exc.message, [exc.hint] if exc.hint else [])
    say(f"Applied: {result.added} added, {result.changed} changed, {result.destroyed} destroyed.")
    if not result.ok:
        print("Error: not submitted: " + "; ".join(f"{a}: {why}" for a, why in result.not_submitted.items()),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
