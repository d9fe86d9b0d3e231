"""The `jsctl` command line: thin click commands over jsctl.api; one error handler for all."""
from __future__ import annotations

import os
import sys
from typing import Any

import click

from jsctl import __version__
from jsctl.errors import ConfigError, JsctlError, StateLockedError

EXAMPLES = """\b
Examples:
  jsctl validate examples/finetune-llama.yaml      check job and workflow files
  jsctl fmt --check examples/*.yaml                canonical formatting (keeps comments)
  jsctl graph -f examples/pipeline.yaml            a workflow's DAG in layers
  jsctl plan -f examples/quickstart.yaml           preview placement, cost and artifacts
  jsctl apply -f examples/quickstart.yaml          submit (asks first; --auto-approve in CI)
  jsctl status                                     phase of every job in state
  jsctl logs -f quickstart                         follow a job's log
  jsctl metrics quickstart                         training metrics with sparklines
  jsctl stop quickstart                            cancel a job
  jsctl cluster status                             GPUs free and queued, jsctl jobs and their cost
  jsctl report cost --since 7d                     actual cost against the estimate
  jsctl destroy -f examples/quickstart.yaml        stop and forget the jobs of these files
"""


CLOSED_PIPE_EXIT = 141  # 128 + SIGPIPE, what a shell reports for `yes | head`


def closed_pipe() -> None:
    """Standard output's reader is gone (`jsctl describe JOB | head`): a normal end, not an error.
    Whatever is still buffered is dropped quietly (stdout now writes to /dev/null, so Python's own
    flush at exit cannot complain either)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test runner's buffer)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


class JsctlGroup(click.Group):
    """Maps JsctlError to its exit code and a readable message; tracebacks only with --debug. Usage
    errors (click's own too) exit 1, as every error does: 2 is "changes present" for --detailed-exitcode.
    A closed standard output (`| head`) ends any command quietly with exit 141, as it ends other
    command-line tools (SIGPIPE): never 0, which would claim a cut-off command finished (and, with
    --detailed-exitcode, that there are no changes)."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            exc.exit_code = 1
            raise
        except BrokenPipeError:  # --help, --version
            closed_pipe()
            raise click.exceptions.Exit(CLOSED_PIPE_EXIT) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except JsctlError as exc:
            report(exc)
            ctx.exit(exc.exit_code)
        except click.UsageError as exc:
            exc.exit_code = 1
            raise
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            ctx.exit(130)
        except BrokenPipeError:
            closed_pipe()
            ctx.exit(CLOSED_PIPE_EXIT)
        except Exception as exc:  # a bug in jsctl: say so plainly
            if (ctx.obj or {}).get("debug"):
                raise
            if isinstance(exc, ModuleNotFoundError):  # a provider's SDK that is not installed: an extra says how
                from jsctl.errors import missing_sdk

                error = missing_sdk(exc)
                if error is not None:
                    report(error)
                    ctx.exit(error.exit_code)
            click.echo(f"Error: internal error: {type(exc).__name__}: {exc}", err=True)
            click.echo("  This is a bug in jsctl; run again with --debug for the traceback.", err=True)
            ctx.exit(70)


def report(exc: JsctlError) -> None:
    from jsctl.config.diagnostics import format_json, format_text

    ctx = click.get_current_context(silent=True)
    if ctx and (ctx.obj or {}).get("debug"):
        import traceback

        traceback.print_exc()
    as_json = bool(ctx and (ctx.obj or {}).get("json_errors"))
    if isinstance(exc, ConfigError):
        if as_json:
            click.echo(format_json(exc.diagnostics))
        else:
            click.echo(format_text(exc.diagnostics, getattr(exc, "sources", None)), err=True)
        return
    click.echo(f"Error: {exc.message}", err=True)
    if isinstance(exc, StateLockedError):
        for key in ("ID", "Operation", "Who", "Version", "Created", "Path"):
            if key in exc.lock_info:
                click.echo(f"  {key + ':':<11}{exc.lock_info[key]}", err=True)
    if exc.hint:
        click.echo(f"  {exc.hint}", err=True)


@click.group(cls=JsctlGroup, epilog=EXAMPLES, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="jsctl")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """jsctl: plan and apply AI training jobs like infrastructure."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def _register() -> None:
    from jsctl.cli import config_cmds, dashboard_cmds, job_cmds, plan_cmds, report_cmds, state_cmds

    for module in (config_cmds, plan_cmds, job_cmds, report_cmds, state_cmds, dashboard_cmds):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main(argv: list[str] | None = None, standalone_mode: bool = True) -> Any:
    try:
        try:
            return cli.main(args=argv, prog_name="jsctl", standalone_mode=standalone_mode)
        finally:  # what is still buffered, while a closed pipe can be handled here (not at interpreter exit)
            sys.stdout.flush()
    except BrokenPipeError:
        closed_pipe()
        sys.exit(CLOSED_PIPE_EXIT)


if __name__ == "__main__":
    sys.exit(main())
