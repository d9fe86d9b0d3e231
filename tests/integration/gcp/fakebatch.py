"""A local stand-in for the Google Cloud Batch REST API (v1), enough of Cloud Logging's entries:list and
Secret Manager's addVersion for jsctl's gcp-batch client, which sends the official client's real REST
requests here (`client_options={"api_endpoint": url}`, anonymous credentials).

It records every request (method, path, query, body) and answers as the service documents: a created
Job comes back with `name`, `uid`, `createTime` and `status.state` QUEUED; jobs then move through
SCHEDULED and RUNNING to SUCCEEDED, `step_s` seconds a state (RUNNING: `run_s`). It runs nothing (an emulate hook in the
tests runs a job's script from its recorded request). Knobs:

- the job label `fake-run: long`: the job stays RUNNING until cancelled (a sleeper);
- the job label `fake-exit: N` (or `FakeBatch.fail[job_id] = N`): the task exits N and the job FAILED;
- `FakeBatch.quota_exceeded`: create answers 429 RESOURCE_EXHAUSTED (as a GPU quota does).

The client asks for `$alt=json;enum-encoding=int`; answers name enums (QUEUED), which it reads too.
Errors follow google.rpc: `{"error": {"code": 404, "message": ..., "status": "NOT_FOUND"}}`.
"""
from __future__ import annotations

import base64
import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import fakestate

JOB_ID = re.compile(r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$")
JOBS = re.compile(r"^/v1/(projects/[^/]+/locations/[^/]+)/jobs$")
JOB = re.compile(r"^/v1/(projects/[^/]+/locations/[^/]+/jobs/[^/:]+)(:cancel)?$")
OPERATION = re.compile(r"^/v1/(projects/[^/]+/locations/[^/]+/operations/[^/]+)$")
ADD_VERSION = re.compile(r"^/v1/(projects/[^/]+/secrets/[^/:]+):addVersion$")


class ApiError(Exception):
    def __init__(self, code: int, status: str, message: str) -> None:
        super().__init__(message)
        self.code, self.status, self.message = code, status, message


class FakeBatch:
    def __init__(self, step_s: float = 0.2, run_s: float | None = None) -> None:
        self.step_s, self.run_s = step_s, run_s
        self.requests: list[dict] = []
        self.jobs: dict[str, fakestate.FakeJob] = {}
        self.secrets: dict[str, list[bytes]] = {}  # projects/P/secrets/S → versions' payloads
        self.fail: dict[str, int] = {}  # job id → exit code
        self.quota_exceeded = False
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> "FakeBatch":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def created(self, job_id: str) -> dict | None:
        """The body of the create request for this job id (as the service received it)."""
        for r in self.requests:
            if r["method"] == "POST" and JOBS.match(r["path"]) and r["query"].get("jobId") == [job_id]:
                return r["body"]
        return None

    def secret_value(self, resource: str) -> str:
        """A secret version's payload (`projects/P/secrets/S/versions/V`, V a number or latest)."""
        secret, _, version = resource.partition("/versions/")
        versions = self.secrets.get(secret) or []
        if not versions:
            raise KeyError(resource)
        return (versions[-1] if version == "latest" else versions[int(version) - 1]).decode("utf-8")

    # ---- the API ------------------------------------------------------------------------------------
    def handle(self, method: str, path: str, query: dict, body: dict | None) -> tuple[int, dict]:
        with self.lock:
            self.requests.append({"method": method, "path": path, "query": query, "body": body})
            try:
                return 200, self._route(method, path, query, body or {})
            except ApiError as exc:
                return exc.code, {"error": {"code": exc.code, "message": exc.message, "status": exc.status}}

    def _route(self, method: str, path: str, query: dict, body: dict) -> dict:
        now = time.time()
        if m := JOBS.match(path):
            if method == "POST":
                return self._create(m.group(1), (query.get("jobId") or [""])[0], body, now)
            return self._list(m.group(1), query, now)
        if m := JOB.match(path):
            job = self.jobs.get(m.group(1))
            if job is None:
                raise ApiError(404, "NOT_FOUND", f'Job "{m.group(1)}" not found')
            if method == "GET":
                return job.view(now)
            if method == "POST" and m.group(2):
                if job.state(now) in fakestate.TERMINAL:
                    raise ApiError(400, "FAILED_PRECONDITION", f"Job {m.group(1)} is already {job.state(now)}")
                job.cancelled_at = now
                return self._operation(m.group(1), "cancel")
            if method == "DELETE":
                job.deleted_at = now
                return self._operation(m.group(1), "delete")
        if m := OPERATION.match(path):
            return {"name": m.group(1), "done": True, "response": {"@type": "type.googleapis.com/google.protobuf.Empty"}}
        if method == "POST" and path == "/v2/entries:list":
            return self._entries(body, now)
        if method == "POST" and (m := ADD_VERSION.match(path)):
            data = base64.b64decode(((body.get("payload") or {}).get("data") or ""))
            versions = self.secrets.setdefault(m.group(1), [])
            versions.append(data)
            return {"name": f"{m.group(1)}/versions/{len(versions)}", "state": "ENABLED"}
        raise ApiError(404, "NOT_FOUND", f"no such method: {method} {path}")

    def _operation(self, job: str, verb: str) -> dict:
        parent = job.split("/jobs/")[0]
        return {"name": f"{parent}/operations/{verb}-{uuid.uuid4().hex[:12]}", "done": False,
                "metadata": {"@type": "type.googleapis.com/google.cloud.batch.v1.OperationMetadata",
                             "target": job, "verb": verb}}

    def _create(self, parent: str, job_id: str, body: dict, now: float) -> dict:
        if not JOB_ID.match(job_id):
            raise ApiError(400, "INVALID_ARGUMENT", f"job_id {job_id!r} does not match {JOB_ID.pattern}")
        name = f"{parent}/jobs/{job_id}"
        if name in self.jobs and self.jobs[name].deleted_at is None:
            raise ApiError(409, "ALREADY_EXISTS", f"Job {name} already exists")
        if self.quota_exceeded:
            raise ApiError(429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'GPUs (all regions)' and "
                           "limit 'GPUS-ALL-REGIONS-per-project' of service 'compute.googleapis.com'")
        if not body.get("taskGroups"):
            raise ApiError(400, "INVALID_ARGUMENT", "job.task_groups is required")
        labels = body.get("labels") or {}
        exit_code = self.fail.get(job_id, int(labels.get("fake-exit", "0") or 0))
        job = fakestate.FakeJob(name, body, now, self.step_s, labels.get("fake-run") == "long", exit_code,
                                  self.run_s)
        self.jobs[name] = job
        return job.view(now)

    def _list(self, parent: str, query: dict, now: float) -> dict:
        try:
            match = fakestate.compile_filter((query.get("filter") or [""])[0])
        except ValueError as exc:
            raise ApiError(400, "INVALID_ARGUMENT", str(exc)) from None
        found = [j.view(now) for n, j in sorted(self.jobs.items())
                 if n.startswith(parent + "/jobs/") and not j.gone(now)]
        found = [j for j in found if match(j)]
        size = int((query.get("pageSize") or ["0"])[0]) or 100
        start = int((query.get("pageToken") or ["0"])[0] or 0)
        page = {"jobs": found[start:start + size]}
        if start + size < len(found):
            page["nextPageToken"] = str(start + size)
        return page

    def _entries(self, body: dict, now: float) -> dict:
        """Cloud Logging entries:list: the entries Batch writes for jobs whose uid the filter names."""
        uids = set(re.findall(r'labels\.job_uid\s*=\s*"([^"]+)"', body.get("filter") or ""))
        entries = [e for j in self.jobs.values() if j.uid in uids for e in j.log_entries(now)]
        size = int(body.get("pageSize") or 0) or len(entries)
        if body.get("orderBy", "").endswith("desc"):
            entries.reverse()
        return {"entries": entries[:size]}


def _handler(fake: FakeBatch):
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw.strip() else None
            code, answer = fake.handle(self.command, url.path, parse_qs(url.query), body)
            data = json.dumps(answer).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = _serve

        def log_message(self, *args) -> None:  # quiet
            pass

    return Handler


def task_environment(body: dict, fb: "FakeBatch", index: int, workdir, uid: str) -> dict[str, str]:
    """The environment Batch gives task `index`'s container for this job body (the service's predefined
    variables, the task environment, secrets read from Secret Manager)."""
    group = body["taskGroups"][0]
    env = {"BATCH_TASK_INDEX": str(index), "BATCH_TASK_COUNT": str(group.get("taskCount", "1")),
           "BATCH_TASK_RETRY_ATTEMPT": "0", "BATCH_JOB_UID": uid}
    if group.get("requireHostsFile"):
        hosts = Path(workdir) / f"hosts-{uid}"
        hosts.write_text("".join("127.0.0.1\n" for _ in range(int(group.get("taskCount", 1)))))
        env["BATCH_HOSTS_FILE"] = str(hosts)
    task_env = group["taskSpec"].get("environment") or {}
    env.update(task_env.get("variables") or {})
    env.update({k: fb.secret_value(v) for k, v in (task_env.get("secretVariables") or {}).items()})
    return env
