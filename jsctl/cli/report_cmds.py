"""Views across clusters and time: `cluster status`, `report cost`."""
from __future__ import annotations

from jsctl import JSON_FORMAT_VERSION

import json
import time

import click

from jsctl.cli.common import echo_err, workspace_option


@click.group()
def cluster() -> None:
    """Clusters of the workspace."""


@cluster.command("status")
@click.option("--json", "as_json", is_flag=True)
@workspace_option
def cluster_status(as_json, workspace_file) -> None:
    """GPUs total, free and queued per cluster, and the jsctl jobs running there with their cost.

    Example: jsctl cluster status
    """
    from jsctl import api
    from jsctl.plan import report
    from jsctl.plan.catalog import load
    from jsctl.plan.planner import offers_for

    ws = api.open_workspace(workspace_file)
    state = api.store_for(ws).read()
    state = api.observe(ws, state, api.refresh(ws, state, echo_err))
    facts = api.probe(ws, echo_err)
    offers = offers_for(ws, facts, load(ws.catalog))
    costs = report.cluster_costs(state.resources, time.time())
    rows = []
    for c in ws.clusters:
        data = dict(facts[c.name].data) if c.name in facts else {}
        mine = [o for o in offers if o.cluster == c.name]
        total = data.get("gpus_total")
        if total is None and mine and all(o.max_nodes is not None for o in mine):
            total = sum(o.gpus_per_node * (o.max_nodes or 0) for o in mine)
        if c.provider == "local" and total is not None and "gpus_free" not in data:
            busy = sum((r.get("placement") or {}).get("gpus_per_node") or 0 for r in state.resources.values()
                       if r.get("cluster") == c.name and (r.get("status") or {}).get("phase") == "RUNNING")
            data["gpus_free"], data["gpus_queued"] = max(total - busy, 0), 0
        cc = costs.get(c.name)
        rows.append({"cluster": c.name, "provider": c.provider, "gpus_total": total,
                     "gpus_free": data.get("gpus_free"), "gpus_queued": data.get("gpus_queued"),
                     "reachable": c.name in facts or c.provider in ("aws-batch", "gcp-batch", "azure-ml"),
                     "jobs_running": list(cc.jobs) if cc else [], "per_hour": cc.per_hour if cc else 0.0,
                     "so_far": cc.so_far if cc else 0.0,
                     "jobs_in_state": sorted(a for a, r in state.resources.items() if r.get("cluster") == c.name)})
    if as_json:
        click.echo(json.dumps({"format_version": JSON_FORMAT_VERSION, "clusters": rows}, indent=2))
        return
    show = lambda v: "—" if v is None else str(v)  # noqa: E731
    table = [("CLUSTER", "PROVIDER", "GPUS", "FREE", "QUEUED", "JSCTL JOBS", "$/H", "$ SO FAR")]
    for r in rows:
        table.append((r["cluster"], r["provider"], "elastic" if r["gpus_total"] is None and r["reachable"]
                      else show(r["gpus_total"]), show(r["gpus_free"]), show(r["gpus_queued"]),
                      f"{len(r['jobs_running'])} running / {len(r['jobs_in_state'])}", f"{r['per_hour']:.2f}",
                      f"{r['so_far']:.2f}"))
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())


@click.group()
def report() -> None:
    """Reports from state."""


@report.command("cost")
@click.argument("job", required=False)
@click.option("--since", default=None, help="A date (2026-11-01) or a span back from now (7d, 12h).")
@click.option("--json", "as_json", is_flag=True)
@workspace_option
def report_cost(job, since, as_json, workspace_file) -> None:
    """Actual cost of jobs from their recorded run times and the price recorded at submission.

    Example: jsctl report cost --since 7d
    """
    from jsctl import api
    from jsctl.errors import UsageError
    from jsctl.plan import report as reports

    ws = api.open_workspace(workspace_file)
    state = api.store_for(ws).read()
    state = api.observe(ws, state, api.refresh(ws, state, echo_err))
    now = time.time()
    try:
        start = reports.parse_since(since, now) if since else None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    result = reports.cost_report(state.resources, now, job, start)
    if as_json:
        click.echo(json.dumps(reports.report_json(result), indent=2))
    else:
        click.echo(reports.format_report(result))


COMMANDS = (cluster, report)
