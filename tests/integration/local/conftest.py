import json
import os

import pytest


@pytest.fixture
def ws(tmp_path, monkeypatch):
    """A fresh workspace directory (the embedded default: local cluster, .jsctl/state.json)."""
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for status in tmp_path.glob(".jsctl/runs/*/status.json"):  # never leave jobs running
        try:
            data = json.loads(status.read_text())
        except ValueError:
            continue
        for key in ("child_pgid",):
            if data.get(key) and data.get("phase") in ("RUNNING", "PAUSED"):
                try:
                    os.killpg(int(data[key]), 9)
                except (ProcessLookupError, PermissionError):
                    pass
