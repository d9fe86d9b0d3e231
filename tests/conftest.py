import os
import sys

import pytest



@pytest.fixture
def write(tmp_path):
    """Write a file under tmp_path and return its path."""
    def _write(name: str, text: str | bytes) -> str:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return str(path)
    return _write


@pytest.fixture
def jsctl():
    """Run the CLI in-process; returns (exit_code, stdout, stderr)."""
    from click.testing import CliRunner

    from jsctl.cli import cli

    def _run(*args: str, input: str | None = None, env: dict | None = None):
        runner = CliRunner()
        result = runner.invoke(cli, list(args), input=input, env=env, catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr
    return _run
