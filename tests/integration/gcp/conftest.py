"""The gcp-batch integration tests: jsctl's client against a local stand-in for the Batch REST API
(fakebatch.py, started per test: jobs move a state every 50 ms), in a workspace on examples/gcp."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "unit" / "providers"))
import fakebatch  # noqa: E402
import gcpkit  # noqa: E402


@pytest.fixture
def fake():
    fb = fakebatch.FakeBatch(step_s=0.05, run_s=0.1).start()
    yield fb
    fb.stop()


@pytest.fixture
def ws(fake, tmp_path, monkeypatch):
    (tmp_path / "jsctl.yaml").write_text(gcpkit.inventory(fake.url), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path
