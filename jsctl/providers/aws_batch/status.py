"""AWS Batch's job descriptions (DescribeJobs) read as jsctl's LiveStatus (pure)."""
from __future__ import annotations

from typing import Any, Mapping

from jsctl.model.status import LiveStatus
from jsctl.providers.aws_batch.request import CANCEL_REASON

PHASES = {"SUBMITTED": "PENDING", "PENDING": "PENDING", "RUNNABLE": "PENDING", "STARTING": "PENDING",
          "RUNNING": "RUNNING", "SUCCEEDED": "SUCCEEDED", "FAILED": "FAILED"}


def _seconds(ms: Any) -> float | None:
    return ms / 1000.0 if isinstance(ms, (int, float)) and ms > 0 else None


def live(job: Mapping[str, Any]) -> LiveStatus:
    state = str(job.get("status") or "")
    phase = PHASES.get(state, "UNKNOWN")
    attempts = list(job.get("attempts") or ())
    last = (attempts[-1].get("container") or {}) if attempts else {}
    reasons = [r for r in (job.get("statusReason"), last.get("reason")) if r]
    if phase == "FAILED" and any(r.startswith(CANCEL_REASON) for r in reasons):
        phase = "CANCELLED"
    exit_code = (job.get("container") or {}).get("exitCode", last.get("exitCode"))
    if phase == "FAILED" and not reasons:
        reasons = ["AWS Batch gave no reason" + (f" (exit code {exit_code})" if exit_code is not None else "")]
    return LiveStatus(phase, state, "; ".join(reasons) or None, _seconds(job.get("startedAt")),
                      _seconds(job.get("stoppedAt")) if phase in ("SUCCEEDED", "FAILED", "CANCELLED") else None,
                      exit_code, max(0, len(attempts) - 1))


def log_streams(job: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(node, CloudWatch Logs stream) of the job's latest attempt: a container job's own stream, or one per
    node of a multinode job (`<job id>#<node>` jobs are described separately; their streams are named here
    when DescribeJobs gave them)."""
    out = []
    attempts = job.get("attempts") or ()
    stream = ((attempts[-1].get("container") or {}).get("logStreamName") if attempts else None) or \
        (job.get("container") or {}).get("logStreamName")
    if stream:
        out.append(("0", stream))
    return out
