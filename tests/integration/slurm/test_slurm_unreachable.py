"""Issue 10: a Slurm cluster whose controller never answers. Its slurm.conf is the CI cluster's
(same munge) with SlurmctldPort pointing at a socket on 127.0.0.1 that accepts connections and
never replies, so sinfo and squeue wait on it (until Slurm's own MessageTimeout, 10 s). jsctl plan
must return within its --probe-timeout (plus a generous margin), warn once, and --refresh=false
must not touch the cluster at all."""
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from slurmit import EXAMPLES

TIMEOUT = 1.0
BOUND = 8.0  # sinfo alone waits 10 s on this controller; a serial refresh + probe would take 20 s or more


@pytest.fixture
def silent_controller():
    """A TCP server on 127.0.0.1 that accepts and never answers: its port, and the connections it took."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], held
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    server.close()


@pytest.fixture
def unanswered(slurm, silent_controller, tmp_path):
    port, _ = silent_controller
    conf = tmp_path / "silent" / "slurm.conf"
    conf.parent.mkdir()
    text = Path(slurm).read_text()
    text = re.sub(r"(?m)^SlurmctldPort=.*$", f"SlurmctldPort={port}", text)
    assert f"SlurmctldPort={port}" in text
    conf.write_text(text)
    ws = tmp_path / "ws"
    ws.mkdir()
    inventory = (EXAMPLES / "jsctl.yaml").read_text().replace("/tmp/jsctl-slurm/shared", str(tmp_path / "shared"))
    inventory = inventory.replace("      mode: local", f"      slurm_conf: {conf}\n      mode: local", 1)
    (ws / "jsctl.yaml").write_text(inventory)
    (ws / ".jsctl").mkdir()
    record = {"address": "job.old", "name": "old", "generation": 1, "provider": "slurm", "cluster": "ci",
              "job_id": "js-old-abcd", "handle": "slurm://ci/999999", "status": {"phase": "RUNNING"}}
    (ws / ".jsctl" / "state.json").write_text(json.dumps(
        {"format_version": 1, "serial": 1, "lineage": "test-lineage", "resources": {"job.old": record},
         "generations": {"job.old": 1}}))
    for name in ("quickstart-4gpu.yaml",):
        (ws / name).write_text((EXAMPLES / name).read_text())
    return ws


def _jsctl(ws, *args):
    env = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}  # the workspace's slurm_conf decides
    return subprocess.run([sys.executable, "-m", "jsctl.cli", *args], capture_output=True, text=True, cwd=ws,
                          env=env, timeout=120)


def test_plan_does_not_wait_for_a_silent_controller(unanswered, silent_controller):
    start = time.monotonic()
    proc = _jsctl(unanswered, "plan", "-f", "quickstart-4gpu.yaml", "--probe-timeout", str(TIMEOUT))
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    assert took < BOUND, f"plan took {took:.1f}s with --probe-timeout {TIMEOUT}"
    warnings = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("Warning")]
    assert len(warnings) == 1, proc.stdout + proc.stderr  # not one for the refresh and one for the probe
    assert warnings[0].startswith("Warning: could not refresh or probe ci: no answer within 1s")
    assert '+ job "quickstart-4gpu"' in proc.stdout  # planned from the inventory's partitions
    assert silent_controller[1]  # sinfo/squeue did reach the controller (and got no answer)


def test_refresh_false_plans_without_the_cluster(unanswered, silent_controller):
    start = time.monotonic()
    proc = _jsctl(unanswered, "plan", "-f", "quickstart-4gpu.yaml", "--refresh=false")
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - start < BOUND and "Warning" not in proc.stderr + proc.stdout
    assert proc.stdout.startswith("Not refreshing (--refresh=false)")
    time.sleep(0.3)
    assert silent_controller[1] == []  # nothing connected to the controller
