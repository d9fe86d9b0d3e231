"""Day-two verbs on jobs in state: status, describe, logs, stop, pause, resume, metrics."""
from __future__ import annotations

from jsctl import JSON_FORMAT_VERSION

import json
import sys
import time

import click

from jsctl.cli.common import echo_err, find_job, lock_seconds, lock_timeout_option, on_lock_wait, workspace_option


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def _rows(ws, state, ref):
    from jsctl import api

    addresses = [find_job(state, ref)] if ref else sorted(state.resources)
    live = api.refresh(ws, state, echo_err)
    api.observe(ws, state, live)
    now = time.time()
    rows = []
    for address in addresses:
        record = state.resources[address]
        s = live.get(address)
        status = dict(record.get("status") or {})
        if s is not None:
            status.update(phase=s.phase, engine_state=s.engine_state, reason=s.reason, started_at=s.started_at,
                          ended_at=s.ended_at, exit_code=s.exit_code, restarts=s.restarts)
        start = status.get("started_at")
        end = status.get("ended_at") or now
        price = (record.get("cost_basis") or {}).get("price_per_hour")
        spent = price * (end - start) / 3600 if price is not None and start else None
        rows.append({"address": address, "name": record.get("name"), "job_id": record.get("job_id"),
                     "handle": record.get("handle"), "phase": status.get("phase", "UNKNOWN"),
                     "engine_state": status.get("engine_state"), "reason": status.get("reason"),
                     "exit_code": status.get("exit_code"), "restarts": status.get("restarts", 0),
                     "started_at": start, "ended_at": status.get("ended_at"),
                     "submitted_at": record.get("submitted_at"), "cost_so_far": spent})
    return rows


@click.command()
@click.argument("job", required=False)
@click.option("--json", "as_json", is_flag=True)
@workspace_option
def status(job, as_json, workspace_file) -> None:
    """Phase of each job (or one): jsctl's phase beside the engine's own state.

    Example: jsctl status quickstart
    """
    from jsctl import api

    ws = api.open_workspace(workspace_file)
    state = api.store_for(ws).read()
    rows = _rows(ws, state, job)
    if as_json:
        click.echo(json.dumps({"format_version": JSON_FORMAT_VERSION, "jobs": rows}, indent=2))
        return
    if not rows:
        click.echo("No jobs in state. Run jsctl apply -f FILE to submit one.")
        return
    now = time.time()
    table = [("JOB", "ID", "WHERE", "PHASE", "ENGINE STATE", "RESTARTS", "AGE", "$ SO FAR")]
    for r in rows:
        table.append((r["name"], r["job_id"], r["handle"] or "—", r["phase"], r["engine_state"] or "—",
                      str(r["restarts"]), _age(now - r["submitted_at"] if r["submitted_at"] else None),
                      f"{r['cost_so_far']:.2f}" if r["cost_so_far"] is not None else "—"))
    widths = [max(len(str(row[i])) for row in table) for i in range(len(table[0]))]
    for row in table:
        click.echo("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip())
    for r in rows:
        if r["reason"]:
            click.echo(f"{r['name']}: {r['reason']}")


@click.command()
@click.argument("job")
@workspace_option
def describe(job, workspace_file) -> None:
    """Everything about one job: spec, placement, artifact, live status, history.

    Example: jsctl describe quickstart
    """
    from jsctl import api

    ws = api.open_workspace(workspace_file)
    state = api.store_for(ws).read()
    address = find_job(state, job)
    record = state.resources[address]
    row = _rows(ws, state, address)[0]
    click.echo(f"Job:        {address}\nID:         {record.get('job_id')} (generation {record.get('generation')})")
    click.echo(f"Handle:     {record.get('handle')}")
    click.echo(f"Phase:      {row['phase']} (engine: {row['engine_state']})" +
               (f"\nReason:     {row['reason']}" if row["reason"] else ""))
    click.echo(f"Exit code:  {row['exit_code']}   Restarts: {row['restarts']}")
    when = lambda t: time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t)) if t else "—"  # noqa: E731
    click.echo(f"Submitted:  {when(record.get('submitted_at'))}   Started: {when(row['started_at'])}   "
               f"Ended: {when(row['ended_at'])}")
    p = record.get("placement") or {}
    click.echo(f"Placement:  {p.get('cluster')} / {p.get('pool')} : {p.get('nodes')} × {p.get('gpus_per_node')} "
               f"{p.get('gpu_type') or 'cpu'}")
    if record.get("strategy"):
        click.echo(f"Strategy:   {json.dumps(record['strategy'], sort_keys=True)}")
    for name, path in (record.get("outputs") or {}).items():
        click.echo(f"Output:     {name} → {path}")
    click.echo("Events:")
    for h in record.get("events") or []:
        click.echo(f"  {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(h['time']))}  {h['event']}")
    art = record.get("artifact") or {}
    click.echo(f"Artifact:   {art.get('summary')}, sha256 {record.get('artifact_digest')}")
    for name, content in art.get("files") or []:
        click.echo(f"---- {name} ----\n{content.rstrip()}")
    click.echo("Spec:\n" + json.dumps(record.get("spec"), indent=2))


def _client_and_handle(workspace_file, job):
    from jsctl import api
    from jsctl.apply import Clients
    from jsctl.model.status import JobHandle

    ws = api.open_workspace(workspace_file)
    state = api.store_for(ws).read()
    address = find_job(state, job)
    handle = JobHandle.parse(state.resources[address]["handle"])
    return ws, state, address, Clients(ws).get(handle.cluster), handle


@click.command()
@click.argument("job")
@click.option("-f", "--follow", is_flag=True, help="Keep printing until the job ends.")
@click.option("--tail", type=int, default=None, help="Only the last N lines.")
@click.option("--node", default=None, help="One node's log (Slurm: a hostname or node index).")
@workspace_option
def logs(job, follow, tail, node, workspace_file) -> None:
    """Print a job's log (all nodes, or one with --node).

    Example: jsctl logs -f --tail 100 quickstart
    """
    _, _, _, client, handle = _client_and_handle(workspace_file, job)
    try:
        for line in client.logs(handle, node=node, follow=follow, tail=tail):
            click.echo(line, nl=False)
    except BrokenPipeError:
        sys.exit(0)


def _update_record(ws, address: str, lock_timeout: str, event: str, status: dict | None = None,
                   **fields) -> None:
    """Record what a day-two verb did to a job: status fields, other fields, and an event."""
    from jsctl import api

    store = api.store_for(ws)
    with store.locked(event.split()[0], lock_seconds(lock_timeout), on_lock_wait):
        state = store.read()
        record = dict(state.resources[address], **fields)
        if status:
            record["status"] = {**(record.get("status") or {}), **status}
        record["events"] = [*(record.get("events") or []), {"time": time.time(), "event": event}]
        record["updated_at"] = time.time()
        state.put(address, record)
        store.write(state)


def _control_command(name: str, method: str, past: str, doc: str, **status):
    """stop, pause, resume: the provider client acts, then state records what was done."""

    @click.command(name, help=doc)
    @click.argument("job")
    @lock_timeout_option
    @workspace_option
    def command(job, lock_timeout, workspace_file) -> None:
        ws, _, address, client, handle = _client_and_handle(workspace_file, job)
        getattr(client, method)(handle)
        _update_record(ws, address, lock_timeout, name, status)
        click.echo(f"{past} {address} ({handle}).")

    return command


stop = _control_command("stop", "cancel", "Stopped", "Cancel a job (idempotent); it stays in state as CANCELLED.\n\n"
                        "Example: jsctl stop quickstart", phase="CANCELLED", reason="stopped by jsctl stop",
                        stopped_by_jsctl=True)
pause = _control_command("pause", "pause", "Paused", "Pause a running job (Slurm: scontrol suspend; local: "
                         "SIGSTOP).\n\nExample: jsctl pause quickstart", phase="PAUSED")
resume = _control_command("resume", "resume", "Resumed", "Resume a paused job.\n\nExample: jsctl resume quickstart",
                          phase="RUNNING")


@click.command()
@click.argument("job")
@click.option("--gpu-count", type=click.IntRange(min=1), required=True, help="GPUs for the job from now on.")
@lock_timeout_option
@workspace_option
def scale(job, gpu_count, lock_timeout, workspace_file) -> None:
    """Change a running job's GPU count, where its provider can (else: edit gpu.count and apply).

    Example: jsctl scale quickstart --gpu-count 4
    """
    ws, state, address, client, handle = _client_and_handle(workspace_file, job)
    client.scale(handle, gpu_count)
    record = state.resources[address]  # what is live now differs from the file: state says so
    spec = json.loads(json.dumps(record.get("spec") or {}))
    spec.setdefault("compute", {}).setdefault("resources", {}).setdefault("gpu", {})["count"] = gpu_count
    _update_record(ws, address, lock_timeout, f"scaled to {gpu_count} GPUs", spec=spec,
                   placement=dict(record.get("placement") or {}, gpus_per_node=gpu_count))
    click.echo(f"Scaling {address} ({handle}) to {gpu_count} GPUs: it checkpoints and resumes on the new shape.\n"
               f"The job file still says otherwise: the next plan shows the difference until you change gpu.count.")


@click.command()
@click.argument("job")
@click.option("--detail", is_flag=True, help="Averages and every metric.")
@workspace_option
def metrics(job, detail, workspace_file) -> None:
    """Training metrics the in-job runtime reported: latest, averages, sparklines.

    Example: jsctl metrics quickstart --detail
    """
    from jsctl.metrics import parse_metrics, render_metrics

    _, _, _, client, handle = _client_and_handle(workspace_file, job)
    summary = parse_metrics(client.logs(handle))
    click.echo(render_metrics(summary, detail=detail))


COMMANDS = (status, describe, logs, stop, pause, resume, scale, metrics)
