"""Issue 10: planning stays fast when a cluster does not answer. The cluster here is a Slurm one
whose commands (sinfo, squeue, scontrol, sacct) never return: stand-ins on PATH that record that
they ran and sleep. Runs without Slurm installed (tests/integration/slurm has the real-controller
variant). Bounds are generous multiples of the timeout, never tight wall-clock assertions."""
import json
import os
import time

import pytest

from localjobs import job_yaml, run_cli

TIMEOUT = 1.0  # --probe-timeout the tests give
BOUND = 30.0  # a hang on any one query would take 300 s (the stand-ins sleep that long)

HANG = """#!/bin/sh
echo "$$ $(basename "$0") $*" >> "$HANG_LOG"
exec sleep 300
"""

INVENTORY = """version: jetstream.v1
clusters:
  - name: local
    provider: local
  - name: hang
    provider: slurm
    access:
      mode: local
      slurm_conf: {conf}
    container_runtime: none
    shared_dir: {shared}
    partitions:
      - {{name: debug, gpus_per_node: 4, nodes: 2, cpus_per_node: 2, memory_per_node: 16Gi, max_time: 1h}}
"""


@pytest.fixture
def hanging(ws, tmp_path):
    """A workspace with the local cluster and a Slurm cluster `hang` that never answers, and a job
    of `hang` in state (so plan refreshes it as well as probing). Returns the env for run_cli and
    the log of the commands that ran."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("sinfo", "squeue", "scontrol", "sacct"):
        (bin_dir / name).write_text(HANG)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "hang.log"
    log.write_text("")
    (ws / "jsctl.yaml").write_text(INVENTORY.format(conf=tmp_path / "nowhere" / "slurm.conf",
                                                   shared=tmp_path / "shared"))
    (ws / ".jsctl").mkdir()
    record = {"address": "job.old", "name": "old", "generation": 1, "provider": "slurm", "cluster": "hang",
              "job_id": "js-old-abcd", "handle": "slurm://hang/42", "status": {"phase": "RUNNING"}}
    (ws / ".jsctl" / "state.json").write_text(json.dumps(
        {"format_version": 1, "serial": 1, "lineage": "test-lineage", "resources": {"job.old": record},
         "generations": {"job.old": 1}}))
    (ws / "job.yaml").write_text(job_yaml("hello", ["true"], "compute:\n  target: local\n"))
    yield {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HANG_LOG": str(log)}, log
    for line in log.read_text().splitlines():  # never leave a stand-in sleeping
        try:
            os.kill(int(line.split()[0]), 9)
        except (ProcessLookupError, ValueError):
            pass


def _alive(log) -> list[str]:
    """The stand-ins still running (a killed one nobody reaped yet is a zombie: not running)."""
    alive = []
    for line in log.read_text().splitlines():
        try:
            with open(f"/proc/{line.split()[0]}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] != "Z":
                    alive.append(line)
        except FileNotFoundError:
            pass
    return alive


def test_plan_returns_within_the_timeout_and_warns_once(hanging):
    env, log = hanging
    start = time.monotonic()
    code, out, err = run_cli("plan", "-f", "job.yaml", "--probe-timeout", str(TIMEOUT), env=env, timeout=BOUND * 2)
    took = time.monotonic() - start
    assert code == 0, err
    assert took < BOUND, f"plan took {took:.1f}s with --probe-timeout {TIMEOUT}"
    assert '+ job "hello"' in out and "Refreshing state..." in out
    warnings = [line for line in (out + err).splitlines() if line.startswith("Warning")]
    assert len(warnings) == 1, out + err  # refresh and probe both failed: one warning, not one each
    assert warnings[0] == "Warning: could not refresh or probe hang: no answer within 1s " \
                          "(JSCTL_PROBE_TIMEOUT=SECONDS waits longer)"
    code, out, err = run_cli("plan", "-f", "job.yaml", "--probe-timeout", str(TIMEOUT), "--json", env=env,
                             timeout=BOUND * 2)
    assert code == 0, err
    assert json.loads(out)["warnings"] == [warnings[0].removeprefix("Warning: ")]  # CI sees it too
    ran = log.read_text()
    assert "squeue" in ran and "sinfo" in ran  # refresh and probe were both asked, at once
    time.sleep(1.0)
    assert not _alive(log), "a command left running after jsctl exited"


def test_probe_timeout_from_the_environment(hanging):
    env, log = hanging
    start = time.monotonic()
    code, out, err = run_cli("plan", "-f", "job.yaml", env={**env, "JSCTL_PROBE_TIMEOUT": "1"}, timeout=BOUND * 2)
    assert code == 0, err
    assert time.monotonic() - start < BOUND and "no answer within 1s" in out


def test_refresh_false_asks_no_cluster(hanging):
    env, log = hanging
    code, out, err = run_cli("plan", "-f", "job.yaml", "--refresh=false", env=env, timeout=BOUND * 2)
    assert code == 0, err
    assert log.read_text() == ""  # no sinfo, no squeue
    assert "Warning" not in err + out
    assert out.startswith("Not refreshing (--refresh=false)") and '+ job "hello"' in out
    code, out, err = run_cli("plan", "-f", "job.yaml", "--refresh=false", "--json", env=env, timeout=BOUND * 2)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["refresh"] is False and "--refresh=false" in doc["refreshed"] and log.read_text() == ""
    code, out, err = run_cli("apply", "-f", "job.yaml", "--refresh=false", input="no\n", env=env, timeout=BOUND * 2)
    assert "Not refreshing (--refresh=false)" in out and log.read_text() == "", err
