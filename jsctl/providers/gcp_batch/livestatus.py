"""Batch's job states as jsctl's phases, and API errors as clear ProviderErrors (no SDK import here: the
client hands over what it read)."""
from __future__ import annotations

import re
from typing import Any

from jsctl.errors import ProviderError
from jsctl.model.status import LiveStatus

PHASES = {"QUEUED": "PENDING", "SCHEDULED": "PENDING", "RUNNING": "RUNNING", "SUCCEEDED": "SUCCEEDED",
          "FAILED": "FAILED", "CANCELLATION_IN_PROGRESS": "RUNNING", "CANCELLED": "CANCELLED",
          "DELETION_IN_PROGRESS": "CANCELLED", "STATE_UNSPECIFIED": "UNKNOWN"}
TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")
NAME = re.compile(r"^projects/[^/]+/locations/[^/]+/jobs/[^/]+$")
HINTS = {
    "RESOURCE_EXHAUSTED": "a quota (GPUs, CPUs or Batch's own) is used up in this region: ask for more in the "
                          "console (IAM & Admin > Quotas), or plan with another instance type, capacity or region",
    "PERMISSION_DENIED": "the account needs roles/batch.jobsEditor on the project (and roles/iam.serviceAccountUser "
                         "on the VMs' service account)",
    "UNAUTHENTICATED": "run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS",
    "ALREADY_EXISTS": "a job with this id exists in the project and region but was not made by this workspace's "
                      "state: cancel it, or rename the job",
}


def seconds(ts: Any) -> float | None:
    return ts.timestamp() if ts is not None and hasattr(ts, "timestamp") else None


def live_status(job: Any) -> LiveStatus:
    """A batch_v1.Job (as GetJob/ListJobs answer) → LiveStatus, the state name beside the phase."""
    state = job.status.state.name
    events = list(job.status.status_events)
    reason = events[-1].description if events else None
    exit_code = None
    for e in events:
        if "task_execution" in e:  # proto-plus: the field is set
            exit_code = e.task_execution.exit_code
    started = next((seconds(e.event_time) for e in events if re.search(r"\bto RUNNING\b", e.description)), None)
    ended = seconds(events[-1].event_time) if events and state in TERMINAL else None
    if state == "SUCCEEDED":
        exit_code = 0
    return LiveStatus(PHASES.get(state, "UNKNOWN"), state, reason if state != "RUNNING" else None, started, ended,
                      exit_code)


def gone(name: str) -> LiveStatus:
    return LiveStatus("UNKNOWN", "NOT_FOUND", f"Batch has no job {name} (deleted, or never created)")


def provider_error(exc: Exception, what: str) -> ProviderError:
    """A google.api_core error (or a credentials error) while `what` → a ProviderError that says what the
    service said and what to do."""
    code = getattr(exc, "code", None)
    status = _status_name(exc)
    message = getattr(exc, "message", None) or str(exc)
    if type(exc).__name__ == "DefaultCredentialsError":
        return ProviderError(f"Google Cloud credentials not found while {what}: {message}", hint=HINTS["UNAUTHENTICATED"])
    message = re.sub(r"^(GET|POST|PUT|PATCH|DELETE) \S+: ", "", str(message))  # api_core's request line
    head = f"Google Cloud Batch refused {what}" if code else f"Google Cloud Batch could not be reached while {what}"
    label = " ".join(str(x) for x in (code, status) if x)
    hint = HINTS.get(status or "")
    # the hint is in the message too: apply reports a failed submit by its message alone
    return ProviderError(f"{head}{f' ({label})' if label else ''}: {message}" + (f" ({hint})" if hint else ""),
                         hint=hint)


def _status_name(exc: Exception) -> str | None:
    grpc = getattr(exc, "grpc_status_code", None)
    if grpc is not None and getattr(grpc, "name", None):
        return grpc.name
    return {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
            409: "ALREADY_EXISTS", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"
            }.get(getattr(exc, "code", 0) or 0)
