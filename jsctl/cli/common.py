"""Options and helpers the command modules share."""
from __future__ import annotations

import sys

import click

from jsctl.errors import UsageError

workspace_option = click.option("--workspace", "workspace_file", type=click.Path(dir_okay=False),
                                help="Workspace file (default: ./jsctl.yaml, else the embedded local default).")
lock_timeout_option = click.option("--lock-timeout", default="0s", show_default=True, metavar="DURATION",
                                   help="How long to wait for the state lock (e.g. 30s, 5m).")


RECURSIVE = "jsctl.recursive"  # ctx.meta key set by -R
FILE_FLAGS = ("-f", "--file")

files_option = click.option(
    "-f", "--file", "files", multiple=True, type=click.Path(), metavar="PATH",
    help="Job or workflow file, or a directory of them (its *.yaml, *.yml; -R for the directories below). "
         "Repeatable, and several paths may follow one -f, as a shell glob gives them: -f jobs/*.yaml.")
recursive_option = click.option(
    "-R", "--recursive", is_flag=True, is_eager=True, expose_value=False,
    callback=lambda ctx, _param, value: ctx.meta.__setitem__(RECURSIVE, bool(value)),
    help="With a directory: also the files in the directories below it (as kubectl -R).")


class FilesCommand(click.Command):
    """A command whose `-f` takes every path that follows it up to the next option, so that
    `-f jobs/*.yaml` works as the shell expands it (click options take one value each): the
    arguments are rewritten to `-f a -f b ...` before click parses them. A `.json` path ends the
    run: it is a saved plan (`jsctl apply -f job.yaml plan.json` stays an error), not a job file."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, spread_files(args))


def spread_files(args: list[str]) -> list[str]:
    out: list[str] = []
    i, eating = 0, False
    while i < len(args):
        tok = args[i]
        if tok == "--":
            out.extend(args[i:])
            break
        if eating and not tok.startswith("-") and not tok.endswith(".json"):
            out += ["-f", tok]
            i += 1
            continue
        eating = False
        out.append(tok)
        if tok in FILE_FLAGS:
            if i + 1 < len(args):
                out.append(args[i + 1])
                i += 1
            eating = True
        elif tok.startswith("--file=") or (tok.startswith("-f") and not tok.startswith("--") and len(tok) > 2):
            eating = True
        i += 1
    return out


def input_files(paths: tuple[str, ...] | list[str]) -> list[str]:
    """The files that paths given on the command line stand for (directories expanded, each file once);
    ConfigError for a path that does not exist or a directory without job files."""
    from jsctl.config.loader import find_files
    from jsctl.errors import ConfigError

    ctx = click.get_current_context(silent=True)
    files, diags = find_files(paths, bool(ctx and ctx.meta.get(RECURSIVE)))
    if diags:
        raise ConfigError(diags)
    return files


def lock_seconds(text: str) -> float:
    from jsctl.config.quantities import parse_duration

    try:
        return float(parse_duration(text))
    except ValueError:
        raise UsageError(f"--lock-timeout expects a duration like 30s or 5m, got {text!r}") from None


def echo_err(text: str) -> None:
    click.echo(text, err=True)


def on_lock_wait(info: dict) -> None:
    echo_err("Acquiring state lock. The state is locked by another operation:")
    for key, value in info.items():
        echo_err(f"  {key + ':':<11}{value}")
    echo_err("Waiting...")


def confirm(question: str, auto_approve: bool) -> bool:
    if auto_approve:
        return True
    if not sys.stdin.isatty():
        raise UsageError("no terminal to ask for approval; pass --auto-approve, or apply a saved plan file",
                         hint="in CI: jsctl plan -out plan.json, review it, then jsctl apply plan.json")
    click.echo(f"\n{question}\n  Only 'yes' will be accepted to approve.\n")
    answer = click.prompt("  Enter a value", default="", show_default=False)
    return answer.strip() == "yes"

