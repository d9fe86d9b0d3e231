"""The local state's journal (jsctl/state/journal.py): apply records each job in one fsynced line
instead of rewriting the state file; a read folds it in; a kill -9 at any point loses no submitted
job and duplicates none."""
import json
import os
import re
import signal
import subprocess
import sys

import pytest
from localjobs import job_yaml, run_cli

from jsctl.state.local import LocalBackend


def _record(address: str) -> dict:
    return {"name": address.rsplit(".", 1)[-1], "generation": 1, "handle": f"local://local/{address}"}


@pytest.fixture
def path(tmp_path):
    backend = LocalBackend(str(tmp_path / "state.json"))
    state = backend.read()
    state.put("job.first", _record("job.first"))
    backend.write(state)  # a state file to journal against
    return str(tmp_path / "state.json")


def test_record_appends_a_line_and_a_read_folds_it(path):
    backend = LocalBackend(path)
    state = backend.read()
    before = open(path, "rb").read()
    for name in ("a", "b"):
        state.put(f"job.{name}", _record(f"job.{name}"))
        assert backend.record(state, [f"job.{name}"]) is True
    assert open(path, "rb").read() == before  # not rewritten
    lines = open(path + ".journal").read().splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["jsctl-journal"] == 1
    seen = LocalBackend(path).read()
    assert sorted(seen.resources) == ["job.a", "job.b", "job.first"] and seen.serial == state.serial
    backend.flush(state)
    assert not os.path.exists(path + ".journal")
    assert sorted(json.loads(open(path).read())["resources"]) == ["job.a", "job.b", "job.first"]


def test_a_line_cut_by_a_crash_is_skipped_and_appending_goes_on(path):
    backend = LocalBackend(path)
    state = backend.read()
    state.put("job.a", _record("job.a"))
    backend.record(state, ["job.a"])
    with open(path + ".journal", "ab") as fh:
        fh.write(b'{"address": "job.cut", "reso')  # killed mid-line
    again = LocalBackend(path)
    state = again.read()
    assert sorted(state.resources) == ["job.a", "job.first"]
    state.remove("job.first")
    again.record(state, ["job.first"])
    assert sorted(LocalBackend(path).read().resources) == ["job.a"]


def test_a_journal_already_folded_is_ignored(path):
    """A crash between the full write and the journal's removal: the journal names a past version."""
    backend = LocalBackend(path)
    state = backend.read()
    state.put("job.a", _record("job.a"))
    backend.record(state, ["job.a"])
    journal = open(path + ".journal", "rb").read()
    backend.flush(state)
    state.remove("job.a")
    backend.write(state)
    with open(path + ".journal", "wb") as fh:
        fh.write(journal)
    assert sorted(LocalBackend(path).read().resources) == ["job.first"]  # job.a is not resurrected


def test_conditional_write_still_sees_other_writers(path):
    mine, theirs = LocalBackend(path), LocalBackend(path)
    state = mine.read()
    state.put("job.mine", _record("job.mine"))
    mine.record(state, ["job.mine"])
    other = theirs.read()  # folds my journal
    other.put("job.theirs", _record("job.theirs"))
    theirs.write(other)
    mine.flush(state)  # rebased on theirs
    assert sorted(LocalBackend(path).read().resources) == ["job.first", "job.mine", "job.theirs"]


N = 12


@pytest.fixture
def ws(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for i in range(N):
        (tmp_path / f"j{i:02d}.yaml").write_text(job_yaml(f"j{i:02d}", ["true"]))
    return tmp_path


@pytest.mark.parametrize("kill_after", [1, 6, N])
def test_kill_9_mid_apply_loses_nothing_and_duplicates_nothing(ws, kill_after):
    files = [a for i in range(N) for a in ("-f", f"j{i:02d}.yaml")]
    proc = subprocess.Popen([sys.executable, "-m", "jsctl.cli", "apply", *files, "--auto-approve"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    reported = []
    while len(reported) < kill_after:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        if ": submitted local://" in line:
            reported.append(line.split(":", 1)[0])
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    code, out, err = run_cli("state", "list")
    assert code == 0, err
    for address in reported:  # every job apply said it submitted is in state
        assert address in out, out
    code, out, err = run_cli("apply", *files, "--auto-approve", "--lock-timeout", "30s")
    assert code == 0, out + err
    # recorded in this apply (an adopted job too: `found ...; adopting it`, then `submitted`): never one
    # the killed apply reported, and each once; the engine holds each job once (the runs, below)
    again = re.findall(r"^(job\.j\d+): submitted local://", out, re.M)
    assert not set(again) & set(reported), again
    assert len(set(again)) == len(again), again
    assert sorted(LocalBackend(str(ws / ".jsctl" / "state.json")).read().resources) == \
        [f"job.j{i:02d}" for i in range(N)]
    assert len(os.listdir(ws / ".jsctl" / "runs")) == N  # each job submitted once
    assert not os.path.exists(ws / ".jsctl" / "state.json.journal")  # folded by the full write
    code, out, err = run_cli("plan", *files, "--refresh=false")
    assert code == 0 and "No changes" in out, out + err
