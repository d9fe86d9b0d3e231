"""What the apiserver holds about a job → jsctl's LiveStatus (pure: objects are plain dicts as the
apiserver returns them; the engine's own word stays beside the phase).

Job (batch/v1): conditions Complete/SuccessCriteriaMet, Failed/FailureTarget, Suspended; active and
ready pods; pods the scheduler cannot place keep it PENDING with the PodScheduled condition's reason.
JobSet: conditions Completed, Failed, Suspended, and its replicated jobs' counts.
Volcano Job and Kubeflow TrainJob: their status where a controller wrote one, else UNKNOWN (untracked).
"""
from __future__ import annotations

import calendar
import time
from typing import Any, Iterable, Mapping

from jsctl.model.status import REQUEUE_EXIT_CODE, LiveStatus

COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
JOBSET_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
JOBSET_RJOB = "jobset.sigs.k8s.io/replicatedjob-name"
CANCEL_REASON = "CancelledByJsctl"  # the Event cancel leaves behind: what the job was when jsctl deleted it
PHASE_ANNOTATION = "jsctl.dev/phase"

VOLCANO_PHASES = {"Pending": "PENDING", "Inqueue": "PENDING", "Running": "RUNNING", "Restarting": "PREEMPTED",
                  "Completing": "RUNNING", "Completed": "SUCCEEDED", "Failed": "FAILED", "Aborting": "PAUSED",
                  "Aborted": "PAUSED", "Terminating": "CANCELLED", "Terminated": "CANCELLED"}


def parse_time(text: str | None) -> float | None:
    """RFC 3339 as the apiserver writes it (`2026-12-01T04:30:00Z`, maybe with fractions) → epoch seconds."""
    if not text:
        return None
    try:
        base, _, frac = str(text).rstrip("Z").partition(".")
        seconds = calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S"))
        return seconds + (float("0." + frac) if frac.isdigit() else 0.0)
    except ValueError:
        return None


def condition(obj: Mapping[str, Any], *types: str) -> Mapping[str, Any] | None:
    """The first true condition of these types in the object's status."""
    for t in types:
        for c in (obj.get("status") or {}).get("conditions") or ():
            if c.get("type") == t and str(c.get("status")) == "True":
                return c
    return None


def _why(c: Mapping[str, Any] | None) -> str | None:
    if not c:
        return None
    parts = [p for p in (c.get("reason"), c.get("message")) if p]
    return ": ".join(parts) or None


def pod_index(pod: Mapping[str, Any]) -> tuple[int, int, str]:
    """Where a pod stands among its job's nodes: (replicated job index, completion index, name)."""
    meta = pod.get("metadata") or {}
    labels, notes = meta.get("labels") or {}, meta.get("annotations") or {}

    def num(value: Any) -> int:
        return int(value) if str(value).isdigit() else 0

    index = notes.get(COMPLETION_INDEX, labels.get(COMPLETION_INDEX))
    return num(labels.get(JOBSET_JOB_INDEX)), num(index), str(meta.get("name", ""))


def _terminated(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        term = (cs.get("state") or {}).get("terminated") or (cs.get("lastState") or {}).get("terminated")
        if term:
            return term
    return None


class Pods:
    """A job's pods, summarized: nodes they are on, why the pending ones wait, how failed ones ended."""

    def __init__(self, pods: Iterable[Mapping[str, Any]]) -> None:
        self.pods = sorted(pods, key=pod_index)
        live = [p for p in self.pods if (p.get("status") or {}).get("phase") in ("Pending", "Running")
                and not (p.get("metadata") or {}).get("deletionTimestamp")]
        self.running = [p for p in live if p["status"].get("phase") == "Running"]
        self.pending = [p for p in live if p["status"].get("phase") == "Pending"]
        self.nodes = tuple(dict.fromkeys(p["spec"]["nodeName"] for p in live if (p.get("spec") or {}).get("nodeName")))

    def unschedulable(self) -> str | None:
        """The scheduler's word on a pending pod it cannot place (PodScheduled=False), if any."""
        for p in self.pending:
            for c in (p.get("status") or {}).get("conditions") or ():
                if c.get("type") == "PodScheduled" and str(c.get("status")) == "False":
                    return _why(c) or "not scheduled yet"
        return None

    def exit_code(self) -> int | None:
        """The exit code of the last pod that failed (else of any that ended)."""
        failed = [p for p in self.pods if (p.get("status") or {}).get("phase") == "Failed"]
        for p in reversed(failed or self.pods):
            term = _terminated(p)
            if term and term.get("exitCode") is not None:
                return int(term["exitCode"])
        return None


def _waiting(pods: Pods, active: int, what: str) -> tuple[str, str, str | None]:
    """(phase, engine word, reason) of a job that has not ended: running, or why it waits."""
    if pods.running:
        return "RUNNING", "Running", None
    why = pods.unschedulable()
    if why:
        return "PENDING", "Unschedulable", why
    if pods.pending or active:
        return "PENDING", "Pending", "pods are being started"
    return "PENDING", "Pending", f"waiting for the {what} controller to create pods"


def job_status(obj: Mapping[str, Any], pods: Pods) -> LiveStatus:
    status = obj.get("status") or {}
    started, ended = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
    restarts = int(status.get("failed") or 0)
    common = dict(started_at=started, nodes=pods.nodes)
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return LiveStatus("CANCELLED", "Terminating", "being deleted", **common)
    done = condition(obj, "Complete", "SuccessCriteriaMet")
    if done:
        return LiveStatus("SUCCEEDED", "Complete", None, started_at=started,
                          ended_at=ended or parse_time(done.get("lastTransitionTime")), exit_code=0,
                          restarts=restarts)
    failed = condition(obj, "Failed", "FailureTarget")
    if failed:
        return LiveStatus("FAILED", "Failed", _why(failed), started_at=started,
                          ended_at=parse_time(failed.get("lastTransitionTime")), exit_code=pods.exit_code(),
                          restarts=restarts)
    suspended = condition(obj, "Suspended")
    if suspended or (obj.get("spec") or {}).get("suspend"):
        return LiveStatus("PAUSED", "Suspended", _why(suspended) or "spec.suspend is true (jsctl resume resumes it)",
                          restarts=restarts)
    phase, word, reason = _waiting(pods, int(status.get("active") or 0), "Job")
    if phase == "PENDING" and restarts and pods.exit_code() == REQUEUE_EXIT_CODE:
        phase, word, reason = "PREEMPTED", "Requeued", f"exited {REQUEUE_EXIT_CODE} (checkpointed); started again"
    return LiveStatus(phase, word, reason, restarts=restarts, **common)


def jobset_status(obj: Mapping[str, Any], pods: Pods) -> LiveStatus:
    status = obj.get("status") or {}
    restarts = int(status.get("restarts") or 0)
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return LiveStatus("CANCELLED", "Terminating", "being deleted", restarts=restarts, nodes=pods.nodes)
    done = condition(obj, "Completed")
    if done or status.get("terminalState") == "Completed":
        return LiveStatus("SUCCEEDED", "Completed", None, ended_at=parse_time((done or {}).get("lastTransitionTime")),
                          exit_code=0, restarts=restarts)
    failed = condition(obj, "Failed")
    if failed or status.get("terminalState") == "Failed":
        return LiveStatus("FAILED", "Failed", _why(failed),
                          ended_at=parse_time((failed or {}).get("lastTransitionTime")),
                          exit_code=pods.exit_code(), restarts=restarts)
    suspended = condition(obj, "Suspended")
    if suspended or (obj.get("spec") or {}).get("suspend"):
        return LiveStatus("PAUSED", "Suspended", _why(suspended) or "spec.suspend is true (jsctl resume resumes it)",
                          restarts=restarts)
    active = sum(int(r.get("active") or 0) for r in status.get("replicatedJobsStatus") or ())
    phase, word, reason = _waiting(pods, active, "JobSet")
    return LiveStatus(phase, word, reason, restarts=restarts, nodes=pods.nodes)


def volcano_status(obj: Mapping[str, Any], pods: Pods) -> LiveStatus:
    state = ((obj.get("status") or {}).get("state") or {})
    word = state.get("phase")
    if not word:
        return untracked(obj, "Volcano")
    return LiveStatus(VOLCANO_PHASES.get(word, "UNKNOWN"), word, _why(state) if state.get("reason") else None,
                      restarts=int((obj.get("status") or {}).get("retryCount") or 0), nodes=pods.nodes)


def trainjob_status(obj: Mapping[str, Any], pods: Pods) -> LiveStatus:
    if not (obj.get("status") or {}).get("conditions"):
        return untracked(obj, "Kubeflow Trainer")
    for t, phase in (("Complete", "SUCCEEDED"), ("Failed", "FAILED"), ("Suspended", "PAUSED")):
        c = condition(obj, t)
        if c:
            return LiveStatus(phase, t, _why(c), ended_at=parse_time(c.get("lastTransitionTime"))
                              if phase != "PAUSED" else None)
    if pods.running or pods.pending:
        phase, word, reason = _waiting(pods, 0, "TrainJob")
        return LiveStatus(phase, word, reason, nodes=pods.nodes)
    return LiveStatus("UNKNOWN", "Created", "the TrainJob's conditions say neither running nor ended")


def untracked(obj: Mapping[str, Any], controller: str) -> LiveStatus:
    kind = obj.get("kind", "object")
    return LiveStatus("UNKNOWN", "Accepted", f"status not tracked: the apiserver holds the {kind}, but no "
                      f"{controller} controller has written its status")


def live_status(kind: str, group: str, obj: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> LiveStatus:
    summary = Pods(pods)
    if group == "batch" and kind == "Job":
        return job_status(obj, summary)
    if group == "jobset.x-k8s.io":
        return jobset_status(obj, summary)
    if group == "batch.volcano.sh":
        return volcano_status(obj, summary)
    if group == "trainer.kubeflow.org":
        return trainjob_status(obj, summary)
    return untracked(obj, kind)


def gone(what: str, tombstone: Mapping[str, Any] | None) -> LiveStatus:
    """A job whose workload is gone: CANCELLED (or what it had ended as) when jsctl deleted it, as the
    Event cancel leaves says; else UNKNOWN, as slurm and local report a job their engine forgot."""
    if tombstone is not None:
        notes = (tombstone.get("metadata") or {}).get("annotations") or {}
        phase = notes.get(PHASE_ANNOTATION) or "CANCELLED"
        reason = "stopped by jsctl" if phase == "CANCELLED" else f"ended {phase}; deleted by jsctl since"
        return LiveStatus(phase, "Deleted", reason, ended_at=parse_time(tombstone.get("lastTimestamp")
                                                                        or tombstone.get("firstTimestamp")))
    return LiveStatus("UNKNOWN", "gone", f"the apiserver no longer has {what} (deleted outside jsctl, or "
                      "removed after it finished)")
