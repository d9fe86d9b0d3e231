"""``python -m jsruntime.launch [torchrun options] script.py [args]``: torchrun, preemption-aware.

Runs ``python -m torch.distributed.run`` with the arguments given, adding
``--signals-to-handle=SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1`` (without it SIGUSR1 kills
torchrun and orphans its workers) unless the caller passed that option.  SIGTERM, SIGUSR1,
SIGINT and SIGHUP sent to this launcher are forwarded to torchrun, which forwards them to the
workers.

torchrun itself exits 1 after a signal, whatever its workers did; so workers that
checkpointed on a preemption signal write a status file (``JSRUNTIME_STATUS_FILE``, set
here) and this launcher then exits with ``REQUEUE_EXIT_CODE`` (75).  Otherwise it exits
with torchrun's code.  Pure Python: imports no torch.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from typing import Sequence

from .env import REQUEUE_EXIT_CODE

SIGNALS_TO_HANDLE = "SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1"
FORWARDED = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT, signal.SIGHUP)


def torchrun_command(args: Sequence[str], python: str = sys.executable) -> list[str]:
    """The torchrun command line for ``args`` (torchrun options, then the script and its args)."""
    cmd = [python, "-m", "torch.distributed.run"]
    has_signals = any(a.startswith(("--signals-to-handle", "--signals_to_handle")) for a in args)
    if not has_signals:
        cmd.append(f"--signals-to-handle={SIGNALS_TO_HANDLE}")
    return cmd + list(args)


def run(args: Sequence[str]) -> int:
    fd, status_file = tempfile.mkstemp(prefix="jsruntime-status-")
    os.close(fd)
    os.unlink(status_file)  # exists only once a worker wrote it
    env = dict(os.environ, JSRUNTIME_STATUS_FILE=status_file)
    proc = subprocess.Popen(torchrun_command(args), env=env)

    def forward(signum: int, _frame: object) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        rc = proc.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    try:
        preempted = os.path.exists(status_file)
        if preempted:
            os.unlink(status_file)
    except OSError:
        preempted = False
    if preempted:
        print(f"jsruntime.launch: workers checkpointed after a preemption signal; exit {REQUEUE_EXIT_CODE}",
              file=sys.stderr, flush=True)
        return REQUEUE_EXIT_CODE
    return rc if rc >= 0 else 128 - rc  # killed by a signal: shell convention


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if args else 2)
    sys.exit(run(args))


if __name__ == "__main__":
    main()
