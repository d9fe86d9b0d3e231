"""Helpers for the dashboard's tests: the real `jsctl dashboard` in a subprocess (its printed URL and
token read back), the CLI in a workspace, Chromium through Playwright, and the quickstart copied in.

Without Chromium, Playwright, torch (the quickstart) or the dashboard extra the tests skip with the
reason; with JSCTL_REQUIRE_BROWSER=1 (CI) they fail instead (tests/engines.py)."""
from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from queue import Empty, Queue
from typing import Iterator

from engines import require
from paths import EXAMPLES

VARIABLE = "JSCTL_REQUIRE_BROWSER"
URL_LINE = re.compile(r"^jsctl dashboard: (http://\S+?)/(?:\?token=(\S+))?$")


def chromium() -> str | None:
    """Debian's Chromium (never a browser Playwright downloads)."""
    for path in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if path and os.access(path, os.X_OK):
            return path
    return None


def missing(*modules: str) -> str | None:
    absent = [m for m in modules if importlib.util.find_spec(m) is None]
    return f"{', '.join(absent)} not installed (pip install -e '.[dashboard,test]')" if absent else None


def require_server() -> None:
    require(missing("starlette", "uvicorn"), VARIABLE)


def require_browser() -> str:
    """Chromium's path; skips (or, in CI, fails) without it, Playwright, torch or the dashboard extra."""
    require_server()
    require(missing("playwright"), VARIABLE)
    require(missing("torch") and "torch is not installed: the quickstart needs torch==2.13.0", VARIABLE)
    path = chromium()
    require(None if path else "no chromium on PATH (apt-get install chromium)", VARIABLE)
    return path


def cli(ws: Path, *args: str, timeout: float = 120) -> tuple[int, str, str]:
    """The real CLI in the workspace `ws`: exit code, stdout, stderr."""
    proc = subprocess.run([sys.executable, "-m", "jsctl.cli", *args], cwd=ws, capture_output=True, text=True,
                          timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def phase(ws: Path, job: str) -> str:
    code, out, err = cli(ws, "status", job, "--json")
    assert code == 0, err
    return json.loads(out)["jobs"][0]["phase"]


def copy_quickstart(ws: Path, name: str = "quickstart") -> Path:
    """examples/quickstart.yaml (its job renamed to `name`) and its training script, into `ws`."""
    if not (ws / "quickstart").exists():
        shutil.copytree(os.path.join(EXAMPLES, "quickstart"), ws / "quickstart",
                        ignore=shutil.ignore_patterns("__pycache__"))
    text = Path(EXAMPLES, "quickstart.yaml").read_text()
    target = ws / f"{name}.yaml"
    target.write_text(text.replace("  name: quickstart", f"  name: {name}", 1))
    return target


def kill_jobs(ws: Path) -> None:
    """Never leave a job's processes behind."""
    for status in ws.glob(".jsctl/runs/*/status.json"):
        try:
            data = json.loads(status.read_text())
        except ValueError:
            continue
        if data.get("child_pgid") and data.get("phase") in ("RUNNING", "PAUSED", "PENDING"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(data["child_pgid"]), 9)


@dataclass(frozen=True)
class Served:
    url: str  # where a client connects, without a trailing slash (0.0.0.0 becomes 127.0.0.1)
    printed: str  # the URL as `jsctl dashboard` printed it
    token: str | None
    output: str  # what it printed at start


@contextlib.contextmanager
def serving(ws: Path, *args: str, timeout: float = 30) -> Iterator[Served]:
    """`jsctl dashboard --port 0 ARGS` in `ws` until the block ends; its address read from its output."""
    log = open(ws / "dashboard.stderr", "w")
    proc = subprocess.Popen([sys.executable, "-m", "jsctl.cli", "dashboard", "--port", "0", *args], cwd=ws,
                            stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)
    try:
        lines: list[str] = []
        queue: Queue = Queue()
        threading.Thread(target=lambda: [queue.put(line) for line in proc.stdout], daemon=True).start()
        deadline = time.monotonic() + timeout
        while not any(line.startswith("  Ctrl-C") for line in lines):
            try:
                line = queue.get(timeout=max(deadline - time.monotonic(), 0.01))
            except Empty:
                line = ""
            if not line:
                raise AssertionError(f"jsctl dashboard printed no address in {timeout}s (exit {proc.poll()}): "
                                     f"{''.join(lines)}{(ws / 'dashboard.stderr').read_text()[-3000:]}")
            lines.append(line)
        found = next(URL_LINE.match(line.rstrip("\n")) for line in lines if line.startswith("jsctl dashboard: "))
        printed, token = found.group(1), found.group(2)
        url = printed.replace("://0.0.0.0:", "://127.0.0.1:").replace("://[::]:", "://[::1]:")
        yield Served(url, printed, token, "".join(lines))
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()
