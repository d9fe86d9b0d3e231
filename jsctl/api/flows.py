"""What the CLI does around the verbs, as SDK functions: apply a plan under the state lock (what
`jsctl apply PLANFILE` does), and wait for jobs to end (what a script would otherwise poll
`jsctl status` for)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, Sequence

from jsctl.api.jobs import JobStatus, status
from jsctl.api.live import Echo, store_for

if TYPE_CHECKING:
    from jsctl.apply import ApplyResult, OnEvent
    from jsctl.config.workspace import Workspace
    from jsctl.plan.model import Plan

OnLockWait = Callable[[dict], None]

# a job in one of these phases will not change by itself: FAILED jobs are not rerun until the next
# apply, NOT SUBMITTED ones wait for it, UNKNOWN ones have left their engine (as apply's own wait)
FINAL_PHASES = frozenset({"SUCCEEDED", "FAILED", "CANCELLED", "UNKNOWN", "NOT SUBMITTED"})


def apply(the_plan: Plan, ws: Workspace, on_event: OnEvent | None = None, lock_timeout_s: float = 0.0,
          on_lock_wait: OnLockWait | None = None, poll_s: float = 1.0) -> ApplyResult:
    """Carry out `the_plan` as `jsctl apply PLANFILE` does: take the state lock (waiting up to
    `lock_timeout_s`; `on_lock_wait` hears the holder once), refuse the plan if state changed since it
    was made (PlanError: stale), submit, record each job as it goes, release the lock. A plan without
    changes does nothing. `on_event` hears each step (jsctl.apply's events, the lines of `apply --json`).
    Jobs that could not be submitted are in the result's `not_submitted` (it is not `ok`), not raised."""
    from jsctl.api.plans import apply as run

    with store_for(ws).locked("apply", lock_timeout_s, on_lock_wait):
        return run(the_plan, ws, on_event, poll_s)


def wait_all(ws: Workspace, jobs: Sequence[str] = (), timeout_s: float | None = None, poll_s: float = 2.0,
             echo: Echo | None = None) -> tuple[JobStatus, ...]:
    """Wait until every job named in `jobs` (names, addresses, job ids or handles; none: every job in
    state) is in a final phase (FINAL_PHASES: SUCCEEDED, FAILED, CANCELLED, UNKNOWN or NOT SUBMITTED),
    polling `status` every `poll_s` seconds; their statuses, in the order asked (else by address).
    A PAUSED job is not final: it waits for `resume`. After `timeout_s` (None: no limit)
    WaitTimeoutError, carrying the statuses last seen. UsageError for a job not in state."""
    from jsctl.api.jobs import find
    from jsctl.errors import UsageError, WaitTimeoutError

    if poll_s <= 0:
        raise UsageError(f"poll_s must be more than 0 seconds, got {poll_s:g}")
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    state = store_for(ws).read()
    addresses = list(dict.fromkeys(find(state, job) for job in jobs))  # each named job must exist now
    while True:
        rows = {row.address: row for row in status(ws, echo=echo)}
        missing = [a for a in addresses if a not in rows]
        if missing:  # forgotten while we waited (state rm, destroy)
            raise UsageError(f"{', '.join(missing)} left state while waiting for {'them' if len(missing) > 1 else 'it'}")
        seen = tuple(rows[a] for a in addresses) if addresses else tuple(rows[a] for a in sorted(rows))
        if all(row.phase in FINAL_PHASES for row in seen):
            return seen
        if deadline is not None and time.monotonic() >= deadline:
            running = [f"{row.address} ({row.phase})" for row in seen if row.phase not in FINAL_PHASES]
            raise WaitTimeoutError(f"{len(running)} job{'s' if len(running) != 1 else ''} still not finished "
                                   f"after {timeout_s:g}s: {', '.join(running)}", seen,
                                   hint="wait longer, or look at them with jsctl status and jsctl logs")
        time.sleep(poll_s if deadline is None else max(min(poll_s, deadline - time.monotonic()), 0.0))


def wait(ws: Workspace, job: str, timeout_s: float | None = None, poll_s: float = 2.0,
         echo: Echo | None = None) -> JobStatus:
    """Wait until one job is in a final phase (see wait_all); its status. WaitTimeoutError after
    `timeout_s`."""
    return wait_all(ws, (job,), timeout_s, poll_s, echo)[0]
