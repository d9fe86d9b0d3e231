"""The state backend conformance suite: every backend (local file, S3 on moto) passes each test."""
import threading
import time

import pytest

from jsctl.errors import StateError, StateLockedError
from jsctl.model.state import State
from jsctl.state.backend import StateConflictError


def _rec(name: str, gen: int = 1) -> dict:
    return {"name": name, "generation": gen}


def test_empty_then_round_trip(make_backend):
    b = make_backend()
    snap = b.read_versioned()
    assert not snap.exists and snap.version is None and snap.state.resources == {}
    s = b.read()
    s.put("job.a", _rec("a"))
    b.write(s)
    again = make_backend().read_versioned()
    assert again.exists and again.version
    assert (again.state.serial, again.state.lineage, list(again.state.resources)) == (1, s.lineage, ["job.a"])


def test_version_changes_with_content(make_backend):
    b = make_backend()
    s = b.read()
    s.put("job.a", _rec("a"))
    v1 = b.write_if(s, None)
    s.put("job.b", _rec("b"))
    v2 = b.write_if(s, v1)
    assert v1 != v2 and make_backend().read_versioned().version == v2


def test_conditional_write_refuses_a_stale_version(make_backend):
    b = make_backend()
    s = b.read()
    s.put("job.a", _rec("a"))
    v1 = b.write_if(s, None)
    with pytest.raises(StateConflictError):
        b.write_if(s, None)  # "create" when one exists
    s.put("job.b", _rec("b"))
    b.write_if(s, v1)
    s.put("job.c", _rec("c"))
    with pytest.raises(StateConflictError):
        b.write_if(s, v1)  # stale
    assert sorted(make_backend().read().resources) == ["job.a", "job.b"]


def test_lost_race_reapplies_its_records(make_backend):
    """Two writers read the same version; the second to write re-reads and re-applies its record."""
    one, two = make_backend(), make_backend()
    base = one.read()
    base.put("job.base", _rec("base"))
    one.write(base)
    a, b = one.read(), two.read()
    a.put("job.a", _rec("a"))
    b.put("job.b", _rec("b"))
    b.remove("job.base")
    one.write(a)
    two.write(b)  # loses the conditional write, then rebases
    final = make_backend().read()
    assert sorted(final.resources) == ["job.a", "job.b"]
    assert final.serial > max(a.serial, b.serial) - 1
    a.put("job.a2", _rec("a2"))  # the first writer goes on from its own copy: nothing of b's is lost
    one.write(a)
    assert sorted(make_backend().read().resources) == ["job.a", "job.a2", "job.b"]


def test_same_address_changed_twice_is_a_conflict(make_backend):
    one, two = make_backend(), make_backend()
    s = one.read()
    s.put("job.a", _rec("a"))
    one.write(s)
    a, b = one.read(), two.read()
    a.put("job.a", _rec("a", 2))
    b.put("job.a", _rec("a", 3))
    one.write(a)
    with pytest.raises(StateConflictError, match="job.a"):
        two.write(b)
    assert make_backend().read().resources["job.a"]["generation"] == 2


def test_other_lineage_is_never_rebased(make_backend):
    one, two = make_backend(), make_backend()
    s = one.read()
    s.put("job.a", _rec("a"))
    one.write(s)
    mine = two.read()
    other = State()
    other.put("job.x", _rec("x"))
    one.write_if(other, one.read_versioned().version)
    mine.put("job.b", _rec("b"))
    with pytest.raises(StateConflictError, match="lineage"):
        two.write(mine)
    assert list(make_backend().read().resources) == ["job.x"]


def test_lock_excludes_and_names_the_holder(make_backend):
    held = make_backend().lock("apply")
    try:
        with pytest.raises(StateLockedError) as exc:
            make_backend().lock("destroy", timeout=0)
        info = exc.value.lock_info
        assert info["ID"] == held.id and info["Operation"] == "apply"
        assert {"ID", "Operation", "Who", "Version", "Created", "Path"} <= set(info)
        assert make_backend().lock_info()["ID"] == held.id
    finally:
        held.release()
    assert make_backend().lock_info() is None


def test_waiter_gets_the_lock_when_released(make_backend):
    held = make_backend().lock("apply")
    seen = []
    threading.Timer(0.6, held.release).start()
    second = make_backend().lock("destroy", timeout=15, on_wait=seen.append)
    assert seen and seen[0]["ID"] == held.id
    assert make_backend().lock_info()["ID"] == second.id
    second.release()


def test_expired_lease_is_taken_over_and_said(make_backend, monkeypatch):
    monkeypatch.setenv("JSCTL_LOCK_LEASE", "1")
    monkeypatch.setattr("jsctl.state.lock.socket.gethostname", lambda: "host-a")
    monkeypatch.setattr("jsctl.state.s3.socket.gethostname", lambda: "host-a")
    dead = make_backend().lock("apply")
    dead._stop.set()  # its heartbeat stops, as when the process is killed on another machine
    monkeypatch.setattr("jsctl.state.lock.socket.gethostname", lambda: "host-b")
    monkeypatch.setattr("jsctl.state.s3.socket.gethostname", lambda: "host-b")
    with pytest.raises(StateLockedError):
        make_backend().lock("apply", timeout=0)  # the lease is still good
    said = []
    started = time.time()
    taker = make_backend().lock("apply", timeout=10, on_takeover=said.append)
    assert time.time() - started < 8
    assert said and said[0]["ID"] == dead.id and "Who" in said[0]
    assert taker.took_over["ID"] == dead.id
    assert make_backend().lock_info()["ID"] == taker.id
    dead.release()  # the late holder's release does not remove the new holder's lock
    assert make_backend().lock_info()["ID"] == taker.id
    taker.release()


def test_heartbeat_keeps_the_lease(make_backend, monkeypatch):
    monkeypatch.setenv("JSCTL_LOCK_LEASE", "2")
    held = make_backend().lock("apply")
    try:
        time.sleep(4.5)  # over two leases: the heartbeat (every half second) renewed it
        with pytest.raises(StateLockedError):
            make_backend().lock("apply", timeout=0)
    finally:
        held.release()


def test_force_unlock_checks_the_id(make_backend):
    held = make_backend().lock("apply")
    with pytest.raises(StateError, match="does not match"):
        make_backend().force_unlock("nope")
    assert make_backend().force_unlock(held.id)["ID"] == held.id
    assert make_backend().lock_info() is None
    with pytest.raises(StateError, match="not locked"):
        make_backend().force_unlock(held.id)
    held.release()  # harmless after a force-unlock
    make_backend().lock("apply").release()


def test_corrupt_state_is_refused_and_not_overwritten(make_backend):
    b = make_backend()
    s = b.read()
    s.put("job.a", _rec("a"))
    b.write(s)
    _store_raw(b, b'{"serial": 1, "lin')
    with pytest.raises(StateError, match="corrupt or truncated"):
        make_backend().read()
    with pytest.raises(StateError):
        make_backend().write(s)


def _store_raw(backend, data: bytes) -> None:
    if backend.kind == "local":
        with open(backend.path, "wb") as fh:
            fh.write(data)
    else:
        backend.client.put_object(Bucket=backend.bucket, Key=backend.key, Body=data)
