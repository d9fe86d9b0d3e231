"""`jsctl state ...`, `state migrate` and `import` on each backend (local file, S3 on moto)."""
import json
import os

import pytest
from s3state import s3_workspace
from localjobs import job_yaml, run_cli, wait_phase

from jsctl.model.state import State


@pytest.fixture(params=["local", "s3"])
def sws(request, tmp_path, monkeypatch):
    """A workspace directory (cwd) whose jsctl.yaml puts the state on one backend; (dir, backend)."""
    monkeypatch.chdir(tmp_path)
    if request.param == "local":
        (tmp_path / "jsctl.yaml").write_text("clusters:\n  - {name: local, provider: local}\n"
                                             "state: {backend: local, path: .jsctl/state.json}\n")
    else:
        s3_workspace(tmp_path, request.getfixturevalue("moto_url"), request.getfixturevalue("bucket"))
    from jsctl import api

    yield tmp_path, api.store_for(api.open_workspace("jsctl.yaml"))
    for status in tmp_path.glob(".jsctl/runs/*/status.json"):
        try:
            data = json.loads(status.read_text())
            if data.get("child_pgid") and data.get("phase") in ("RUNNING", "PAUSED"):
                os.killpg(int(data["child_pgid"]), 9)
        except (ValueError, ProcessLookupError, PermissionError):
            pass


def _seed(store, *addresses):
    s = store.read()
    for a in addresses:
        s.put(a, {"name": a.rsplit(".", 1)[-1], "generation": 1, "handle": f"local://local/{a}-1",
                  "status": {"phase": "RUNNING", "engine_state": "running"}})
    store.write(s)
    return s


def test_list_show_rm_mv(sws, jsctl):
    _, store = sws
    _seed(store, "job.a", "job.b")
    code, out, err = jsctl("state", "list")
    assert code == 0, err
    assert out.splitlines() == ["job.a\tlocal://local/job.a-1\tRUNNING", "job.b\tlocal://local/job.b-1\tRUNNING"]
    code, out, _ = jsctl("state", "show", "job.a")
    assert code == 0 and json.loads(out)["handle"] == "local://local/job.a-1"
    code, _, err = jsctl("state", "show", "job.zz")
    assert code == 1 and "job.zz is not in state" in err and "job.a, job.b" in err
    code, out, err = jsctl("state", "mv", "job.a", "workflow.w.job.a")
    assert code == 0 and "Moved job.a to workflow.w.job.a" in out, err
    code, _, err = jsctl("state", "mv", "job.b", "workflow.w.job.a")
    assert code == 1 and "already in state" in err
    code, _, err = jsctl("state", "mv", "job.b", "nonsense")
    assert code == 1 and "not an address" in err
    code, out, _ = jsctl("state", "rm", "job.b")
    assert code == 0 and "Removed job.b (local://local/job.b-1 was not touched)" in out
    state = store.read()
    assert list(state.resources) == ["workflow.w.job.a"]
    assert state.resources["workflow.w.job.a"]["name"] == "a"
    assert state.resources["workflow.w.job.a"]["events"][-1]["event"] == "moved from job.a"
    assert state.serial == 5  # 2 puts, mv, rm


def test_writing_commands_take_the_lock(sws, jsctl):
    _, store = sws
    _seed(store, "job.a")
    held = store.lock("apply")
    try:
        for args in (("state", "rm", "job.a"), ("state", "mv", "job.a", "job.b"), ("state", "push", "x.json")):
            if args[1] == "push":
                with open("x.json", "w") as fh:
                    fh.write(json.dumps(store.read().to_dict()))
            code, _, err = jsctl(*args)
            assert code == 1 and "locked by another operation" in err and held.id in err, (args, err)
        code, out, _ = jsctl("state", "list")  # reading works while an apply holds the lock
        assert code == 0 and "job.a" in out
    finally:
        held.release()


def test_pull_push_round_trip_and_protections(sws, jsctl, tmp_path):
    _, store = sws
    code, _, err = jsctl("state", "pull")
    assert code == 1 and "no state is stored" in err
    _seed(store, "job.a")
    code, pulled, _ = jsctl("state", "pull")
    assert code == 0 and json.loads(pulled)["serial"] == 1
    (tmp_path / "old.json").write_text(pulled)
    _seed(store, "job.b")  # serial 2 now
    code, _, err = jsctl("state", "push", "old.json")
    assert code == 1 and "older than the stored serial 2" in err and "--force" in err
    foreign = State()
    foreign.put("job.x", {"name": "x", "generation": 1})
    foreign.serial = 9
    (tmp_path / "foreign.json").write_text(json.dumps(foreign.to_dict()))
    code, _, err = jsctl("state", "push", "foreign.json")
    assert code == 1 and "lineage" in err and "another state" in err
    (tmp_path / "trunc.json").write_text(pulled[: len(pulled) // 2])
    for force in ((), ("--force",)):
        code, _, err = jsctl("state", "push", "trunc.json", *force)
        assert code == 1 and "corrupt or truncated" in err and "Traceback" not in err
    (tmp_path / "empty.json").write_text("")
    assert jsctl("state", "push", "empty.json")[0] == 1
    (tmp_path / "notstate.json").write_text('{"hello": 1}')
    code, _, err = jsctl("state", "push", "notstate.json", "--force")
    assert code == 1 and "not a jsctl state" in err
    assert sorted(store.read().resources) == ["job.a", "job.b"]  # nothing of that reached the state
    newer = json.loads(pulled)
    newer["serial"] = 7
    newer["resources"]["job.c"] = {"name": "c", "generation": 1}
    (tmp_path / "newer.json").write_text(json.dumps(newer))
    code, out, err = jsctl("state", "push", "newer.json")
    assert code == 0 and "Pushed serial 7" in out, err
    assert sorted(store.read().resources) == ["job.a", "job.c"]
    code, out, err = jsctl("state", "push", "old.json", "--force")
    assert code == 0 and "Pushed serial 8" in out, err  # forced: serial moves past the stored one
    code, out, _ = jsctl("state", "push", "foreign.json", "--force")
    assert code == 0 and store.read().lineage == foreign.lineage


def test_migrate_between_backends(sws, jsctl, tmp_path, request):
    directory, store = sws
    _seed(store, "job.a")
    code, out, err = jsctl("state", "migrate", "--to", "moved/state.json")
    assert code == 0 and "Migrated serial 1" in out, err
    moved = json.loads((tmp_path / "moved" / "state.json").read_text())
    assert moved["lineage"] == store.read().lineage and list(moved["resources"]) == ["job.a"]
    code, out, _ = jsctl("state", "migrate", "--to", "moved/state.json")
    assert code == 0 and "already holds this state" in out
    _seed(store, "job.b")
    assert jsctl("state", "migrate", "--to", "moved/state.json")[0] == 0  # same lineage, newer: copied
    other = State()
    other.put("job.x", {"name": "x", "generation": 1})
    (tmp_path / "other.json").write_text(json.dumps(other.to_dict()))
    code, _, err = jsctl("state", "migrate", "--to", "other.json")
    assert code == 1 and "holds another state" in err and "nothing was migrated" in err
    assert json.loads((tmp_path / "other.json").read_text())["lineage"] == other.lineage
    # and to a backend named by a workspace file: S3 from local, local from S3
    team = tmp_path / "team"
    team.mkdir()
    if store.kind == "local":
        target = s3_workspace(team, request.getfixturevalue("moto_url"), request.getfixturevalue("bucket"),
                              "team/state.json")
    else:
        target = str(team / "jsctl.yaml")
        (team / "jsctl.yaml").write_text("state: {backend: local, path: team-state.json}\n")
    code, out, err = jsctl("state", "migrate", "--to", target)
    assert code == 0 and "Migrated serial 2" in out, err
    code, out, _ = jsctl("state", "list", "--workspace", target)
    assert out.split("\n")[0].startswith("job.a") and "job.b" in out


def test_import_a_job_submitted_by_hand(sws):
    directory, store = sws
    (directory / "a.yaml").write_text(job_yaml("a", ["sleep", "20"]))
    code, out, err = run_cli("apply", "-f", "a.yaml", "--auto-approve")
    assert code == 0, err
    handle = store.read().resources["job.a"]["handle"]
    wait_phase("a", ("RUNNING",))
    assert run_cli("state", "rm", "job.a")[0] == 0  # now it runs unmanaged, as if submitted by hand
    code, out, err = run_cli("import", "job.a", handle, "-f", "a.yaml")
    assert code == 0, err
    assert f"Imported {handle} as job.a: RUNNING" in out and "spec from" in out and "a.yaml" in out
    record = store.read().resources["job.a"]
    assert record["spec"] and record["artifact_digest"] and record["status"]["phase"] == "RUNNING"
    code, out, err = run_cli("plan", "-f", "a.yaml", "--refresh=false")
    assert code == 0 and "No changes" in out, out + err
    code, _, err = run_cli("import", "job.a", handle)
    assert code == 1 and "already in state" in err
    assert run_cli("state", "rm", "job.a")[0] == 0
    code, out, err = run_cli("import", "job.other", handle)  # no job file: what the engine says
    assert code == 0 and "spec unknown" in out, err
    record = store.read().resources["job.other"]
    assert record["spec"] is None and record["imported"]["engine_state"] and record["handle"] == handle
    code, _, err = run_cli("import", "job.c", "local://local/no-such-run")
    assert code == 1 and "does not know the job" in err and "Traceback" not in err
    code, _, err = run_cli("import", "job.c", "slurm://hpc/1")
    assert code == 1 and "no cluster 'hpc'" in err
    assert run_cli("stop", "other")[0] == 0
