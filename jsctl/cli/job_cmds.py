"""Day-two verbs on jobs in state: status, describe, logs, stop, pause, resume, scale, metrics, tune (views of
jsctl.api)."""
from __future__ import annotations

import json
import time

import click

from jsctl import JSON_FORMAT_VERSION
from jsctl.cli.common import confirm, echo_err, lock_seconds, lock_timeout_option, on_lock_wait, workspace_option
from jsctl.errors import UsageError


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


@click.command()
@click.argument("job", required=False)
@click.option("--json", "as_json", is_flag=True)
@workspace_option
def status(job, as_json, workspace_file) -> None:
    """Phase of each job (or one): jsctl's phase beside the engine's own state.

    Example: jsctl status quickstart
    """
    from jsctl import api

    rows = api.status(api.open_workspace(workspace_file), job, echo_err)
    if as_json:
        click.echo(json.dumps({"format_version": JSON_FORMAT_VERSION, "jobs": [r.to_dict() for r in rows]},
                              indent=2))
        return
    if not rows:
        click.echo("No jobs in state. Run jsctl apply -f FILE to submit one.")
        return
    now = time.time()
    table = [("JOB", "ID", "WHERE", "PHASE", "ENGINE STATE", "RESTARTS", "AGE", "$ SO FAR")]
    for r in rows:
        table.append((r.name, r.job_id, str(r.handle or "—"), r.phase, r.engine_state or "—", str(r.restarts),
                      _age(now - r.submitted_at if r.submitted_at else None),
                      f"{r.cost_so_far:.2f}" if r.cost_so_far is not None else "—"))
    widths = [max(len(str(row[i])) for row in table) for i in range(len(table[0]))]
    for row in table:
        click.echo("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip())
    for r in rows:
        if r.reason:
            click.echo(f"{r.name}: {r.reason}")


@click.command()
@click.argument("words", nargs=-1, required=True, metavar="[job] JOB")
@workspace_option
def describe(words, workspace_file) -> None:
    """Everything about one job: spec, placement, artifact, live status, history.

    Example: jsctl describe quickstart   (or, as the product description writes it: jsctl describe job ID)
    """
    from jsctl import api

    if len(words) == 2 and words[0] == "job":
        words = words[1:]
    if len(words) != 1:
        raise UsageError("describe takes one job: jsctl describe JOB (or jsctl describe job JOB)")
    job = words[0]

    detail = api.describe(api.open_workspace(workspace_file), job, echo_err)
    record, row = detail.record, detail.status
    when = lambda t: time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t)) if t else "—"  # noqa: E731
    if detail.not_submitted is not None:
        entry = detail.not_submitted
        click.echo(f"Job:        {entry.address}\nID:         {entry.job_id} (generation {entry.generation}, "
                   f"planned)\nPhase:      {row.phase}\nReason:     {entry.reason}\n"
                   f"When:       {when(entry.time)}\nCluster:    {entry.cluster} ({entry.provider})")
        if entry.depends_on:
            click.echo(f"Depends on: {', '.join(entry.depends_on)}")
        if record is None:
            click.echo("The next jsctl apply plans it as a create.")
            return
        click.echo("The next jsctl apply plans it again (a replace of its earlier run).\n\n"
                   "Its earlier run, still in state:")
        row = record.status  # the same fields as a status row, for the lines below
    click.echo(f"Job:        {record.address}\nID:         {record.job_id} (generation {record.generation})")
    click.echo(f"Handle:     {record.handle}")
    click.echo(f"Phase:      {row.phase} (engine: {row.engine_state})" +
               (f"\nReason:     {row.reason}" if row.reason else ""))
    click.echo(f"Exit code:  {row.exit_code}   Restarts: {row.restarts or 0}")
    click.echo(f"Submitted:  {when(record.submitted_at)}   Started: {when(row.started_at)}   "
               f"Ended: {when(row.ended_at)}")
    click.echo(f"Placement:  {_placement_text(record.placement or {})}")
    if record.strategy:
        click.echo(f"Strategy:   {json.dumps(record.strategy, sort_keys=True)}")
    if detail.recommendation is not None and detail.recommendation.wrong:
        click.echo(f"Tuning:     {detail.recommendation.describe()}\n            {_tune_hint(job, detail.recommendation)}")
    for name, path in record.outputs.items():
        click.echo(f"Output:     {name} → {path}")
    click.echo("Events:")
    for e in record.events:
        click.echo(f"  {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(e.time))}  {e.event}")
    _print_engine_events(detail.events, detail.events_error)
    art = record.artifact or {}
    click.echo(f"Artifact:   {art.get('summary')}, sha256 {record.artifact_digest}")
    for f in detail.files:
        if f.text is None:
            click.echo(f"---- {f.name} ({f.digest}; the engine no longer holds it: jsctl plan --show-artifacts "
                       "renders it again) ----")
        else:
            changed = "" if f.matches else f" (changed since it was submitted: recorded {f.digest})"
            click.echo(f"---- {f.name}{changed} ----\n{f.text.rstrip()}")
    click.echo("Spec:\n" + json.dumps(record.spec, indent=2))


def _print_engine_events(events, error: str | None) -> None:
    """What the engine recorded about the job (Kubernetes' Events), oldest first; nothing where the
    engine keeps none; one line saying why where they could not be read."""
    if error:
        click.echo(f"Engine events: not read ({error})")
        return
    if not events:
        return
    click.echo("Engine events:")
    for e in events:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.time)) if e.time else "—".ljust(19)
        repeat = f" (×{e.count})" if e.count > 1 else ""
        about = f" {e.object}:" if e.object else ""
        click.echo(f"  {when}  {e.type or '—':<7}  {e.reason}{about} {' '.join(e.message.split())}{repeat}".rstrip())


def _placement_text(p: dict) -> str:
    """The placement as the plan writes it ("hpc / gpu : 4 nodes × 8 a100-80gb", "… : 1 node, CPU only")."""
    from jsctl.model.job import Placement

    try:
        placement = Placement.from_dict(p)
    except TypeError:  # a record from an older jsctl, missing fields
        placement = None
    if placement is None:
        return f"{p.get('cluster')} / {p.get('pool')}" if p else "—"
    text = placement.describe()
    if not placement.gpus_per_node and placement.cpus_per_task:
        text += f", {placement.cpus_per_task} CPU{'s' if placement.cpus_per_task != 1 else ''}"
    return text


@click.command()
@click.argument("job")
@click.option("-f", "--follow", is_flag=True, help="Keep printing until the job ends.")
@click.option("--tail", type=int, default=None, help="Only the last N lines.")
@click.option("--node", default=None, help="One node's log (Slurm: a hostname or node index).")
@click.option("--metrics", "show_metrics", is_flag=True,
              help="Also print the runtime's JSON metric lines (hidden by default; jsctl metrics reads them).")
@workspace_option
def logs(job, follow, tail, node, show_metrics, workspace_file) -> None:
    """Print a job's log (all nodes, or one with --node), without the runtime's metric lines.

    Example: jsctl logs -f --tail 100 quickstart
    """
    from jsctl import api

    for line in api.logs(api.open_workspace(workspace_file), job, node, follow, tail, metrics=show_metrics):
        click.echo(line, nl=False)


def _control_command(name: str, doc: str):
    """stop, pause, resume: the API acts through the job's provider client and records it in state."""

    @click.command(name, help=doc)
    @click.argument("job")
    @lock_timeout_option
    @workspace_option
    def command(job, lock_timeout, workspace_file) -> None:
        from jsctl import api

        done = getattr(api, name)(api.open_workspace(workspace_file), job, lock_seconds(lock_timeout), on_lock_wait)
        click.echo(f"{PAST[name]} {done.address} ({done.handle}).")

    return command


PAST = {"stop": "Stopped", "pause": "Paused", "resume": "Resumed"}
stop = _control_command("stop", "Cancel a job (idempotent); it stays in state as CANCELLED.\n\n"
                        "Example: jsctl stop quickstart")


@click.command()
@click.argument("job")
@click.option("--timeout", "timeout", default="5m", show_default=True, metavar="DURATION",
              help="How long to wait for the checkpoint; when it does not complete, the job keeps running.")
@click.option("--force", is_flag=True, help="Pause a job without checkpoints anyway (local: stopped in place "
                                            "with SIGSTOP, holding its workers; Slurm: requeued and held, its "
                                            "progress lost; Kubernetes: suspended, its pods deleted, its "
                                            "progress lost).")
@lock_timeout_option
@workspace_option
def pause(job, timeout, force, lock_timeout, workspace_file) -> None:
    """Checkpoint a running job, then stop its workers and free its GPUs until jsctl resume (local: the
    workers stop; Slurm: the job is requeued and held, `scontrol requeuehold`; Kubernetes: the workload is
    suspended, `spec.suspend: true`, and its pods deleted). A job without checkpoints is refused unless
    --force; a checkpoint that does not complete within --timeout leaves it running.

    Example: jsctl pause quickstart --timeout 5m
    """
    from jsctl import api
    from jsctl.config.quantities import parse_duration

    try:
        timeout_s = float(parse_duration(timeout))
    except ValueError:
        raise UsageError(f"--timeout expects a duration like 30s or 5m, got {timeout!r}") from None
    done = api.pause(api.open_workspace(workspace_file), job, timeout_s, force, lock_seconds(lock_timeout),
                     on_lock_wait)
    # the provider says what its pause did (how the job stopped, what it still holds, what is lost)
    at = f" at checkpoint step {done.step}" if done.step is not None else ""
    then = f" jsctl resume {job} continues from step {done.step}." if done.step is not None else ""
    click.echo(f"Paused {done.address} ({done.handle}){at}: {done.how or 'paused'}.{then}")


resume = _control_command("resume", "Resume a paused job.\n\nExample: jsctl resume quickstart")


@click.command()
@click.argument("job")
@click.option("--gpu-count", type=click.IntRange(min=1), required=True, help="GPUs for the job from now on.")
@click.option("--auto-approve", is_flag=True, help="Do not ask for approval of the planned shape.")
@lock_timeout_option
@workspace_option
def scale(job, gpu_count, auto_approve, lock_timeout, workspace_file) -> None:
    """Change a running job's GPU count, where its provider can (else: edit gpu.count and apply).
    The new shape is planned first (placement, GPU memory fit, cost per hour) and asked for unless
    --auto-approve; the job checkpoints, takes the new shape and restores resharded.

    Example: jsctl scale quickstart --gpu-count 4
    """
    from jsctl import api
    from jsctl.api.jobs import plan_scale

    ws = api.open_workspace(workspace_file)
    planned = plan_scale(ws, job, gpu_count)
    click.echo(planned.describe())
    if not planned.feasible:
        raise UsageError(f"{planned.address} cannot run on {gpu_count} GPUs", hint="; ".join(planned.reasons))
    if not confirm(f"Scale {planned.address} to {gpu_count} GPUs?", auto_approve):
        click.echo("Scale cancelled.")
        return
    done = api.scale(ws, job, gpu_count, lock_seconds(lock_timeout), on_lock_wait, planned=planned)
    click.echo(f"Scaling {done.address} ({done.handle}) to {done.gpus} GPUs: it checkpoints and resumes on the new "
               f"shape.\nThe job file still says otherwise: the next plan shows the difference until you change "
               f"gpu.count.")


@click.command()
@click.argument("job")
@click.option("--detail", is_flag=True, help="Averages and every metric.")
@workspace_option
def metrics(job, detail, workspace_file) -> None:
    """Training metrics the in-job runtime reported: latest, averages, sparklines.

    Example: jsctl metrics quickstart --detail
    """
    from jsctl import api
    from jsctl.metrics import render_metrics

    ws = api.open_workspace(workspace_file)
    summary = api.metrics(ws, job)
    click.echo(render_metrics(summary, detail=detail))
    advice = api.advise(ws, job, summary)
    if advice.wrong:
        click.echo(f"recommendation: {advice.describe()}\n  {_tune_hint(job, advice)}")


def _tune_hint(job: str, advice) -> str:
    if advice.target is not None:
        return f"run jsctl tune {job} --apply to switch (checkpoint, restart, resharded restore)"
    return "change the job file and run jsctl apply"


def _measured(advice) -> str:
    from jsctl.metrics import mem, seconds

    m = advice.measurements
    bits = [f"step {seconds(m.step_s)}" if m.step_s is not None else "step time unknown"]
    bits.append(f"{m.comm_share:.0%} waiting on collectives" if m.comm_share is not None else "collectives not timed")
    if m.peak_mem_bytes is not None:
        bits.append(f"peak memory {mem(m.peak_mem_bytes)} ({m.mem_kind or '?'})"
                    + (f" of {mem(advice.memory_bytes)}" if advice.memory_bytes else ""))
    return ", ".join(bits) + f" (median of {m.records} record{'s' if m.records != 1 else ''})"


@click.command()
@click.argument("job")
@click.option("--apply", "do_apply", is_flag=True,
              help="Switch the running job: checkpoint, restart under the new strategy, restore resharded.")
@click.option("--to", "to", default=None, metavar="ddp|fsdp[:SHARDING]",
              help="The strategy to switch to instead of the recommendation (e.g. ddp, fsdp:SHARD_GRAD_OP).")
@click.option("--json", "as_json", is_flag=True, help="The recommendation, its measurements and what was applied.")
@lock_timeout_option
@workspace_option
def tune(job, do_apply, to, as_json, lock_timeout, workspace_file) -> None:
    """Judge a running job's strategy by what it measures; with --apply, switch it (docs/tuning.md).

    Example: jsctl tune quickstart --apply --to ddp
    """
    from jsctl import api
    from jsctl.plan.tuning import label

    done = api.tune(api.open_workspace(workspace_file), job, do_apply, to, lock_seconds(lock_timeout), on_lock_wait)
    advice = done.recommendation
    if as_json:
        click.echo(json.dumps({"format_version": JSON_FORMAT_VERSION, "address": done.address,
                               "handle": str(done.handle), "recommendation": advice.to_dict(),
                               "applied": dict(done.applied) if done.applied is not None else None}, indent=2))
        return
    click.echo(f"{done.address}: {label(advice.current)}\nmeasured: {_measured(advice)}\n"
               f"recommendation: {advice.describe()}")
    if done.applied is not None:
        click.echo(f"Switching {done.address} ({done.handle}) to {label(done.applied)}: it checkpoints and resumes "
                   f"under the new strategy.\nThe job file still says {label(advice.current)}: the next plan shows "
                   f"the difference until you change strategy there too.")
    elif advice.wrong or to:
        click.echo(_tune_hint(job, advice) if not to else f"run jsctl tune {job} --apply --to {to} to switch")


COMMANDS = (status, describe, logs, stop, pause, resume, scale, metrics, tune)
