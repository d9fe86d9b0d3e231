"""The Slurm provider's effects: sbatch, squeue, sacct, scancel, scontrol, sinfo — here or over ssh."""
from __future__ import annotations

import base64
import io
import json
import os
import posixpath
import queue
import tarfile
import threading
import time
from typing import Iterator, Mapping

from jsctl.errors import CapabilityError, ProviderError
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.cluster import Cluster, Facts
from jsctl.model.status import JobHandle, LiveStatus
from jsctl.providers.base import ProviderClient
from jsctl.providers.slurm import inventory, parse
from jsctl.providers.slurm.request import SbatchRequest
from jsctl.providers.slurm.runner import Runner
from jsctl.providers.slurm.settings import SlurmSettings
from jsctl.render import launch

# Unpack jsruntime (a base64 tar.gz on stdin) into $1 unless it is there: a directory named by the
# content hash that exists is complete, because it appears by rename.
STAGE_RUNTIME = ('d=$1; [ -d "$d" ] && exit 0; t="$d.tmp.$$"; mkdir -p "$t" && base64 -d | tar -xzf - -C "$t" '
                 '&& { mv -T "$t" "$d" 2>/dev/null || { rm -rf "$t"; [ -d "$d" ]; }; }')
GONE_CANCEL = ("already completing or completed", "Invalid job id specified", "Job has already finished")


class SlurmClient(ProviderClient):
    provider = "slurm"

    def __init__(self, cluster: Cluster, workspace_dir: str, runner: Runner | None = None) -> None:
        super().__init__(cluster, workspace_dir)
        self.settings = SlurmSettings.of(cluster)
        if self.settings.access.mode == "slurmrestd":
            raise CapabilityError(f"cluster {cluster.name}: access mode slurmrestd is not supported yet",
                                  hint="use access.mode: local (on a login node) or ssh")
        self.runner = runner or Runner(self.settings.access, cwd=workspace_dir)

    # ---- planning ---------------------------------------------------------------------------------
    def probe(self) -> Facts:
        sinfo = self.runner.run(["sinfo", "--json"], timeout_s=30)
        if not sinfo.ok and "json" not in sinfo.stderr.lower() and "unrecognized" not in sinfo.stderr:
            raise ProviderError(f"sinfo failed: {sinfo.error()}")  # the controller, not the option
        try:
            doc = json.loads(sinfo.stdout) if sinfo.ok else {}
        except ValueError:
            doc = {}
        if doc.get("errors") and not doc.get("nodes"):  # 22.05 answers rc 0 when slurmctld is down
            raise ProviderError("sinfo failed: " + "; ".join(str(e.get("error", e)) for e in doc["errors"]),
                                hint="is slurmctld up, and SLURM_CONF (or access.slurm_conf) the right cluster?")
        if not sinfo.ok or "nodes" not in doc:  # a Slurm without (this) JSON output
            sinfo = self.runner.check(["sinfo", "-h", "-N", "-o", inventory.SINFO_TEXT_FORMAT], timeout_s=30)
        parts = self.runner.check(["scontrol", "-o", "show", "partition"], timeout_s=30)
        version = ((doc.get("meta") or {}).get("Slurm") or {}).get("release")
        facts = inventory.facts_from_probe(self.cluster.name, sinfo.stdout, parts.stdout, version)
        settings = json.loads(json.dumps(dict(self.cluster.settings), default=str))
        return Facts(facts.cluster, {**facts.data, "cluster_settings": settings}, facts.warnings)

    def check(self, artifact: RenderedArtifact) -> str:
        """`sbatch --test-only`: where and when the scheduler would start the job, or why it cannot."""
        res = self.runner.run(["sbatch", "--test-only"], input=_script(artifact))
        text = " ".join(line.removeprefix("sbatch: ").strip() for line in res.stderr.splitlines() if line.strip())
        if not res.ok:
            raise ProviderError(f"sbatch --test-only: {text or res.error()}")
        return text

    # ---- apply ------------------------------------------------------------------------------------
    def submit(self, artifact: RenderedArtifact, env: Mapping[str, str],
               upstream: Mapping[str, JobHandle]) -> JobHandle:
        request = artifact.request
        if not isinstance(request, SbatchRequest):
            raise ProviderError(f"{artifact.job_id}: not a Slurm request ({artifact.kind})")
        argv = list(request.argv)
        ids = self._dependency_ids(upstream)
        if ids:
            argv += [f"--dependency=afterok:{':'.join(ids)}", "--kill-on-invalid-dep=yes"]
        secrets = {k: v for k, v in env.items() if k in artifact.secrets}
        missing = [s for s in artifact.secrets if s not in secrets]
        if missing:
            raise ProviderError(f"secret{'s' if len(missing) > 1 else ''} not given to submit: {', '.join(missing)}")
        if request.log_dir:
            self.runner.check(["mkdir", "-p", "--", request.log_dir])
        if request.runtime_dir:
            self._stage_runtime(request.runtime_dir)
        res = self.runner.run(argv, input=_script(artifact), secrets=secrets)
        if not res.ok:
            raise ProviderError(f"sbatch refused {artifact.job_id}: {res.error()}")
        job = res.stdout.strip().splitlines()[-1].split(";")[0] if res.stdout.strip() else ""
        if not job.isdigit():
            raise ProviderError(f"sbatch printed no job id for {artifact.job_id}: {res.stdout!r}")
        return JobHandle("slurm", self.cluster.name, job)

    def _stage_runtime(self, path: str) -> None:
        """Put this jsctl's jsruntime where the script expects it (docs/launch-contract.md)."""
        package = launch.runtime_package()
        if posixpath.basename(path) != package.name:
            raise ProviderError(f"the plan was rendered with {posixpath.basename(path)}, but the jsruntime installed "
                                f"here is {package.name}", hint="jsctl changed since the plan: run jsctl plan again")
        res = self.runner.run(["sh", "-c", STAGE_RUNTIME, "sh", path], input=_archive(package))
        if not res.ok:
            raise ProviderError(f"could not stage jsruntime in {path}: {res.error()}")

    def _dependency_ids(self, upstream: Mapping[str, JobHandle]) -> list[str]:
        """Slurm ids to wait for. Slurm accepts an id it does not know and runs the job anyway, so each
        upstream is checked: finished ones are dropped, failed ones refuse the submit."""
        if not upstream:
            return []
        for address, h in upstream.items():
            if h.provider != "slurm" or h.cluster != self.cluster.name:
                raise ProviderError(f"{address} ({h}) is not on Slurm cluster {self.cluster.name}: "
                                    "Slurm cannot wait for it")
        live = self.refresh(list(upstream.values()))
        ids = []
        for address, h in sorted(upstream.items()):
            s = live.get(h)
            if s is None or s.phase in ("SUCCEEDED", "UNKNOWN"):
                continue  # done (or forgotten by Slurm: an afterok on it would not wait either)
            if s.phase in ("FAILED", "CANCELLED"):
                raise ProviderError(f"upstream {address} ({h}) ended {s.phase}"
                                    + (f" ({s.reason})" if s.reason else "") + "; not submitting its dependents")
            ids.append(h.id)
        return ids

    def adopt(self, artifact: RenderedArtifact) -> JobHandle | None:
        comment = artifact.request.comment if isinstance(artifact.request, SbatchRequest) else None
        found = []
        for jid, job in self._squeue().items():
            if job.get("name") != artifact.job_id or (comment and job.get("comment") != comment):
                continue
            if parse.live_from_squeue(job).phase in ("FAILED", "CANCELLED"):
                continue
            found.append(int(jid))
        return JobHandle("slurm", self.cluster.name, str(max(found))) if found else None

    # ---- status -----------------------------------------------------------------------------------
    def _squeue(self) -> dict[str, Mapping]:
        res = self.runner.check(["squeue", "--json"], timeout_s=30)
        try:
            return parse.squeue_jobs(res.stdout)
        except ValueError as exc:
            raise ProviderError(f"squeue --json printed something that is not JSON: {exc}") from None

    def refresh(self, handles: list[JobHandle]) -> dict[JobHandle, LiveStatus]:
        if not handles:
            return {}
        jobs = self._squeue()
        out: dict[JobHandle, LiveStatus] = {}
        missing = []
        for h in handles:
            job = jobs.get(h.id)
            if job is not None:
                out[h] = parse.live_from_squeue(job)
            else:
                missing.append(h)
        if missing:
            found = self._sacct([h.id for h in missing])
            for h in missing:
                out[h] = found.get(h.id) or LiveStatus(
                    "UNKNOWN", "gone", reason=f"Slurm no longer knows job {h.id} (it left the queue and the "
                    "cluster keeps no accounting)")
        return out

    def _sacct(self, ids: list[str]) -> dict[str, LiveStatus]:
        fields = ",".join(parse.SACCT_FIELDS)
        res = self.runner.run(["sacct", "-X", "-n", "-P", "-j", ",".join(ids), "-o", fields], timeout_s=30)
        if not res.ok:  # no slurmdbd: the job completion log (JobCompType=jobcomp/filetxt) may know
            res = self.runner.run(["sacct", "-c", "-n", "-P", "-j", ",".join(ids), "-o",
                                   "jobid,state,exitcode,start,end,nodelist"], timeout_s=30)
        return parse.live_from_sacct(res.stdout) if res.ok else {}

    # ---- logs -------------------------------------------------------------------------------------
    def _log_path(self, handle: JobHandle, job: Mapping | None) -> str | None:
        if job is not None and job.get("standard_output"):
            path = str(job["standard_output"])
            return path.replace("%j", handle.id).replace("%x", str(job.get("name", ""))).replace("%%", "%")
        roots = self.settings.log_roots(self.workspace_dir)
        if not roots:
            return None
        res = self.runner.run(["find", *roots, "-maxdepth", "1", "-name", f"*-{handle.id}.log"])
        hits = sorted(line for line in res.stdout.splitlines() if line.strip())
        return hits[-1] if hits else None

    def logs(self, handle: JobHandle, node: str | None = None, follow: bool = False,
             tail: int | None = None) -> Iterator[str]:
        job = self._squeue().get(handle.id)
        path = self._log_path(handle, job)
        if path is None:
            raise ProviderError(f"no log found for {handle}", hint="Slurm forgot the job and its log is not "
                                "under shared_dir/logs or .jsctl/slurm-logs")
        index = self._node_index(handle, job, node)
        if not follow:
            res = self.runner.run(["cat", "--", path])
            lines = res.stdout.splitlines(True) if res.ok else []
            if index is not None:
                lines = parse.node_lines(lines, index)
            yield from (lines[-tail:] if tail else [] if tail == 0 else lines)
            return
        yield from self._follow(handle, path, index, tail)

    def _node_index(self, handle: JobHandle, job: Mapping | None, node: str | None) -> int | None:
        """None = every line; else the srun --label index of that node (only multi-node jobs label)."""
        if node is None:
            return None
        nodes = parse.expand_hostlist(job.get("nodes")) if job else ()
        if len(nodes) <= 1 and (node in nodes or node == "0"):
            return None
        if node.isdigit():
            return int(node)
        if node in nodes:
            return nodes.index(node)
        raise ProviderError(f"{handle} has no node {node!r}" + (f" (nodes: {', '.join(nodes)})" if nodes else ""),
                            hint="give a node name or an index (0 = the first node)")

    def _follow(self, handle: JobHandle, path: str, index: int | None, tail: int | None) -> Iterator[str]:
        start = "+1" if tail is None else str(tail)
        proc = self.runner.popen(["tail", "-n", start, "-F", "--", path])
        lines: queue.Queue = queue.Queue()

        def pump() -> None:
            for raw in proc.stdout:  # type: ignore[union-attr]
                lines.put(raw.decode("utf-8", "replace"))
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        quiet_until = None
        next_check = time.monotonic() + 1.0
        try:
            while True:
                try:
                    line = lines.get(timeout=0.2)
                except queue.Empty:
                    line = ""
                if line is None:
                    return
                if line:
                    if index is None:
                        yield line
                    else:
                        yield from parse.node_lines([line], index)
                    continue
                now = time.monotonic()
                if quiet_until is not None and now > quiet_until:
                    return
                if quiet_until is None and now > next_check:
                    next_check = now + 2.0
                    if self.refresh([handle])[handle].terminal:
                        quiet_until = now + 1.0  # let the last lines arrive
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except Exception:  # noqa: BLE001
                proc.kill()

    # ---- lifecycle --------------------------------------------------------------------------------
    def cancel(self, handle: JobHandle) -> None:
        res = self.runner.run(["scancel", handle.id])
        if not res.ok and not any(s in res.stderr for s in GONE_CANCEL):
            raise ProviderError(f"scancel {handle.id} failed: {res.error()}")

    def _live_job(self, handle: JobHandle) -> tuple[Mapping, LiveStatus]:
        job = self._squeue().get(handle.id)
        if job is None:
            raise ProviderError(f"Slurm no longer knows {handle}")
        return job, parse.live_from_squeue(job)

    def pause(self, handle: JobHandle, timeout_s: float = 300.0, force: bool = False) -> int | None:
        """Running: `scontrol suspend` (operators and root only); pending: `scontrol hold`. No checkpoint
        yet (the GPUs stay allocated while suspended): `timeout_s` and `force` do not apply; returns None."""
        job, live = self._live_job(handle)
        if live.phase == "RUNNING":
            self._scontrol(["suspend", handle.id], "suspending a running job needs Slurm operator rights; "
                           "a pending job can be held")
        elif live.phase == "PENDING":
            self._scontrol(["hold", handle.id])
        elif live.phase != "PAUSED":
            raise ProviderError(f"{handle} is {live.phase} ({live.engine_state}): only pending or running jobs pause")
        return None

    def resume(self, handle: JobHandle) -> None:
        """Suspended: `scontrol resume`; held: `scontrol release`; requeued (preempted) and waiting for its
        begin time (Slurm holds a requeued job back for AuthInfo cred_expire, 120 s by default): start it
        in 2 s. Not sooner: a launch in the same second as the requeue's kill finds the job's credential
        revoked, and the job fails."""
        job, live = self._live_job(handle)
        deadline = time.monotonic() + 30
        while live.engine_state == "COMPLETING" and live.restarts and time.monotonic() < deadline:
            time.sleep(0.5)  # the requeue is still stopping the previous run
            job, live = self._live_job(handle)
        word = live.engine_state
        reason = job.get("state_reason")
        if word in ("SUSPENDED", "STOPPED"):
            self._scontrol(["resume", handle.id])
        elif live.phase == "PAUSED" or reason in ("JobHeldUser", "JobHeldAdmin"):
            self._scontrol(["release", handle.id])
        elif live.phase == "PENDING" and reason == "BeginTime":
            self._scontrol(["update", f"JobId={handle.id}", "StartTime=now+2"])
        elif live.phase in ("RUNNING", "PENDING", "PREEMPTED"):
            return
        else:
            raise ProviderError(f"{handle} is {live.phase} ({word}): nothing to resume")

    def _scontrol(self, args: list[str], hint: str | None = None) -> None:
        res = self.runner.run(["scontrol", *args])
        if not res.ok:
            raise ProviderError(f"scontrol {' '.join(args)} failed: {res.error()}", hint=hint)


def _archive(package: launch.RuntimePackage) -> str:
    """The package's files as a base64 tar.gz (text: it travels on stdin, over ssh too)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for rel in package.files:
            with open(os.path.join(package.source, rel), "rb") as fh:
                data = fh.read()
            info = tarfile.TarInfo("jsruntime/" + rel.replace(os.sep, "/"))
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _script(artifact: RenderedArtifact) -> str:
    if not artifact.files:
        raise ProviderError(f"artifact for {artifact.job_id} has no batch script")
    return artifact.files[0][1]
