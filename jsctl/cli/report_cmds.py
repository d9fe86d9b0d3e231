"""Views across clusters and time: `cluster status`, `report cost`."""
from __future__ import annotations

import json

import click

from jsctl import JSON_FORMAT_VERSION
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

    rows = api.cluster_status(api.open_workspace(workspace_file), echo_err)
    if as_json:
        click.echo(json.dumps({"format_version": JSON_FORMAT_VERSION, "clusters": [r.to_dict() for r in rows]},
                              indent=2))
        return
    show = lambda v: "—" if v is None else str(v)  # noqa: E731
    table = [("CLUSTER", "PROVIDER", "GPUS", "FREE", "QUEUED", "JSCTL JOBS", "$/H", "$ SO FAR")]
    for r in rows:
        table.append((r.cluster, r.provider, "elastic" if r.gpus_total is None and r.elastic else show(r.gpus_total),
                      show(r.gpus_free), show(r.gpus_queued),
                      f"{len(r.jobs_running)} running / {len(r.jobs_in_state)}", f"{r.per_hour:.2f}",
                      f"{r.so_far:.2f}"))
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
    from jsctl.plan import report as reports

    result = api.cost_report(api.open_workspace(workspace_file), job, since, echo_err)
    if as_json:
        click.echo(json.dumps(reports.report_json(result), indent=2))
    else:
        click.echo(reports.format_report(result))


COMMANDS = (cluster, report)
