import json
import os
import threading
import time

import pytest

from jsctl.errors import StateError, StateLockedError
from jsctl.model.state import State
from jsctl.state.lock import StateLock, force_unlock
from jsctl.state.store import StateStore


def test_round_trip_serial_lineage_backup(tmp_path):
    store = StateStore(str(tmp_path / "state.json"))
    s = store.read()
    assert s.serial == 0 and s.resources == {}
    s.put("job.a", {"generation": 1, "name": "a"})
    store.write(s)
    assert not os.path.exists(store.backup)
    s2 = store.read()
    assert (s2.serial, s2.lineage) == (1, s.lineage)
    s2.put("job.b", {"generation": 1, "name": "b"})
    store.write(s2)
    assert json.load(open(store.backup))["serial"] == 1
    assert json.load(open(store.path))["serial"] == 2
    doc = json.load(open(store.path))
    assert doc["format_version"] == 1 and set(doc) >= {"serial", "lineage", "resources", "generations"}


def test_generations_survive_destroy():
    s = State()
    s.put("job.a", {"generation": 3})
    s.remove("job.a")
    assert s.next_generation("job.a") == 4


def test_corrupt_state_names_backup(tmp_path):
    store = StateStore(str(tmp_path / "state.json"))
    s = store.read()
    s.put("job.a", {"generation": 1})
    store.write(s)
    store.write(s)
    open(store.path, "w").write('{"serial": 1, "lin')
    with pytest.raises(StateError) as exc:
        store.read()
    assert "corrupt or truncated" in exc.value.message and "state.json.backup" in exc.value.hint


def test_wrong_format_version(tmp_path):
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"format_version": 99, "serial": 1, "lineage": "x"}))
    with pytest.raises(StateError, match="format_version 99"):
        StateStore(str(path)).read()


def test_lock_excludes_and_waits(tmp_path):
    path = str(tmp_path / "state.json.lock")
    first = StateLock(path, "apply").acquire()
    with pytest.raises(StateLockedError) as exc:
        StateLock(path, "apply").acquire(timeout=0)
    assert exc.value.lock_info["ID"] == first.id and exc.value.lock_info["Operation"] == "apply"
    seen = []
    threading.Timer(0.5, first.release).start()
    started = time.time()
    second = StateLock(path, "destroy").acquire(timeout=10, on_wait=seen.append)
    assert seen and seen[0]["ID"] == first.id and time.time() - started >= 0.4
    second.release()


def test_expired_lease_is_taken_over(tmp_path):
    path = tmp_path / "state.json.lock"
    path.write_text(json.dumps({"ID": "old", "host": "elsewhere", "pid": 1, "expires": time.time() - 1}))
    lock = StateLock(str(path), "apply").acquire()
    assert json.loads(path.read_text())["ID"] == lock.id
    lock.release()
    assert not path.exists()


def test_force_unlock_checks_id(tmp_path):
    path = str(tmp_path / "l")
    lock = StateLock(path, "apply").acquire()
    with pytest.raises(StateError):
        force_unlock(path, "nope")
    assert force_unlock(path, lock.id)["ID"] == lock.id
    lock.release()  # releasing after a force-unlock is harmless
