"""A closed standard output (`jsctl describe JOB | head`) is a normal end for every command: exit 141
(as SIGPIPE ends other tools), nothing on stderr, never "internal error" (issue 10)."""
from __future__ import annotations

import os
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from jsctl.cli import CLOSED_PIPE_EXIT, JsctlGroup


def test_a_broken_pipe_inside_a_command_is_not_an_internal_error():
    group = JsctlGroup()

    @group.command()
    def talk() -> None:
        click.echo("line")
        raise BrokenPipeError(32, "Broken pipe")

    result = CliRunner().invoke(group, ["talk"])
    assert result.exit_code == CLOSED_PIPE_EXIT == 141
    assert "internal error" not in result.output and "bug" not in result.output


@pytest.mark.parametrize("args", [["status"], ["status", "--json"], ["--help"], ["plan", "--help"]])
def test_the_real_command_with_nobody_reading_ends_quietly(tmp_path, args):
    read, write = os.pipe()
    os.close(read)  # the reader is gone before jsctl writes anything
    try:
        proc = subprocess.run([sys.executable, "-m", "jsctl.cli", *args], stdout=write, stderr=subprocess.PIPE,
                              text=True, cwd=tmp_path, timeout=60)
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (141, "")
