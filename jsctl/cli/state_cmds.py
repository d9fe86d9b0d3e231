"""`jsctl state list|show|rm|mv|pull|push|migrate` and `jsctl import`."""
from __future__ import annotations

import click

from jsctl.cli.common import (FilesCommand, files_option, lock_seconds, lock_timeout_option, on_lock_wait,
                              workspace_option)
from jsctl.cli.config_cmds import var_file_option, var_option


@click.group("state")
def state() -> None:
    """Inspect and change the state: what jsctl records as live (see README, Team use)."""


@state.command("list")
@workspace_option
def list_(workspace_file) -> None:
    """The addresses in state, with each job's handle and last known phase.

    Example: jsctl state list
    """
    from jsctl import api
    from jsctl.api import state as sapi

    for address, r in sapi.records(api.open_workspace(workspace_file)).items():
        click.echo(f"{address}\t{r.handle or '-'}\t{r.status.phase}")


@state.command("show")
@click.argument("address")
@workspace_option
def show(address, workspace_file) -> None:
    """The record at ADDRESS, as the state holds it (JSON).

    Example: jsctl state show job.quickstart
    """
    from jsctl import api
    from jsctl.api import state as sapi

    click.echo(sapi.dumps(sapi.show(api.open_workspace(workspace_file), address)))


@state.command("rm")
@click.argument("addresses", nargs=-1, required=True, metavar="ADDRESS...")
@lock_timeout_option
@workspace_option
def rm(addresses, lock_timeout, workspace_file) -> None:
    """Forget ADDRESSes: their jobs are not cancelled, jsctl stops managing them.

    Example: jsctl state rm job.old-experiment
    """
    from jsctl import api
    from jsctl.api import state as sapi

    for r in sapi.rm(api.open_workspace(workspace_file), addresses, lock_seconds(lock_timeout), on_lock_wait):
        click.echo(f"Removed {r.address}" + (f" ({r.handle} was not touched)" if r.handle else ""))


@state.command("mv")
@click.argument("source")
@click.argument("destination")
@lock_timeout_option
@workspace_option
def mv(source, destination, lock_timeout, workspace_file) -> None:
    """Move the record at SOURCE to DESTINATION (a job renamed in its file keeps its running job).

    Example: jsctl state mv job.train workflow.pipe.job.train
    """
    from jsctl import api
    from jsctl.api import state as sapi

    done = sapi.mv(api.open_workspace(workspace_file), source, destination, lock_seconds(lock_timeout), on_lock_wait)
    click.echo(f"Moved {done.source} to {done.destination}.")


@state.command("pull")
@workspace_option
def pull(workspace_file) -> None:
    """Print the stored state document (JSON) to standard output.

    Example: jsctl state pull > state-backup.json
    """
    from jsctl import api
    from jsctl.api import state as sapi

    click.echo(sapi.pull(api.open_workspace(workspace_file)), nl=False)


@state.command("push")
@click.argument("path", metavar="FILE")
@click.option("--force", is_flag=True, help="Replace a state of another lineage, or a newer serial.")
@lock_timeout_option
@workspace_option
def push(path, force, lock_timeout, workspace_file) -> None:
    """Replace the stored state with FILE ('-': standard input). Refused without --force: another
    lineage, an older serial, or the same serial with other content. A truncated or invalid file is
    always refused.

    Example: jsctl state push state-backup.json
    """
    from jsctl import api
    from jsctl.api import state as sapi

    done = sapi.push(api.open_workspace(workspace_file), path, force, lock_seconds(lock_timeout), on_lock_wait)
    if done.replaced_serial == done.serial:
        click.echo(f"{done.where} already holds this state (serial {done.serial}); nothing was pushed.")
    else:
        click.echo(f"Pushed serial {done.serial} (lineage {done.lineage}) to {done.where}.")


@state.command("migrate")
@click.option("--to", "to", required=True, metavar="TARGET",
              help="s3://BUCKET/KEY, a workspace file (its state:), or a local state file path.")
@click.option("--region", help="With --to s3://...: the bucket's region.")
@click.option("--endpoint-url", help="With --to s3://...: an S3-compatible endpoint.")
@lock_timeout_option
@workspace_option
def migrate(to, region, endpoint_url, lock_timeout, workspace_file) -> None:
    """Copy the workspace's state to another backend (both locked). Refused when the destination holds
    another lineage or a newer serial; the source is left as it was.

    Example: jsctl state migrate --to team/jsctl.yaml
    """
    from jsctl import api
    from jsctl.api import state as sapi

    target = sapi.parse_target(to, region, endpoint_url)
    done = sapi.migrate(api.open_workspace(workspace_file), target, lock_seconds(lock_timeout), on_lock_wait)
    if done.unchanged:
        click.echo(f"{done.destination} already holds this state (serial {done.serial}).")
    else:
        click.echo(f"Migrated serial {done.serial} (lineage {done.lineage}) from {done.source} to {done.destination}.")
    click.echo(f"Point state: in jsctl.yaml at {done.destination}; {done.source} was left as it was.")


@click.command("import", cls=FilesCommand)
@click.argument("address")
@click.argument("handle")
@files_option
@var_option
@var_file_option
@lock_timeout_option
@workspace_option
def import_(address, handle, files, cli_vars, var_files, lock_timeout, workspace_file) -> None:
    """Bring a job submitted by hand (HANDLE, e.g. slurm://hpc/123) under management at ADDRESS.

    Its status is read from the engine; its spec from the -f files when one of them plans ADDRESS.

    Example: jsctl import job.train slurm://hpc/123456 -f train.yaml
    """
    from jsctl import api
    from jsctl.api import state as sapi
    from jsctl.cli.common import input_files
    from jsctl.cli.config_cmds import variables_or_raise

    ws = api.open_workspace(workspace_file)
    variables = variables_or_raise(cli_vars, var_files) if files else None
    done = sapi.import_job(ws, address, handle, input_files(files) if files else (), variables,
                           lock_seconds(lock_timeout), on_lock_wait)
    r = done.record
    source = f"spec from {done.from_file}" if done.from_file else "no job file planned it: spec unknown"
    click.echo(f"Imported {r.handle} as {r.address}: {r.status.phase} ({r.status.engine_state}); {source}.")


COMMANDS = (state, import_)
