"""A small Azure ML service for the tests: answers the REST calls jsctl's azure-ml client makes, as the
service documents them, and records every request (method, path, query, JSON body).

- ARM (api-version required, a bearer token required): `PUT .../environments/{n}/versions/{v}`,
  `PUT/GET .../jobs/{name}`, `GET .../jobs?tag=KEY&listViewType=All` (paged: `nextLink`),
  `POST .../jobs/{name}/cancel` (202), `GET .../computes/{name}`.
- Run history: `GET /history/v1.0/.../experiments/{e}/runs/{name}/details` → `logFiles`, each a URL
  on this server; the text says that nothing ran (this service runs no process).
- Key Vault (`/vault/secrets/{name}`, api-version 7.4, PUT/GET) and a managed-identity endpoint
  (`/identity`, as IDENTITY_ENDPOINT answers a job) for the secrets design.

It runs nothing: a job moves Queued → Running → Completed by the clock (`queued_s`, `run_s`), stays
Running with the tag `fakeaml.run: long`, ends Failed with `fakeaml.result: Failed` (or when its name is
in `fail`); a cancel moves it to CancelRequested, then Canceled. `quota_exceeded` makes job PUTs
answer 400 QuotaExceeded.
"""
from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

WS = r"/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)/providers/Microsoft.MachineLearningServices/" \
     r"workspaces/(?P<ws>[^/]+)"
ROUTES = [(m, re.compile(p + "$")) for m, p in (
    ("env", WS + r"/environments/(?P<name>[^/]+)/versions/(?P<version>[^/]+)"),
    ("jobs", WS + r"/jobs"), ("job", WS + r"/jobs/(?P<name>[^/]+)"), ("cancel", WS + r"/jobs/(?P<name>[^/]+)/cancel"),
    ("compute", WS + r"/computes/(?P<name>[^/]+)"),
    ("details", r"/history/v1\.0" + WS + r"/experiments/(?P<exp>[^/]+)/runs/(?P<name>[^/]+)/details"),
    ("logfile", r"/fakeaml-logs/(?P<ws>[^/]+)/(?P<name>[^/]+)/(?P<file>.+)"),
    ("secret", r"/vault/secrets/(?P<name>[^/]+)"), ("identity", r"/identity"))]


class FakeAml:
    def __init__(self, queued_s: float = 0.3, run_s: float = 1.5, page_size: int = 50) -> None:
        self.queued_s, self.run_s, self.page_size = queued_s, run_s, page_size
        self.requests: list[dict] = []
        self.jobs: dict[tuple[str, str], dict] = {}  # (workspace, name) → {"body", "created", "cancelled"}
        self.environments: dict[str, dict] = {}
        self.vault: dict[str, str] = {}  # in memory only
        self.fail: set[str] = set()
        self.quota_exceeded = False
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ---- the clock ---------------------------------------------------------------------------------
    def status(self, job: dict) -> str:
        now = time.monotonic()
        if job["cancelled"] is not None:
            return "CancelRequested" if now - job["cancelled"] < 0.2 else "Canceled"
        tags = job["body"]["properties"].get("tags") or {}
        age = now - job["created"]
        if age < self.queued_s:
            return "Queued"
        if tags.get("fakeaml.run") == "long" or age < self.queued_s + self.run_s:
            return "Running"
        failed = tags.get("fakeaml.result") == "Failed" or job["name"] in self.fail
        return "Failed" if failed else "Completed"

    def resource(self, ws_id: str, job: dict) -> dict:
        props = {**job["body"]["properties"], "status": self.status(job),
                 "services": {"Studio": {"endpoint": f"{self.url}/studio/{job['name']}"}}}
        return {"id": f"{ws_id}/jobs/{job['name']}", "name": job["name"],
                "type": "Microsoft.MachineLearningServices/workspaces/jobs", "properties": props,
                "systemData": {"createdAt": "2026-12-01T00:00:00Z", "createdBy": "jsctl"}}

    def job_requests(self, method: str = "PUT") -> list[dict]:
        return [r for r in self.requests if r["method"] == method and "/jobs/" in r["path"]]

    # ---- the answers -------------------------------------------------------------------------------
    def answer(self, method: str, path: str, query: dict, body, headers) -> tuple[int, object, dict]:
        route, m = next(((r, p.match(path)) for r, p in ROUTES if p.match(path)), (None, None))
        if route is None:
            return 404, _error("NotFound", f"no such resource: {path}"), {}
        g = m.groupdict()
        if route in ("env", "jobs", "job", "cancel", "compute", "details"):
            if not (headers.get("Authorization") or "").startswith("Bearer "):
                return 401, _error("AuthenticationFailed", "no bearer token"), {}
            if route != "details" and "api-version" not in query:
                return 400, _error("MissingApiVersionParameter", "the api-version query parameter is required"), {}
        ws_id = path.split("/jobs")[0].split("/environments")[0].split("/computes")[0]
        key = (g.get("ws"), g.get("name"))
        with self.lock:
            if route == "env" and method == "PUT":
                self.environments[path] = body
                return 201, {"id": path, "name": g["version"], "properties": body["properties"]}, {}
            if route == "job" and method == "PUT":
                if self.quota_exceeded:
                    return 400, _error("QuotaExceeded", "Not enough quota available for Standard_ND96amsr_A100_v4 "
                                       "in subscription: requested 384 cores, 0 available"), {}
                if key in self.jobs:
                    return 400, _error("UserError", f"Job {g['name']} already exists; its properties cannot "
                                       "change (only tags, description and display name)"), {}
                self.jobs[key] = {"name": g["name"], "body": body, "created": time.monotonic(), "cancelled": None}
                return 201, self.resource(ws_id, self.jobs[key]), {}
            if route == "job" and method == "GET":
                job = self.jobs.get(key)
                return (200, self.resource(ws_id, job), {}) if job else \
                    (404, _error("ResourceNotFound", f"job {g['name']} not found"), {})
            if route == "jobs" and method == "GET":
                tag = query.get("tag")
                found = [self.resource(ws_id, j) for (ws, _), j in sorted(self.jobs.items()) if ws == g["ws"]
                         and (tag is None or tag in (j["body"]["properties"].get("tags") or {}))]
                skip = int(query.get("$skipToken") or 0)
                page = {"value": found[skip:skip + self.page_size]}
                if skip + self.page_size < len(found):
                    page["nextLink"] = f"{self.url}{path}?" + urlencode({**query, "$skipToken": skip + self.page_size})
                return 200, page, {}
            if route == "cancel" and method == "POST":
                job = self.jobs.get(key)
                if job is None:
                    return 404, _error("ResourceNotFound", f"job {g['name']} not found"), {}
                if self.status(job) in ("Completed", "Failed", "Canceled"):
                    return 400, _error("UserError", f"job {g['name']} has ended"), {}
                job["cancelled"] = job["cancelled"] or time.monotonic()
                return 202, None, {"Location": f"{self.url}/operations/cancel-{g['name']}"}
            if route == "compute" and method == "GET":
                return 200, {"id": path, "name": g["name"], "properties": {
                    "computeType": "AmlCompute", "provisioningState": "Succeeded",
                    "properties": {"scaleSettings": {"minNodeCount": 0, "maxNodeCount": 16}}}}, {}
            if route == "details":
                job = self.jobs.get(key)
                if job is None:
                    return 404, _error("RunNotFound", f"run {g['name']} not found"), {}
                nodes = job["body"]["properties"]["resources"]["instanceCount"]
                files = {f"user_logs/std_log_process_{n}.txt": f"{self.url}/fakeaml-logs/{g['ws']}/{g['name']}/{n}"
                         for n in range(nodes)}
                return 200, {"runId": g["name"], "status": self.status(job), "logFiles": files}, {}
            if route == "logfile":
                return 200, f"fakeaml runs no process: process {g['file']} of run {g['name']} printed nothing\n", {}
            if route == "identity":
                return 200, {"access_token": "fake-vault-token", "expires_on": "4102444800"}, {}
            if route == "secret" and method == "PUT":
                self.vault[g["name"]] = body["value"]
                return 200, {"id": f"{self.url}/vault/secrets/{g['name']}/1", "attributes": {"enabled": True}}, {}
            if route == "secret" and method == "GET":
                if headers.get("Authorization") != "Bearer fake-vault-token":
                    return 401, _error("Unauthorized", "the identity endpoint's token is required"), {}
                if g["name"] not in self.vault:
                    return 404, _error("SecretNotFound", f"secret {g['name']} not found"), {}
                return 200, {"value": self.vault[g["name"]], "id": f"{self.url}/vault/secrets/{g['name']}/1"}, {}
        return 405, _error("MethodNotAllowed", f"{method} {path}"), {}

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                url = urlparse(self.path)
                query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                with fake.lock:
                    fake.requests.append({"method": self.command, "path": url.path, "query": query, "body": body,
                                          "t": time.monotonic()})
                code, answer, headers = fake.answer(self.command, url.path, query, body, self.headers)
                data = b"" if answer is None else (answer.encode() if isinstance(answer, str)
                                                   else json.dumps(answer).encode())
                self.send_response(code)
                self.send_header("Content-Type", "text/plain" if isinstance(answer, str) else "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = _serve

            def log_message(self, *args) -> None:  # quiet
                pass

        return Handler


def _error(code: str, message: str) -> dict:
    return {"error": {"code": code, "message": message}}
