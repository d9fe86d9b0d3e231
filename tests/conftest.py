import os

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


# Golden files: `pytest --update-golden` (or JSCTL_UPDATE_GOLDEN=1) rewrites them; review the diff like code.
def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite golden files from the current output instead of comparing")


@pytest.fixture
def update_golden(request) -> bool:
    return bool(request.config.getoption("--update-golden", default=False)) or \
        os.environ.get("JSCTL_UPDATE_GOLDEN") == "1"
