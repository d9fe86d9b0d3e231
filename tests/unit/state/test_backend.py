"""The backend interface's pure parts (rebase, lease setting), the local backend, and `state:` settings."""
import json

import pytest

from jsctl.config import workspace
from jsctl.errors import ConfigError, StateError
from jsctl.model.state import State
from jsctl.state.backend import StateConflictError, lease_seconds, rebase
from jsctl.state.factory import backend_for
from jsctl.state.local import LocalBackend


def _state(*names: str) -> State:
    s = State()
    for n in names:
        s.put(f"job.{n}", {"name": n, "generation": 1})
    return s


def test_rebase_applies_ours_onto_theirs():
    base = _state("a", "b")
    ours, theirs = base.copy(), base.copy()
    ours.put("job.c", {"name": "c", "generation": 1})
    ours.remove("job.a")
    theirs.put("job.d", {"name": "d", "generation": 1})
    merged = rebase(base, ours, theirs)
    assert sorted(merged.resources) == ["job.b", "job.c", "job.d"]
    assert merged.generations["job.c"] == 1 and merged.serial == max(ours.serial, theirs.serial) + 1


def test_rebase_same_change_twice_is_fine_a_different_one_conflicts():
    base = _state("a")
    ours, theirs = base.copy(), base.copy()
    ours.remove("job.a")
    theirs.remove("job.a")
    assert "job.a" not in rebase(base, ours, theirs).resources
    ours, theirs = base.copy(), base.copy()
    ours.put("job.a", {"name": "a", "generation": 2})
    theirs.remove("job.a")
    with pytest.raises(StateConflictError, match="job.a"):
        rebase(base, ours, theirs)


def test_rebase_refuses_another_lineage():
    base = _state("a")
    with pytest.raises(StateConflictError, match="lineage"):
        rebase(base, base.copy(), _state("a"))


def test_lease_setting(monkeypatch):
    monkeypatch.delenv("JSCTL_LOCK_LEASE", raising=False)
    assert lease_seconds() == 60.0
    monkeypatch.setenv("JSCTL_LOCK_LEASE", "2.5")
    assert lease_seconds() == 2.5
    for bad in ("soon", "0", "-1"):
        monkeypatch.setenv("JSCTL_LOCK_LEASE", bad)
        with pytest.raises(StateError, match="JSCTL_LOCK_LEASE"):
            lease_seconds()


def test_local_backend_keeps_a_backup_and_writes_conditionally(tmp_path):
    b = LocalBackend(str(tmp_path / "s" / "state.json"))
    s = b.read()
    s.put("job.a", {"name": "a", "generation": 1})
    b.write(s)
    s.put("job.b", {"name": "b", "generation": 1})
    b.write(s)
    assert json.loads((tmp_path / "s" / "state.json.backup").read_text())["serial"] == 1
    (tmp_path / "s" / "state.json").write_text(json.dumps(_state("z").to_dict()))  # another lineage, unlocked
    s.put("job.c", {"name": "c", "generation": 1})
    with pytest.raises(StateConflictError, match="lineage"):
        b.write(s)
    assert list(json.loads((tmp_path / "s" / "state.json").read_text())["resources"]) == ["job.z"]


def test_workspace_state_settings(tmp_path):
    (tmp_path / "jsctl.yaml").write_text("state: {backend: s3, bucket: b1, key: team/state.json, region: eu-west-1}\n")
    ws = workspace.load(str(tmp_path / "jsctl.yaml"))
    assert ws.state_settings == workspace.StateSettings("s3", None, "b1", "team/state.json", "eu-west-1", None)
    assert backend_for(ws.state_settings).where == "s3://b1/team/state.json"
    (tmp_path / "jsctl.yaml").write_text("state: {path: st/state.json}\n")
    ws = workspace.load(str(tmp_path / "jsctl.yaml"))
    assert ws.state_settings.backend == "local" and ws.state_settings.path == str(tmp_path / "st" / "state.json")
    assert backend_for(ws.state_settings).where == str(tmp_path / "st" / "state.json")
    assert workspace.default(str(tmp_path)).state_settings.path == str(tmp_path / ".jsctl" / "state.json")


@pytest.mark.parametrize("text, said", [
    ("state: {backend: s3, bucket: b1}\n", "key"),
    ("state: {backend: s3, bucket: b1, key: k, path: x.json}\n", "'path' is not a setting of the s3"),
    ("state: {backend: local, bucket: b1}\n", "'bucket' is not a setting of the local"),
    ("state: {backend: gcs}\n", "gcs"),
])
def test_workspace_state_mistakes_are_positioned(tmp_path, text, said):
    (tmp_path / "jsctl.yaml").write_text(text)
    with pytest.raises(ConfigError) as exc:
        workspace.load(str(tmp_path / "jsctl.yaml"))
    d = exc.value.diagnostics[0]
    assert said in d.message + (d.hint or "") and d.line == 1


def test_s3_backend_imports_boto3_only_when_used():
    import subprocess
    import sys

    code = ("import sys; from jsctl.state.factory import backend_for; from jsctl.config.workspace import StateSettings;"
            "b = backend_for(StateSettings('s3', None, 'b', 'k')); assert 'boto3' not in sys.modules; print(b.where)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "s3://b/k", out.stderr
