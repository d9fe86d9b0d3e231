"""Effects of the local provider: start a detached supervisor per run; read what it recorded."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Any, Iterator, Mapping

from jsctl.errors import ProviderError
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.cluster import Facts
from jsctl.model.status import JobHandle, LiveStatus, PauseResult
from jsctl.providers.base import ProviderClient
from jsctl.providers.local import runs


# what a pause after a checkpoint did (the supervisor stopped the workers and waits)
RELEASED = "its workers are stopped (GPUs held: none)"


class LocalClient(ProviderClient):
    provider = "local"

    @property
    def root(self) -> str:
        configured = self.cluster.settings.get("runs_dir")
        return os.path.join(self.workspace_dir, configured) if configured else \
            os.path.join(self.workspace_dir, ".jsctl", "runs")

    def _dir(self, handle_or_id: JobHandle | str) -> str:
        ident = handle_or_id.id if isinstance(handle_or_id, JobHandle) else handle_or_id
        return runs.run_dir(self.root, ident)

    def probe(self) -> Facts:
        """This machine's size, and its worker slots: total, free, and asked for by pending runs
        (every run under this workspace's runs directory; the machine's other users are not counted)."""
        from jsctl.providers.local import max_workers

        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 0
        total = max_workers(self.cluster)
        busy = queued = 0
        for name in os.listdir(self.root) if os.path.isdir(self.root) else ():
            status = runs.read_json(os.path.join(self.root, name, runs.STATUS)) or {}
            request = runs.read_json(os.path.join(self.root, name, runs.REQUEST)) or {}
            workers = int(status.get("workers") or request.get("workers") or 0)
            if status.get("phase") == "RUNNING" or (status.get("phase") == "PAUSED" and not status.get("released")):
                busy += workers
            elif status.get("phase") == "PENDING":
                queued += workers
        return Facts(self.cluster.name, {"cpus": os.cpu_count() or 1, "memory_bytes": memory,
                                         "free_disk_bytes": shutil.disk_usage(self.workspace_dir).free,
                                         "gpus_total": total, "gpus_free": max(total - busy, 0),
                                         "gpus_queued": queued})

    def adopt(self, artifact: RenderedArtifact) -> JobHandle | None:
        directory = self._dir(artifact.job_id)
        if os.path.exists(os.path.join(directory, runs.STATUS)):
            return JobHandle("local", self.cluster.name, artifact.job_id)
        return None

    def submit(self, artifact: RenderedArtifact, env: Mapping[str, str],
               upstream: Mapping[str, JobHandle]) -> JobHandle:
        directory = self._dir(artifact.job_id)
        if os.path.exists(directory):  # a run that never started properly: start over
            shutil.rmtree(directory)
        os.makedirs(directory)
        for name, content in artifact.files:
            with open(os.path.join(directory, name), "w", encoding="utf-8") as fh:
                fh.write(content)
        runs.write_json(os.path.join(directory, runs.STATUS),
                        {"phase": "PENDING", "engine_state": "submitted", "submitted_at": time.time()})
        child_env = dict(os.environ)
        child_env.update(env)  # secret values: in the process environment only
        with open(os.path.join(directory, runs.SUPERVISOR_LOG), "ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", "jsctl.providers.local.supervisor", directory],
                                    env=child_env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    start_new_session=True, close_fds=True)
        with open(os.path.join(directory, runs.PID), "w", encoding="ascii") as fh:
            fh.write(str(proc.pid))
        return JobHandle("local", self.cluster.name, artifact.job_id)

    def refresh(self, handles: list[JobHandle]) -> dict[JobHandle, LiveStatus]:
        return {h: self._status(h) for h in handles}

    def artifact_files(self, handle: JobHandle, recorded: Mapping[str, Any]) -> dict[str, str]:
        """The files as submit wrote them into the run directory."""
        out: dict[str, str] = {}
        for name, _ in recorded.get("files") or ():
            if not isinstance(name, str) or os.sep in name or name in ("", ".", ".."):
                continue
            try:
                with open(os.path.join(self._dir(handle), name), encoding="utf-8") as fh:
                    out[name] = fh.read()
            except (OSError, UnicodeDecodeError):
                continue
        return out

    def _status(self, handle: JobHandle) -> LiveStatus:
        status = runs.read_json(os.path.join(self._dir(handle), runs.STATUS))
        if status is None:
            return LiveStatus("UNKNOWN", "missing", f"run directory {self._dir(handle)} is gone")
        phase = status.get("phase", "UNKNOWN")
        reason = status.get("reason")
        if phase in ("PENDING", "RUNNING", "PAUSED") and not runs.pid_alive(self._supervisor(handle, status)):
            time.sleep(0.05)  # it may be writing its last word
            status = runs.read_json(os.path.join(self._dir(handle), runs.STATUS)) or status
            phase = status.get("phase", "UNKNOWN")
            if phase in ("PENDING", "RUNNING", "PAUSED") and not runs.pid_alive(self._supervisor(handle, status)):
                phase, reason = "FAILED", "the supervisor process died (machine restarted or killed)"
        if phase == "PAUSED" and reason is None:
            reason = (f"PAUSED at step {status.get('paused_step')}; GPUs held: none" if status.get("released") else
                      "PAUSED in place (SIGSTOP, no checkpoint); GPUs held: all of its workers")
        return LiveStatus(phase, status.get("engine_state", ""), reason, status.get("started_at"),
                          status.get("ended_at"), status.get("exit_code"),
                          int(status.get("restarts", 0)) + int(status.get("requeues", 0)), ("local",))

    def _supervisor(self, handle: JobHandle, status: dict) -> int | None:
        if status.get("supervisor_pid"):
            return int(status["supervisor_pid"])
        try:
            with open(os.path.join(self._dir(handle), runs.PID), encoding="ascii") as fh:
                return int(fh.read().strip() or 0)
        except (OSError, ValueError):
            return None

    def logs(self, handle: JobHandle, node: str | None = None, follow: bool = False,
             tail: int | None = None) -> Iterator[str]:
        if node not in (None, "local", "0"):
            raise ProviderError(f"the local provider has one node, 'local'; there is no node {node!r}")
        path = os.path.join(self._dir(handle), runs.LOG)
        deadline_quiet = None
        while not os.path.exists(path):
            if not follow or self._status(handle).terminal:
                return
            time.sleep(0.2)
        with open(path, "rb") as fh:
            if tail is not None:
                lines = fh.read().decode("utf-8", "replace").splitlines(True)
                yield from lines[-tail:] if tail else []
            else:
                for raw in fh:
                    yield raw.decode("utf-8", "replace")
            if not follow:
                return
            buffer = b""
            while True:
                chunk = fh.readline()
                if chunk:
                    buffer += chunk
                    if buffer.endswith(b"\n"):
                        yield buffer.decode("utf-8", "replace")
                        buffer = b""
                    continue
                if self._status(handle).terminal:
                    deadline_quiet = deadline_quiet or time.time() + 0.5
                    if time.time() > deadline_quiet:
                        if buffer:
                            yield buffer.decode("utf-8", "replace")
                        return
                time.sleep(0.2)

    def cancel(self, handle: JobHandle) -> None:
        directory = self._dir(handle)
        status = runs.read_json(os.path.join(directory, runs.STATUS))
        if status is None or status.get("phase") in ("SUCCEEDED", "FAILED", "CANCELLED"):
            return
        open(os.path.join(directory, runs.CANCEL), "w").close()
        sup = self._supervisor(handle, status)
        if runs.pid_alive(sup):
            os.kill(int(sup), signal.SIGTERM)
            for _ in range(150):
                if not runs.pid_alive(sup):
                    return
                time.sleep(0.1)
        runs.kill_all(directory, signal.SIGKILL)  # the supervisor is gone: stop the job ourselves
        status.update(phase="CANCELLED", engine_state="cancelled", reason="stopped by jsctl stop",
                      ended_at=time.time())
        runs.write_json(os.path.join(directory, runs.STATUS), status)

    def _signal_group(self, handle: JobHandle, sig: int) -> dict:
        directory = self._dir(handle)
        status = runs.read_json(os.path.join(directory, runs.STATUS)) or {}
        pgid = status.get("child_pgid")
        if status.get("phase") not in ("RUNNING", "PAUSED") or not pgid:
            raise ProviderError(f"{handle} is not running (phase {status.get('phase', 'UNKNOWN')})")
        os.killpg(int(pgid), sig)
        return status

    def _restartable(self, handle: JobHandle, what: str) -> tuple[str, dict]:
        """The run directory and status of a running job that can checkpoint and restart (through
        jsruntime's launcher under torchrun), else a ProviderError saying why not."""
        directory = self._dir(handle)
        request = runs.read_json(os.path.join(directory, runs.REQUEST)) or {}
        argv = request.get("argv") or []
        if argv[:3] != ["python", "-m", "jsruntime.launch"]:
            raise ProviderError(f"{handle} is not launched by torchrun through jsruntime, so it cannot checkpoint "
                                f"and restart {what}", hint="set strategy.launcher: torchrun")
        status = runs.read_json(os.path.join(directory, runs.STATUS)) or {}
        if status.get("phase") != "RUNNING" or not status.get("child_pgid"):
            raise ProviderError(f"{handle} is not running (phase {status.get('phase', 'UNKNOWN')})")
        return directory, status

    def scale(self, handle: JobHandle, gpus: int) -> None:
        """Checkpoint (SIGUSR1 → jsruntime saves and exits 75), then restart on `gpus` workers.

        The job resumes from that checkpoint on the new world size (jsruntime reshards)."""
        from jsctl.providers.local import max_workers

        limit = max_workers(self.cluster)
        directory, status = self._restartable(handle, "on another shape")
        if gpus > limit:
            raise ProviderError(f"this machine runs at most {limit} workers (max_workers); asked for {gpus}")
        runs.write_json(os.path.join(directory, runs.SCALE), {"workers": gpus})
        os.kill(int(status["child_pgid"]), signal.SIGUSR1)  # the launcher: it forwards to torchrun and workers

    def tune(self, handle: JobHandle, strategy: Mapping[str, Any]) -> None:
        """Checkpoint (SIGUSR1), then restart with `strategy` in JETSTREAM_STRATEGY; the job restores
        the checkpoint under the new strategy (DCP reshards DDP <-> FSDP2)."""
        directory, status = self._restartable(handle, "under another strategy")
        runs.write_json(os.path.join(directory, runs.STRATEGY), {"strategy": dict(strategy)})
        os.kill(int(status["child_pgid"]), signal.SIGUSR1)

    def memory_per_worker(self, placement: Mapping[str, Any]) -> int | None:
        """`memory_per_worker` from the cluster's settings, else this machine's memory shared by the workers."""
        from jsctl.config.quantities import parse_bytes

        configured = self.cluster.settings.get("memory_per_worker")
        if configured:
            return parse_bytes(configured)
        memory = int(self.probe().data.get("memory_bytes") or 0)
        workers = max(int(placement.get("nodes") or 1) * int(placement.get("gpus_per_node") or 1), 1)
        return memory // workers or None

    def pause(self, handle: JobHandle, timeout_s: float = 300.0, force: bool = False) -> PauseResult:
        """Checkpoint (SIGUSR1 → jsruntime saves and exits 75), then the supervisor stops the workers and
        waits, PAUSED, holding no workers, until `resume`. Returns the checkpoint step. A job without a
        checkpoint directory is refused; with `force` it is stopped in place (SIGSTOP: it keeps its memory
        and its workers, and loses nothing unless stopped) without a step."""
        directory = self._dir(handle)
        request = runs.read_json(os.path.join(directory, runs.REQUEST)) or {}
        status = runs.read_json(os.path.join(directory, runs.STATUS)) or {}
        if status.get("phase") == "PAUSED":
            return PauseResult(status.get("paused_step"), "it was already paused; " +
                               (RELEASED if status.get("released") else "its processes are stopped in place "
                                "(SIGSTOP) and keep their memory and GPUs"))
        if not (request.get("env") or {}).get("JETSTREAM_CHECKPOINT_DIR"):
            if not force:
                raise ProviderError(f"{handle} writes no checkpoints (no checkpoint output in its spec), so pausing "
                                    "it would lose its progress",
                                    hint="declare a checkpoint output, or pass --force to stop its processes in "
                                         "place (SIGSTOP: they keep their memory and workers until jsctl resume)")
            status = self._signal_group(handle, signal.SIGSTOP)
            status.update(phase="PAUSED", engine_state="stopped (SIGSTOP)", paused_step=None, released=False)
            runs.write_json(os.path.join(directory, runs.STATUS), status)
            return PauseResult(None, "without a checkpoint (--force), its processes are stopped in place (SIGSTOP) "
                                     "and keep their memory and GPUs; nothing is lost unless it is stopped before "
                                     "jsctl resume")
        if status.get("phase") != "RUNNING" or not status.get("child_pgid"):
            raise ProviderError(f"{handle} is not running (phase {status.get('phase', 'UNKNOWN')})")
        marker = os.path.join(directory, runs.PAUSE)
        open(marker, "w").close()
        try:
            os.killpg(int(status["child_pgid"]), signal.SIGUSR1)  # the launcher forwards it to torchrun and workers
        except ProcessLookupError:
            pass
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            status = runs.read_json(os.path.join(directory, runs.STATUS)) or {}
            if status.get("phase") == "PAUSED":
                step = status.get("paused_step")
                return PauseResult(step, RELEASED if step is not None else RELEASED + "; the job reported no "
                                   "checkpoint step")
            if status.get("phase") in ("SUCCEEDED", "FAILED", "CANCELLED"):
                break
            time.sleep(0.2)
        try:
            os.unlink(marker)  # a checkpoint that completes later requeues and continues, as a preemption does
        except FileNotFoundError:
            pass
        status = runs.read_json(os.path.join(directory, runs.STATUS)) or {}
        if status.get("phase") in ("SUCCEEDED", "FAILED", "CANCELLED"):
            raise ProviderError(f"{handle} ended ({status.get('phase')}) before it paused")
        raise ProviderError(f"{handle} did not complete a checkpoint within {timeout_s:g}s: not paused, it keeps "
                            "running", hint="give it longer with --timeout (a checkpoint that completes later "
                                                "restarts it from that checkpoint, as a preemption does)")

    def resume(self, handle: JobHandle) -> None:
        directory = self._dir(handle)
        status = runs.read_json(os.path.join(directory, runs.STATUS)) or {}
        if status.get("phase") == "PAUSED" and status.get("released"):
            try:  # the supervisor starts the workers again; jsruntime restores the checkpoint
                os.unlink(os.path.join(directory, runs.PAUSE))
            except FileNotFoundError:
                pass
            for _ in range(50):
                if (runs.read_json(os.path.join(directory, runs.STATUS)) or {}).get("phase") != "PAUSED":
                    return
                time.sleep(0.1)
            return
        status = self._signal_group(handle, signal.SIGCONT)
        status.update(phase="RUNNING", engine_state="running")
        runs.write_json(os.path.join(directory, runs.STATUS), status)
