"""The fake Batch service's jobs: how a job's state moves with time (fakebatch.py serves them), the
view GetJob/ListJobs answer, the log entries Cloud Logging would hold, and ListJobs filters."""
from __future__ import annotations

import re
import time
import uuid
from typing import Callable

TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")
FLOW = ("QUEUED", "SCHEDULED", "RUNNING")


def rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


class FakeJob:
    def __init__(self, name: str, body: dict, created: float, step_s: float, long: bool, exit_code: int,
                 run_s: float | None = None) -> None:
        self.name, self.body, self.created, self.step_s = name, body, created, step_s
        self.run_s = step_s if run_s is None else run_s
        self.long, self.exit_code = long, exit_code
        self.uid = f"{name.rsplit('/', 1)[1][:40]}-{uuid.uuid4().hex[:8]}"
        self.cancelled_at: float | None = None
        self.deleted_at: float | None = None

    def timeline(self, now: float) -> list[tuple[float, str]]:
        """(time, state) for every state the job has been in up to `now`, in order."""
        out = [(self.created + i * self.step_s, s) for i, s in enumerate(FLOW)]
        if not self.long:
            out.append((self.created + 2 * self.step_s + self.run_s, "FAILED" if self.exit_code else "SUCCEEDED"))
        if self.cancelled_at is not None:
            out = [e for e in out if e[0] < self.cancelled_at]
            out += [(self.cancelled_at, "CANCELLATION_IN_PROGRESS"), (self.cancelled_at + self.step_s, "CANCELLED")]
        if self.deleted_at is not None:
            out = [e for e in out if e[0] < self.deleted_at] + [(self.deleted_at, "DELETION_IN_PROGRESS")]
        return [e for e in out if e[0] <= now]

    def state(self, now: float) -> str:
        return self.timeline(now)[-1][1]

    def gone(self, now: float) -> bool:
        return self.deleted_at is not None and now >= self.deleted_at + self.step_s

    def tasks(self) -> int:
        return int((self.body.get("taskGroups") or [{}])[0].get("taskCount") or 1)

    def view(self, now: float) -> dict:
        """The Job as GetJob answers: what was sent, plus the service's output-only fields."""
        timeline = self.timeline(now)
        state = timeline[-1][1]
        events = []
        for (t, s), (_, before) in zip(timeline[1:], timeline):
            event = {"type": "STATUS_CHANGED", "eventTime": rfc3339(t),
                     "description": f"Job state is set from {before} to {s} for job {self.name}."}
            if s == "FAILED":
                event["description"] += (f" Job failed due to task failure. Specifically, task with index 0 failed "
                                         f"due to the following task event: \"Task state is updated from RUNNING to "
                                         f"FAILED on zones/us-central1-a/instances/fake-0 with exit code "
                                         f"{self.exit_code}.\"")
                event["taskExecution"] = {"exitCode": self.exit_code}
                event["taskState"] = "FAILED"
            events.append(event)
        task_state = {"QUEUED": "PENDING", "SCHEDULED": "ASSIGNED", "CANCELLATION_IN_PROGRESS": "RUNNING",
                      "DELETION_IN_PROGRESS": "RUNNING"}.get(state, state)
        if state == "CANCELLED":
            task_state = "FAILED"
        groups = [dict(g, name=f"{self.name}/taskGroups/group{i}") for i, g in enumerate(self.body["taskGroups"])]
        status = {"state": state, "statusEvents": events,
                  "taskGroups": {"group0": {"counts": {task_state: str(self.tasks())}}}}
        started = [t for t, s in timeline if s == "RUNNING"]
        if started:
            end = timeline[-1][0] if state in TERMINAL else now
            status["runDuration"] = f"{max(end - started[0], 0):.3f}s"
        return {**self.body, "taskGroups": groups, "name": self.name, "uid": self.uid,
                "createTime": rfc3339(self.created), "updateTime": rfc3339(timeline[-1][0]), "status": status}

    def log_entries(self, now: float) -> list[dict]:
        """What Batch writes to Cloud Logging for the job (batch_agent_logs): one entry per state change."""
        project = self.name.split("/")[1]
        return [{"logName": f"projects/{project}/logs/batch_agent_logs", "timestamp": rfc3339(t),
                 "insertId": f"{self.uid}-{i}", "severity": "INFO",
                 "resource": {"type": "generic_task", "labels": {"project_id": project, "job": self.uid}},
                 "labels": {"job_uid": self.uid, "task_id": f"task/{self.uid}-group0-0/0/0"},
                 "textPayload": f"job {self.name.rsplit('/', 1)[1]}: {s}"}
                for i, (t, s) in enumerate(self.timeline(now))]


TERM = re.compile(r'^\s*(labels\.(?:"([^"]+)"|([A-Za-z0-9_-]+))|name|status\.state|uid)\s*=\s*"([^"]*)"\s*$')


def compile_filter(text: str) -> Callable[[dict], bool]:
    """ListJobs' filter, the part jsctl uses: `labels.K="V"`, `name="..."`, `status.state="..."`,
    `uid="..."`, joined by AND (binds tighter) and OR. Anything else is refused (400 in the caller)."""
    if not text.strip():
        return lambda job: True
    alternatives = []
    for alt in re.split(r"\s+OR\s+", text.strip()):
        terms = []
        for term in re.split(r"\s+AND\s+", alt.strip().strip("()")):
            m = TERM.match(term.strip("() "))
            if not m:
                raise ValueError(f"unsupported filter term: {term!r}")
            terms.append((m.group(1), m.group(2) or m.group(3), m.group(4)))
        alternatives.append(terms)

    def field(job: dict, what: str, key: str | None) -> str | None:
        if key:
            return (job.get("labels") or {}).get(key)
        return {"name": job.get("name"), "uid": job.get("uid"),
                "status.state": (job.get("status") or {}).get("state")}[what]

    return lambda job: any(all(field(job, w, k) == v for w, k, v in terms) for terms in alternatives)
