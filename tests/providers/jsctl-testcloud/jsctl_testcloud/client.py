"""The service's API, as a jsctl client: submit, one batched describe, cancel, adopt, logs."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from typing import Iterator, Mapping

from jsctl.errors import ProviderError
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.cluster import Facts
from jsctl.model.status import JobHandle, LiveStatus
from jsctl.providers.base import ProviderClient
from jsctl_testcloud import NAME
from jsctl_testcloud.engine import LOG, STATUS, SUBMITTED, read_json, write_json

ACTIVE = ("PENDING", "RUNNING")


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (our own child not yet reaped) is not alive
        with open(f"/proc/{int(pid)}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def _runs(pid: int, ident: str) -> bool:
    """Is `pid` a node process of job `ident` (its environment says so)?"""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return f"TESTCLOUD_JOB_ID={ident}".encode() in fh.read().split(b"\0")
    except OSError:
        return False


class TestCloudClient(ProviderClient):
    __test__ = False
    provider = NAME

    @property
    def root(self) -> str:
        return os.path.join(self.workspace_dir, str(self.cluster.settings.get("root") or ".testcloud"))

    @property
    def jobs(self) -> str:
        return os.path.join(self.root, "jobs")

    def _dir(self, ident: str) -> str:
        if not ident or "/" in ident or ident.startswith("."):
            raise ProviderError(f"testcloud: not a job id: {ident!r}")
        return os.path.join(self.jobs, ident)

    def probe(self) -> Facts:
        return Facts(self.cluster.name, {"root": self.root, "jobs": len(os.listdir(self.jobs))
                                         if os.path.isdir(self.jobs) else 0})

    # ---- SubmitJob ---------------------------------------------------------------------------------
    def submit(self, artifact: RenderedArtifact, env: Mapping[str, str],
               upstream: Mapping[str, JobHandle]) -> JobHandle:
        request = artifact.request.to_dict()
        missing = [s for s in request.get("secrets") or () if s not in env]
        if missing:
            raise ProviderError(f"secret{'s' if len(missing) > 1 else ''} not given to submit: {', '.join(missing)}")
        ident = f"{artifact.job_id}.{uuid.uuid4().hex[:8]}"  # the service names its jobs; adopt finds them by name
        directory = self._dir(ident)
        os.makedirs(directory)
        for name, content in artifact.files:
            with open(os.path.join(directory, name), "w", encoding="utf-8") as fh:
                fh.write(content)
        write_json(os.path.join(directory, STATUS), {"phase": "PENDING", "state": "SUBMITTED",
                                                     "submitted_at": time.time()})
        write_json(os.path.join(directory, SUBMITTED),  # exactly what was sent, as the service stores it
                   {"kind": artifact.kind, "job_id": artifact.job_id, "files": [list(f) for f in artifact.files],
                    "request": request, "upstream": {a: str(h) for a, h in sorted(upstream.items())}})
        child_env = {**os.environ, **{k: env[k] for k in request.get("secrets") or ()}}
        with open(os.path.join(directory, "engine.log"), "ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", "jsctl_testcloud.engine", directory], env=child_env,
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                    close_fds=True)
        with open(os.path.join(directory, "engine.pid"), "w", encoding="ascii") as fh:
            fh.write(str(proc.pid))
        return JobHandle(NAME, self.cluster.name, ident)

    def adopt(self, artifact: RenderedArtifact) -> JobHandle | None:
        """ListJobs(name=job_id): the newest job of that name that is not finished badly."""
        found = []
        for ident in sorted(os.listdir(self.jobs)) if os.path.isdir(self.jobs) else ():
            if not ident.startswith(f"{artifact.job_id}."):
                continue
            sent = read_json(os.path.join(self.jobs, ident, SUBMITTED))
            if sent is None or sent.get("job_id") != artifact.job_id:
                continue
            status = self._describe([ident])[ident]
            if status.phase in ("FAILED", "CANCELLED"):
                continue
            found.append((os.path.getmtime(os.path.join(self.jobs, ident, SUBMITTED)), ident))
        return JobHandle(NAME, self.cluster.name, max(found)[1]) if found else None

    # ---- DescribeJobs ------------------------------------------------------------------------------
    def refresh(self, handles: list[JobHandle]) -> dict[JobHandle, LiveStatus]:
        answers = self._describe([h.id for h in handles])
        return {h: answers[h.id] for h in handles}

    def _describe(self, idents: list[str]) -> dict[str, LiveStatus]:
        """One call for many jobs: reads each job's status file once."""
        out = {}
        for ident in idents:
            try:
                directory = self._dir(ident)
            except ProviderError:
                directory = None
            status = read_json(os.path.join(directory, STATUS)) if directory else None
            if status is None:
                out[ident] = LiveStatus("UNKNOWN", "NOT_FOUND", f"testcloud has no job {ident}")
                continue
            phase = status.get("phase", "UNKNOWN")
            reason = status.get("reason")
            if phase in ACTIVE and not _alive(status.get("engine_pid") or self._engine_pid(directory)):
                time.sleep(0.05)  # it may be writing its last word
                status = read_json(os.path.join(directory, STATUS)) or status
                phase = status.get("phase", "UNKNOWN")
                if phase in ACTIVE and not _alive(status.get("engine_pid") or self._engine_pid(directory)):
                    phase, reason = "FAILED", "the service's worker died"
            out[ident] = LiveStatus(phase, status.get("state", ""), reason, status.get("started_at"),
                                    status.get("ended_at"), status.get("exit_code"), 0, ("node-0",))
        return out

    @staticmethod
    def _engine_pid(directory: str) -> int | None:
        try:
            with open(os.path.join(directory, "engine.pid"), encoding="ascii") as fh:
                return int(fh.read().strip() or 0)
        except (OSError, ValueError):
            return None

    # ---- GetLogs, CancelJob ------------------------------------------------------------------------
    def logs(self, handle: JobHandle, node: str | None = None, follow: bool = False,
             tail: int | None = None) -> Iterator[str]:
        path = os.path.join(self._dir(handle.id), LOG)
        while follow and not os.path.exists(path) and not self._describe([handle.id])[handle.id].terminal:
            time.sleep(0.2)
        if not os.path.exists(path):
            return
        while True:
            with open(path, "rb") as fh:
                lines = fh.read().decode("utf-8", "replace").splitlines(True)
            if not follow or self._describe([handle.id])[handle.id].terminal:
                yield from (lines[-tail:] if tail else [] if tail == 0 else lines)
                return
            time.sleep(0.2)

    def cancel(self, handle: JobHandle) -> None:
        directory = self._dir(handle.id)
        status = read_json(os.path.join(directory, STATUS))
        if status is None or status.get("phase") not in ACTIVE:
            return  # unknown or finished: nothing to do (idempotent)
        pid = status.get("engine_pid") or self._engine_pid(directory)
        if _alive(pid):
            os.kill(int(pid), signal.SIGTERM)
            for _ in range(100):
                if not _alive(pid):
                    return
                time.sleep(0.1)
            os.killpg(int(pid), signal.SIGKILL)
        for pgid in status.get("pgids") or ():  # the worker is gone: end the nodes' process groups ourselves
            if _runs(int(pgid), handle.id):  # (a pid the kernel has given to another process is not ours)
                try:
                    os.killpg(int(pgid), signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        status = read_json(os.path.join(directory, STATUS)) or status
        if status.get("phase") in ACTIVE:
            status.update(phase="CANCELLED", state="CANCELLED", reason="cancelled by request", ended_at=time.time())
            write_json(os.path.join(directory, STATUS), status)
