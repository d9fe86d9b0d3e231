"""Options and helpers the command modules share."""
from __future__ import annotations

import sys

import click

from jsctl.errors import UsageError

workspace_option = click.option("--workspace", "workspace_file", type=click.Path(dir_okay=False),
                                help="Workspace file (default: ./jsctl.yaml, else the embedded local default).")
lock_timeout_option = click.option("--lock-timeout", default="0s", show_default=True, metavar="DURATION",
                                   help="How long to wait for the state lock (e.g. 30s, 5m).")


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

