"""The real Slurm cluster scripts/slurm-up.sh starts (SLURM_CONF). Without one these tests skip
with the reason; with JSCTL_REQUIRE_SLURM=1 (CI) they fail instead."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from engines import require
from slurmci import unreachable
from slurmit import EXAMPLES, inventory, wait_for


@pytest.fixture(scope="session")
def slurm() -> str:
    require(unreachable(), "JSCTL_REQUIRE_SLURM")
    return os.environ["SLURM_CONF"]


@pytest.fixture
def submitted() -> list[str]:
    """Slurm job ids a test submitted without jsctl's state; cancelled afterwards (see ws)."""
    return []


@pytest.fixture
def ws(slurm, tmp_path, monkeypatch, submitted):
    """A workspace on the CI cluster in tmp_path, with the example jobs copied in; every job it
    submitted is cancelled afterwards."""
    for f in EXAMPLES.glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "jsctl.yaml").write_text(inventory(tmp_path / "shared"))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    state = tmp_path / ".jsctl" / "state.json"
    if state.exists():
        for record in json.loads(state.read_text()).get("resources", {}).values():
            if (record.get("handle") or "").startswith("slurm://"):
                submitted.append(record["handle"].rsplit("/", 1)[1])
    if submitted:
        subprocess.run(["scancel", *submitted], capture_output=True)


@pytest.fixture
def status(jsctl):
    """Jobs by name from `jsctl status --json`."""
    def _status() -> dict[str, dict]:
        code, out, err = jsctl("status", "--json")
        assert code == 0, err
        return {j["name"]: j for j in json.loads(out)["jobs"]}
    return _status


@pytest.fixture
def wait_done(status):
    def _wait(names: list[str], timeout: float = 120) -> dict[str, dict]:
        def done():
            s = status()
            return s if all(s.get(n, {}).get("phase") in ("SUCCEEDED", "FAILED", "CANCELLED") for n in names) \
                else None
        return wait_for(done, timeout, what=f"{', '.join(names)} to finish")
    return _wait
