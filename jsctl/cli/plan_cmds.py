"""plan, apply, destroy, force-unlock: the verbs that compare files with state and change what is live."""
from __future__ import annotations

import json
import sys

import click

from jsctl.cli.common import (FilesCommand, confirm, echo_err, files_option, input_files, lock_seconds,
                              lock_timeout_option, on_lock_wait, recursive_option, workspace_option)
from jsctl.cli.config_cmds import var_file_option, var_option, variables_or_raise
from jsctl.errors import UsageError

target_option = click.option("--target", "targets", multiple=True, metavar="ADDR",
                             help="Plan only this address (and nothing else); repeatable.")
refresh_option = click.option("--refresh", type=click.BOOL, default=True, show_default=True, metavar="BOOL",
                              help="--refresh=false: plan from state and the inventory alone; ask no cluster for "
                                   "live status or its partitions and nodes.")
refresh_only_option = click.option(  # --- drift
    "--refresh-only", is_flag=True,
    help="Refresh every job in state and only record what changed outside jsctl (phase changes, jobs gone): "
         "no job is submitted, updated, replaced or cancelled. The files are optional.")
probe_timeout_option = click.option("--probe-timeout", type=click.FloatRange(min=0, min_open=True), default=None,
                                    metavar="SECONDS",
                                    help="How long each cluster has to answer the refresh and probe before the plan "
                                         "goes on without it (default: $JSCTL_PROBE_TIMEOUT, else 5).")


def changing_options(command):
    """The options of the verbs that change what is live (apply, destroy)."""
    for option in reversed((files_option, recursive_option, var_option, var_file_option, target_option, refresh_option,
                            probe_timeout_option, click.option("--auto-approve", is_flag=True, help="Do not ask for approval."),
                            click.option("--json", "as_json", is_flag=True,
                                         help="Stream what is done as JSON lines for CI (docs/apply-json.md); "
                                              "needs --auto-approve or a saved plan."),
                            lock_timeout_option, workspace_option)):
        command = option(command)
    return command


def _error_document(command):
    """Over budget or with no feasible placement, `--json` and `--format markdown` still print their
    document (the error in it, and whatever could be planned) for CI to post; the exit code stays 1."""
    import functools

    @functools.wraps(command)
    def run(*args, **kwargs):
        from jsctl.errors import PlanError

        try:
            return command(*args, **kwargs)
        except PlanError as exc:
            from jsctl.plan import output

            failed = getattr(exc, "plan", None)
            if kwargs.get("as_json") or kwargs.get("fmt") == "json":
                doc = output.failed_json([exc], failed, kwargs.get("files") or ())
                click.echo(json.dumps(doc, indent=2, sort_keys=True))
            elif kwargs.get("fmt") == "markdown":
                click.echo(output.render_markdown(failed, [exc]))
            raise

    return run


@click.command(cls=FilesCommand)
@_error_document
@files_option
@recursive_option
@var_option
@var_file_option
@target_option
@refresh_option
@refresh_only_option
@probe_timeout_option
@click.option("-out", "--out", "out", type=click.Path(dir_okay=False), help="Save the plan for `jsctl apply FILE`.")
@click.option("--json", "as_json", is_flag=True, help="The plan as versioned JSON (docs/plan-json.md).")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True)
@click.option("--detailed-exitcode", is_flag=True, help="Exit 0: no changes, 1: error, 2: changes.")
@click.option("--destroy", is_flag=True, help="Plan to destroy every job of these files.")
@click.option("--show-artifacts", is_flag=True, help="Print each rendered artifact in full.")
@click.option("--explain-memory", is_flag=True,
              help="Print memory per GPU for each job with every term (model states, activations, allowances); "
                   "--json carries them in strategy_advice.memory.")
@click.option("--max-cost", type=float, default=None, metavar="DOLLARS",
              help="Fail (exit 1) when a job's run bound, or the plan's, is over this (else budget: in jsctl.yaml).")
@click.option("--duration", default=None, metavar="DURATION", help="Price runs for this long instead of time_limit.")
@click.option("--check-remote", is_flag=True,
              help="Ask each scheduler whether and when it would start the jobs (Slurm: sbatch --test-only).")
@workspace_option
def plan(files, cli_vars, var_files, targets, refresh, refresh_only, probe_timeout, out, as_json, fmt, detailed_exitcode, destroy, show_artifacts,
         explain_memory, max_cost, duration, check_remote, workspace_file) -> None:
    """Show what apply would do: placement, strategy, cost, artifacts, as a diff against state.

    Example: jsctl plan -f examples/quickstart.yaml -out plan.json
    """
    from jsctl import api
    from jsctl.plan import output, planfile

    _check_refresh_only(refresh_only, refresh, destroy)
    if not files and not refresh_only:
        raise UsageError("plan needs at least one -f FILE")
    ws = api.open_workspace(workspace_file)
    variables = variables_or_raise(cli_vars, var_files)
    the_plan = api.plan(input_files(files) if files else (), variables, ws, targets, destroy, echo=echo_err,
                        duration_s=_seconds(duration, "--duration"), max_cost=max_cost, refresh=refresh,
                        probe_timeout_s=probe_timeout, refresh_only=refresh_only)
    if check_remote:
        the_plan = api.check_remote(the_plan, ws)
    if as_json or fmt == "json":
        click.echo(json.dumps(output.to_json(the_plan), indent=2, sort_keys=True))
    elif fmt == "markdown":
        click.echo(output.render_markdown(the_plan))
    else:
        click.echo(output.render_text(the_plan, show_artifacts))
    if explain_memory and not (as_json or fmt == "json"):
        click.echo("\n" + output.explain_memory(the_plan))
    if out:
        planfile.save(the_plan, out)
        if not (as_json or fmt == "json"):
            click.echo(f"\nSaved the plan to: {out} — apply exactly this with: jsctl apply {out}")
    refused = [c.address for c in the_plan.changes if c.why.refused]
    if refused:
        echo_err(f"Error: the scheduler would not run {', '.join(refused)} (see 'scheduler' above)")
        sys.exit(1)
    if detailed_exitcode and the_plan.has_changes:
        sys.exit(2)


def _check_refresh_only(refresh_only: bool, refresh: bool, destroy: bool = False) -> None:
    if refresh_only and not refresh:
        raise UsageError("--refresh-only and --refresh=false contradict each other: a refresh-only plan is a refresh")
    if refresh_only and destroy:
        raise UsageError("--refresh-only plans no change to any job; it cannot be combined with --destroy")


def _seconds(text, option):
    if text is None:
        return None
    from jsctl.config.quantities import parse_duration

    try:
        return parse_duration(text)
    except ValueError:
        raise UsageError(f"{option} expects a duration like 48h or 90m, got {text!r}") from None


EVENT_TEXT = {  # how each apply event reads in the terminal
    "stopping": "{address}: stopping {handle}...",
    "destroyed": "{address}: destroyed",
    "updated": "{address}: updated in place",
    "waiting": "{address}: waiting for {dependency} to succeed...",
    "skipped": "{address}: not submitted: {reason}",
    "adopted": "{address}: found {handle} already submitted for {job_id}; adopting it",
    "submitted": "{address}: submitted {handle} ({job_id})",
    "submit_failed": "{address}: submit failed: {message}",
}


def event_text(event) -> str:
    return EVENT_TEXT[event.type].format(**event.to_dict())


def _json_line(data: dict) -> None:
    click.echo(json.dumps(data))


def _run_apply(ws, the_plan, auto_approve: bool, question: str, done: str, as_json: bool = False) -> None:
    from jsctl import JSON_FORMAT_VERSION, api

    if not the_plan.has_changes and not as_json:
        return
    if the_plan.has_changes and not confirm(question, auto_approve):
        click.echo("Apply cancelled.")
        sys.exit(1)
    on_event = (lambda e: _json_line(e.to_dict())) if as_json else (lambda e: click.echo(event_text(e)))
    result = api.apply(the_plan, ws, on_event)
    if as_json:
        _json_line({**result.to_dict(), "format_version": JSON_FORMAT_VERSION})
    else:
        click.echo("\n" + summary_text(result, done.split()[0]))
    if not result.ok:
        n = len(result.not_submitted)
        echo_err(f"Error: {n} job{'s were' if n > 1 else ' was'} not submitted ({', '.join(result.not_submitted)}); "
                 "jsctl status shows why. Fix the cause and apply again: the next plan includes "
                 f"{'them' if n > 1 else 'it'} again.")
        sys.exit(1)


def summary_text(result, verb: str = "Apply") -> str:
    """The last line of apply or destroy: what was done and, when incomplete, what was not and why."""
    done = f"Resources: {result.added} added, {result.changed} changed, {result.destroyed} destroyed"
    if getattr(result, "refreshed", 0):  # --- drift: apply --refresh-only
        done += f"; {result.refreshed} job{'s' if result.refreshed != 1 else ''} changed outside jsctl recorded in state"
    if result.ok:
        return f"{verb} complete! {done}."
    missed = result.not_submitted
    return (f"{verb} incomplete! {done}; {len(missed)} not submitted ("
            + "; ".join(f"{address}: {why}" for address, why in missed.items()) + ").")


def _json_needs_approval(as_json: bool, auto_approve: bool) -> None:
    if as_json and not auto_approve:
        raise UsageError("--json needs --auto-approve (or, for apply, a saved PLANFILE): there is no one to ask",
                         hint="in CI: jsctl plan -out plan.json, review it, then jsctl apply --json plan.json")


@click.command(cls=FilesCommand)
@click.argument("planfile", required=False, type=click.Path(dir_okay=False))
@changing_options
@refresh_only_option
def apply(planfile, files, cli_vars, var_files, targets, refresh, probe_timeout, auto_approve, as_json, lock_timeout,
          workspace_file, refresh_only=False) -> None:
    """Submit jobs: apply a saved plan exactly, or plan FILEs and apply after approval.

    Example: jsctl apply -f examples/quickstart.yaml --auto-approve
    """
    from jsctl import api
    from jsctl.plan import output
    from jsctl.plan import planfile as plans

    if planfile and files:
        raise UsageError("give either a saved PLANFILE or -f FILE..., not both")
    if planfile and refresh_only:
        raise UsageError("a saved plan is applied as it was made: plan with --refresh-only -out FILE, then apply FILE")
    _check_refresh_only(refresh_only, refresh)
    if not planfile and not files and not refresh_only:
        raise UsageError("apply needs a saved PLANFILE or -f FILE...")
    _json_needs_approval(as_json, auto_approve or bool(planfile))
    show = echo_err if as_json else click.echo  # with --json, stdout carries only the JSON lines
    ws = api.open_workspace(workspace_file)
    store = api.store_for(ws)
    with store.locked("apply", lock_seconds(lock_timeout), on_lock_wait):
        if planfile:
            the_plan = plans.load(planfile)
            if not the_plan.has_changes:
                show("No changes. Nothing to apply.")
            _run_apply(ws, the_plan, True, "", "Apply complete!", as_json)
            return
        variables = variables_or_raise(cli_vars, var_files)
        the_plan = api.plan(input_files(files) if files else (), variables, ws, targets, echo=echo_err, refresh=refresh,
                            probe_timeout_s=probe_timeout, refresh_only=refresh_only, holding_lock=True)
        show(output.render_text(the_plan))
        if refresh_only:  # --- drift: only record what changed outside jsctl
            _run_apply(ws, the_plan, auto_approve, "Would you like to update the jsctl state to reflect these "
                       "detected changes?", "Apply complete!", as_json)
            return
        _run_apply(ws, the_plan, auto_approve, "Do you want to perform these actions?", "Apply complete!", as_json)


@click.command(cls=FilesCommand)
@click.argument("paths", nargs=-1, type=click.Path(), metavar="[PATH]...")
@changing_options
def submit(paths, files, cli_vars, var_files, targets, refresh, probe_timeout, auto_approve, as_json, lock_timeout,
           workspace_file) -> None:
    """Plan FILEs and apply them in one step, without asking: the product description's `submit`, for
    people who do not review plans. The plan is printed first; `apply -f` asks, `plan` only shows.

    Example: jsctl submit -f finetune.yaml -v EXPERIMENT_NAME=llama-7b-lora-test
    """
    if not paths and not files:
        raise UsageError("submit needs job or workflow files: jsctl submit -f FILE... (or jsctl submit FILE...)")
    if any(p.endswith(".json") for p in paths):
        raise UsageError("submit takes job and workflow files; apply a saved plan with: jsctl apply PLANFILE")
    click.get_current_context().invoke(apply, planfile=None, files=tuple(files) + tuple(paths), cli_vars=cli_vars,
                                       var_files=var_files, targets=targets, refresh=refresh,
                                       probe_timeout=probe_timeout, auto_approve=True, as_json=as_json,
                                       lock_timeout=lock_timeout, workspace_file=workspace_file)


@click.command(cls=FilesCommand)
@changing_options
def destroy(files, cli_vars, var_files, targets, refresh, probe_timeout, auto_approve, as_json, lock_timeout, workspace_file) -> None:
    """Stop and forget every job of these files.

    Example: jsctl destroy -f examples/quickstart.yaml --auto-approve
    """
    from jsctl import api
    from jsctl.plan import output

    if not files:
        raise UsageError("destroy needs at least one -f FILE")
    _json_needs_approval(as_json, auto_approve)
    ws = api.open_workspace(workspace_file)
    store = api.store_for(ws)
    with store.locked("destroy", lock_seconds(lock_timeout), on_lock_wait):
        variables = variables_or_raise(cli_vars, var_files)
        the_plan = api.plan(input_files(files), variables, ws, targets, destroy=True, echo=echo_err, refresh=refresh,
                            probe_timeout_s=probe_timeout, holding_lock=True)
        (echo_err if as_json else click.echo)(output.render_text(the_plan))
        _run_apply(ws, the_plan, auto_approve, "Do you really want to destroy these jobs?", "Destroy complete!",
                   as_json)


@click.command("force-unlock")
@click.argument("lock_id")
@workspace_option
def force_unlock(lock_id, workspace_file) -> None:
    """Remove a state lock left by a process that is gone.

    Example: jsctl force-unlock 6b1c0c7e-0d5e-4a51-9f6e-2f1d0c9b8a77
    """
    from jsctl import api

    info = api.force_unlock(api.open_workspace(workspace_file), lock_id)
    click.echo(f"Released the lock {lock_id} held by {info.get('Who')} for {info.get('Operation')}.")


COMMANDS = (plan, apply, submit, destroy, force_unlock)
