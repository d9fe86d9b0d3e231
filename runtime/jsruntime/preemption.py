"""Preemption signals: remember that one arrived; the training loop acts at a step boundary."""

from __future__ import annotations

import signal
import threading
from types import FrameType

PREEMPT_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)


class PreemptionWatcher:
    """Installs handlers for SIGTERM and SIGUSR1 that only set a flag.

    The handler does no I/O and no collective: the runtime checks :attr:`requested` in
    ``Runtime.step`` after the current step finished, agrees with the other ranks, saves
    synchronously and exits with ``REQUEUE_EXIT_CODE``.
    """

    def __init__(self, signals: tuple[signal.Signals, ...] = PREEMPT_SIGNALS) -> None:
        self._signals = signals
        self._previous: dict[signal.Signals, object] = {}
        self.signal_name: str | None = None
        # A plain attribute, not a threading.Event: Event.set takes a lock, and a second signal
        # arriving inside the first handler's set() would deadlock on it.
        self._requested = False

    @property
    def requested(self) -> bool:
        return self._requested

    def request(self, name: str = "manual") -> None:
        """Ask for a preemption stop as if a signal had arrived (used by tests and users)."""
        if self.signal_name is None:
            self.signal_name = name
        self._requested = True

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.request(signal.Signals(signum).name)
        # Further preemption signals (torchrun forwards what Slurm also sends directly) carry
        # nothing new; ignoring them keeps handlers from nesting while the job checkpoints.
        for sig in self._previous:
            signal.signal(sig, signal.SIG_IGN)

    def install(self) -> bool:
        """Install the handlers; returns False outside the main thread (nothing installed)."""
        if threading.current_thread() is not threading.main_thread():
            return False
        for sig in self._signals:
            self._previous[sig] = signal.signal(sig, self._handle)
        return True

    def uninstall(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)  # type: ignore[arg-type]
        self._previous.clear()
