"""Issue 10: a Slurm command that does not answer is killed at its timeout, and one still running
when jsctl exits (a probe the plan stopped waiting for) is killed at exit, not left behind. stdin is
never the terminal."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from jsctl.errors import ProviderError
from jsctl.providers.slurm import runner
from jsctl.providers.slurm.runner import Runner
from jsctl.providers.slurm.settings import Access


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc to see the child")
def test_timeout_kills_the_command(tmp_path):
    pidfile = tmp_path / "pid"
    with pytest.raises(ProviderError, match=r"sh -c did not answer within 0.5s"):
        Runner(Access()).run(["sh", "-c", f"echo $$ > {pidfile}; exec sleep 60"], timeout_s=0.5)
    assert not _running(int(pidfile.read_text()))
    assert not runner._RUNNING  # nothing tracked once it returned


def test_stdin_is_not_inherited():
    res = Runner(Access()).run(["sh", "-c", "cat; echo end"])
    assert res.ok and res.stdout == "end\n"  # /dev/null: nothing to read, no wait on a terminal
    res = Runner(Access()).run(["cat"], input="given")
    assert res.stdout == "given"


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc to see the child")
def test_a_command_left_running_in_a_daemon_thread_is_killed_at_exit(tmp_path):
    pidfile = tmp_path / "pid"
    program = f"""
import threading, time
from jsctl.providers.slurm.runner import Runner
from jsctl.providers.slurm.settings import Access
threading.Thread(target=Runner(Access()).run, args=(["sh", "-c", "echo $$ > {pidfile}; exec sleep 60"],),
                 daemon=True).start()
while True:
    try:
        if open("{pidfile}").read().strip():
            break
    except OSError:
        pass
    time.sleep(0.05)
"""
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", program], check=True, timeout=50)
    assert time.monotonic() - start < 50
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(pid)
