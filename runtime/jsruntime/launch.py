"""``python -m jsruntime.launch [torchrun options] script.py [args]``: torchrun, preemption-aware.

Runs ``python -m torch.distributed.run`` with the arguments given, adding
``--signals-to-handle=SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1`` (without it SIGUSR1 kills
torchrun and orphans its workers) unless the caller passed that option.  The first SIGTERM,
SIGUSR1, SIGINT or SIGHUP sent to this launcher is forwarded to torchrun, which forwards it
to the workers; repeats are not forwarded (a second signal makes torchrun abandon its
graceful shutdown).

``python -m jsruntime.launch --exec COMMAND [args]`` runs a command that starts torchrun
itself (``torchrun ...`` as the user wrote it, ``bash -c "... torchrun ..."``) the same way.
The torchrun in it takes the options its command line lacks from ``PET_*`` (jsctl sets
``PET_SIGNALS_TO_HANDLE`` with SIGUSR1).  A signal is forwarded to this launcher's whole
process group when it leads one (as a Slurm task or a local jsctl run does): a shell that
did not ``exec`` torchrun dies of SIGUSR1, the torchrun it started does not, and this
launcher keeps waiting for it.

torchrun itself exits 1 after a signal, whatever its workers did.  Workers that checkpointed
on a preemption signal write a status file (``JSRUNTIME_STATUS_FILE``, set here); this
launcher is a child subreaper, waits for every worker (also those torchrun left behind, up
to ``JSRUNTIME_LAUNCH_GRACE_S`` seconds, default 300), and then exits with
``REQUEUE_EXIT_CODE`` (75) if a status file was written, else with torchrun's code.
Pure Python: imports no torch.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from .env import REQUEUE_EXIT_CODE

SIGNALS_TO_HANDLE = "SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1"
EXEC = "--exec"
FORWARDED = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT, signal.SIGHUP)
_PR_SET_CHILD_SUBREAPER = 36


def torchrun_command(args: Sequence[str], python: str = sys.executable) -> list[str]:
    """The torchrun command line for ``args`` (torchrun options, then the script and its args)."""
    cmd = [python, "-m", "torch.distributed.run"]
    has_signals = any(a.startswith(("--signals-to-handle", "--signals_to_handle")) for a in args)
    if not has_signals:
        cmd.append(f"--signals-to-handle={SIGNALS_TO_HANDLE}")
    return cmd + list(args)


def _become_subreaper() -> bool:
    """Orphaned descendants (workers of a torchrun that died) are reparented to us."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children() -> list[int]:
    kids: list[int] = []
    try:
        for task in Path("/proc/self/task").iterdir():
            kids.extend(int(p) for p in (task / "children").read_text().split())
    except OSError:
        pass
    return kids


def _reap_orphans(grace_s: float) -> None:
    """Wait for children reparented to us; SIGKILL those still alive after ``grace_s``."""
    deadline = time.monotonic() + grace_s
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            continue
        if time.monotonic() > deadline:
            for kid in _children():
                print(f"jsruntime.launch: killing worker {kid} still running {grace_s:.0f} s after torchrun exited",
                      file=sys.stderr, flush=True)
                try:
                    os.kill(kid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            deadline = float("inf")
        time.sleep(0.1)


def run(args: Sequence[str], exec_command: bool = False) -> int:
    """torchrun with ``args`` (or, with ``exec_command``, the command ``args``) to the end: its exit
    code, or REQUEUE_EXIT_CODE when the workers checkpointed on a preemption signal."""
    fd, status_file = tempfile.mkstemp(prefix="jsruntime-status-")
    os.close(fd)
    os.unlink(status_file)  # exists only once a worker wrote it
    env = dict(os.environ, JSRUNTIME_STATUS_FILE=status_file)
    if exec_command:  # the torchrun inside takes it from here unless its command line says otherwise
        env.setdefault("PET_SIGNALS_TO_HANDLE", SIGNALS_TO_HANDLE)
    _become_subreaper()
    # A shell may fork torchrun instead of exec'ing it: signal the whole group then (it holds us too:
    # our own copy finds the signal forwarded already). Not a group we do not lead: our parent's.
    group = exec_command and os.getpgrp() == os.getpid()
    forwarded: set[int] = set()
    early: list[int] = []  # arrived before the child existed
    child: list[subprocess.Popen] = []

    def forward(signum: int, _frame: object) -> None:
        if signum in forwarded:
            return
        forwarded.add(signum)
        if not child:
            early.append(signum)
        elif group:
            os.killpg(0, signum)
        elif child[0].poll() is None:
            child[0].send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        try:
            proc = subprocess.Popen(list(args) if exec_command else torchrun_command(args), env=env)
        except OSError as exc:
            print(f"jsruntime.launch: cannot run {args[0]}: {exc}", file=sys.stderr, flush=True)
            return 127
        child.append(proc)
        for signum in early:
            proc.send_signal(signum)
        rc = proc.wait()
        _reap_orphans(float(os.environ.get("JSRUNTIME_LAUNCH_GRACE_S", "300")))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    preempted = os.path.exists(status_file)
    if preempted:
        os.unlink(status_file)
        print(f"jsruntime.launch: workers checkpointed after a preemption signal; exit {REQUEUE_EXIT_CODE}",
              file=sys.stderr, flush=True)
        return REQUEUE_EXIT_CODE
    return rc if rc >= 0 else 128 - rc  # killed by a signal: shell convention


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help") or args == [EXEC]:
        print(__doc__)
        sys.exit(0 if args and args[0] != EXEC else 2)
    if args[0] == EXEC:
        sys.exit(run(args[1:], exec_command=True))
    sys.exit(run(args))


if __name__ == "__main__":
    main()
