"""Golden files: `pytest tests/golden --update-golden` (or JSCTL_UPDATE_GOLDEN=1 with any pytest
command) rewrites them; review the diff like code."""
from __future__ import annotations

import os

import pytest


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite golden files from the current output instead of comparing")


@pytest.fixture
def update_golden(request) -> bool:
    return bool(request.config.getoption("--update-golden", default=False)) or \
        os.environ.get("JSCTL_UPDATE_GOLDEN") == "1"
