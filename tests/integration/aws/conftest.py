"""Fixtures for the aws-batch tests: the session's moto_server (awsci.server(): started here, on a
free port of 127.0.0.1) and a workspace whose inventory points at it."""
from __future__ import annotations

from pathlib import Path

import pytest

import awsci


@pytest.fixture(scope="session")
def moto() -> awsci.Server:
    return awsci.server()


@pytest.fixture
def ws(tmp_path, moto, monkeypatch) -> Path:
    (tmp_path / "jsctl.yaml").write_text(moto.inventory(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path

