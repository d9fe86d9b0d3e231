"""The Slurm provider's effects: sbatch, squeue, sacct, scancel, scontrol, sinfo — here or over ssh."""
from __future__ import annotations

import base64
import dataclasses
import io
import json
import os
import posixpath
import queue
import tarfile
import threading
import time
from typing import Any, Iterator, Mapping

from jsctl.errors import CapabilityError, ProviderError
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.cluster import Cluster, Facts
from jsctl.model.status import JobHandle, LiveStatus, PauseResult
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
# In a script that follows its allocation's shape (script.py): what `scale` changes while the job is held.
SHAPE_FROM_ALLOCATION = 'export SLURM_GPUS_PER_NODE="${SLURM_GPUS_ON_NODE:-'
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
        self._queue_at_adopt: dict[str, Mapping] | None = None  # adopt's one squeue (see adopt)
        self._submitted: dict[tuple[str, str | None], int] = {}  # (job name, comment) -> id, submitted here

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
        self._submitted[(artifact.job_id, request.comment or None)] = int(job)  # adopt finds it (see adopt)
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
        """The newest live job of this name and comment. One `squeue` per apply, not one per job (a
        client serves one apply; Slurm's answer grows with its queue): the queue as the first adopt
        saw it holds every job an earlier, interrupted apply submitted, and the jobs submitted
        through this client since are remembered as they are submitted (and forgotten when it
        cancels them), so that none is ever submitted twice."""
        comment = artifact.request.comment if isinstance(artifact.request, SbatchRequest) else None
        if self._queue_at_adopt is None:
            self._queue_at_adopt = self._squeue()
        found = [jid for (name, c), jid in self._submitted.items() if name == artifact.job_id
                 and (not comment or c == comment)]
        for jid, job in self._queue_at_adopt.items():
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
                out[h] = self._with_pause_detail(h, job, parse.live_from_squeue(job))
            else:
                missing.append(h)
        if missing:
            found = self._sacct([h.id for h in missing])
            for h in missing:
                out[h] = found.get(h.id) or LiveStatus(
                    "UNKNOWN", "gone", reason=f"Slurm no longer knows job {h.id} (it left the queue and the "
                    "cluster keeps no accounting)")
        return out

    def _with_pause_detail(self, handle: JobHandle, job: Mapping, live: LiveStatus) -> LiveStatus:
        """A paused job's reason says what it holds: a held job (in the queue) none of its GPUs, with the
        checkpoint step it restores from; a suspended one all of them."""
        if live.phase != "PAUSED":
            return live
        if live.engine_state == "PENDING":
            step = self._paused_step(handle, job) if live.restarts else None
            what = (f"PAUSED at checkpoint step {step}, held in the queue" if step is not None else
                    "held in the queue")
            return dataclasses.replace(live, reason=f"{what} (jsctl resume releases it); GPUs held: none",
                                       step=step, started_at=None, nodes=())  # Slurm's start_time: the next run's
        return dataclasses.replace(live, reason=(live.reason + "; " if live.reason else "")
                                   + "suspended in place; GPUs held: all of its allocation")

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
        if self._queue_at_adopt is not None:
            self._queue_at_adopt.pop(handle.id, None)
        self._submitted = {k: jid for k, jid in self._submitted.items() if str(jid) != handle.id}
        res = self.runner.run(["scancel", handle.id])
        if not res.ok and not any(s in res.stderr for s in GONE_CANCEL):
            raise ProviderError(f"scancel {handle.id} failed: {res.error()}")

    def _live_job(self, handle: JobHandle) -> tuple[Mapping, LiveStatus]:
        job = self._squeue().get(handle.id)
        if job is None:
            raise ProviderError(f"Slurm no longer knows {handle}")
        return job, parse.live_from_squeue(job)

    def pause(self, handle: JobHandle, timeout_s: float = 300.0, force: bool = False) -> PauseResult:
        """Running with checkpoints: SIGUSR1 to the batch script (the preemption path: it forwards the signal,
        jsruntime saves and exits 75), wait up to `timeout_s` for the checkpoint, then `scontrol requeuehold`:
        the job leaves its nodes and waits, held, in the queue. Returns the checkpoint step. Without
        checkpoints: refused, unless `force` (requeued and held all the same: it starts over on resume).
        Pending: `scontrol uhold` (nothing to checkpoint, nothing allocated); no step."""
        job, live = self._live_job(handle)
        if live.phase == "PAUSED":
            if live.engine_state == "PENDING":
                return PauseResult(self._paused_step(handle, job), "it was already paused, held in the queue "
                                                                   "(GPUs held: none)")
            return PauseResult(None, f"it was already paused (Slurm: {live.engine_state})")
        if live.phase == "PENDING":
            self._scontrol(["uhold", handle.id])
            return PauseResult(None, "it had not started, so it is held in the queue (GPUs held: none) until "
                                     "jsctl resume")
        if live.phase != "RUNNING" or live.engine_state != "RUNNING":
            raise ProviderError(f"{handle} is {live.phase} ({live.engine_state}): only pending or running jobs pause")
        if not self._checkpoints(handle):
            if not force:
                raise ProviderError(
                    f"{handle} writes no checkpoints (no checkpoint output in its spec), so pausing it would lose "
                    "its progress", hint="declare a checkpoint output, or pass --force to requeue and hold it anyway "
                    "(it frees its GPUs and starts over from the beginning on jsctl resume)")
            self._hold_requeued(handle, 30.0)
            return PauseResult(None, "without a checkpoint (--force), it was requeued and held (GPUs held: none) "
                                     "and its progress is lost: jsctl resume starts it over from the beginning")
        seen = len(self._preempt_exits(handle, job))
        res = self.runner.run(["scancel", "--batch", "--signal=USR1", handle.id])
        if not res.ok:
            raise ProviderError(f"could not signal {handle} to checkpoint: {res.error()}")
        deadline = time.monotonic() + timeout_s
        step = None
        while step is None:
            exits = self._preempt_exits(handle, job)
            if len(exits) > seen:
                step = exits[-1]
                break
            now = self.refresh([handle])[handle]
            if now.terminal:
                raise ProviderError(f"{handle} ended ({now.phase}) before it paused")
            if time.monotonic() > deadline:
                raise ProviderError(
                    f"{handle} did not complete a checkpoint within {timeout_s:g}s: not paused, it keeps running",
                    hint="give it longer with --timeout (a checkpoint that completes later requeues the job, which "
                         "then continues from it, as after a preemption)")
            time.sleep(0.5)
        self._hold_requeued(handle, 60.0)
        return PauseResult(step, "its workers are stopped and it waits, held, in the queue (GPUs held: none)")

    def _hold_requeued(self, handle: JobHandle, timeout_s: float) -> None:
        """Requeue the job held (`scontrol requeuehold`): it leaves its nodes and waits in the queue. After a
        checkpoint, the batch script may have requeued itself first (its preemption path, once the step
        exited): then that requeued job is held (`scontrol uhold`). Not waiting for the step to exit is
        deliberate: the checkpoint is published, and a requeue that kills the job's processes frees the
        nodes sooner than torchrun's own shutdown does."""
        deadline = time.monotonic() + timeout_s
        error = ""
        while time.monotonic() < deadline:
            job, live = self._live_job(handle)
            reason = job.get("state_reason")
            if live.phase == "PAUSED" and live.engine_state == "PENDING":
                return
            if live.engine_state == "RUNNING":
                res = self.runner.run(["scontrol", "requeuehold", handle.id])
            elif live.engine_state == "PENDING" and reason not in ("JobHeldUser", "JobHeldAdmin"):
                res = self.runner.run(["scontrol", "uhold", handle.id])  # the owner may release it
            elif live.terminal:
                raise ProviderError(f"{handle} ended ({live.phase}) before it was held")
            else:  # COMPLETING, REQUEUED, ...: the requeue is still stopping the run
                time.sleep(0.5)
                continue
            error = "" if res.ok else res.error()
            time.sleep(0.3)
        raise ProviderError(f"{handle} checkpointed but could not be held in the queue within {timeout_s:g}s"
                            + (f": {error}" if error else ""),
                            hint="it requeues and continues from its checkpoint; run jsctl pause again to hold it")

    def artifact_files(self, handle: JobHandle, recorded: Mapping[str, Any]) -> dict[str, str]:
        """The batch script, as Slurm keeps it while it knows the job (`scontrol write batch_script`)."""
        name = (recorded.get("request") or {}).get("script")
        res = self.runner.run(["scontrol", "write", "batch_script", handle.id, "-"])
        return {name: res.stdout} if isinstance(name, str) and res.ok and res.stdout else {}

    def _batch_script(self, handle: JobHandle) -> str:
        res = self.runner.run(["scontrol", "write", "batch_script", handle.id, "-"])
        if not res.ok:
            raise ProviderError(f"could not read {handle}'s batch script: {res.error()}")
        return res.stdout

    def _checkpoints(self, handle: JobHandle) -> bool:
        """Whether the job's batch script gives it a checkpoint directory (JETSTREAM_CHECKPOINT_DIR)."""
        return any(line.startswith("export JETSTREAM_CHECKPOINT_DIR=") for line in
                   self._batch_script(handle).splitlines())

    def _preempt_exits(self, handle: JobHandle, job: Mapping | None) -> list[int]:
        """The steps at which the job's runtime checkpointed and stopped after a preemption signal, in log
        order (jsruntime's `exit` event with reason preempted: the checkpoint is published by then)."""
        path = self._log_path(handle, job)
        if path is None:
            return []
        res = self.runner.run(["grep", "-F", '"reason": "preempted"', "--", path])
        steps = []
        for line in res.stdout.splitlines():
            start = line.find('{"jetstream"')
            try:
                rec = json.loads(line[start:]) if start >= 0 else {}
            except ValueError:
                continue
            if rec.get("event") == "exit" and rec.get("reason") == "preempted" and isinstance(rec.get("step"), int):
                steps.append(rec["step"])
        return steps

    def _paused_step(self, handle: JobHandle, job: Mapping | None) -> int | None:
        """The checkpoint step a held, requeued job restores from (None: it was held before it ran)."""
        if not parse.number(job.get("restart_cnt") if job else None):
            return None
        steps = self._preempt_exits(handle, job)
        return steps[-1] if steps else None

    def resume(self, handle: JobHandle) -> None:
        """Suspended: `scontrol resume`; held: `scontrol release`; requeued (preempted or paused) and waiting
        for its begin time (Slurm holds a requeued job back for AuthInfo cred_expire, 120 s by default):
        start it in 2 s. Not sooner: a launch in the same second as the requeue's kill finds the job's
        credential revoked, and the job fails."""
        job, live = self._live_job(handle)
        deadline = time.monotonic() + 30
        while live.engine_state == "COMPLETING" and live.restarts and time.monotonic() < deadline:
            time.sleep(0.5)  # the requeue is still stopping the previous run
            job, live = self._live_job(handle)
        word = live.engine_state
        reason = job.get("state_reason")
        if word in ("SUSPENDED", "STOPPED"):
            self._scontrol(["resume", handle.id])
            return
        if live.phase == "PAUSED" or reason in ("JobHeldUser", "JobHeldAdmin"):
            self._scontrol(["release", handle.id])
            job, live = self._live_job(handle)
            if live.phase == "PENDING" and live.restarts:  # requeued (paused): its begin time may lie ahead
                self.runner.run(["scontrol", "update", f"JobId={handle.id}", "StartTime=now+2"])
            return
        if live.phase == "PENDING" and reason == "BeginTime" and live.restarts:
            self._scontrol(["update", f"JobId={handle.id}", "StartTime=now+2"])
        elif live.phase in ("RUNNING", "PENDING", "PREEMPTED"):
            return
        else:
            raise ProviderError(f"{handle} is {live.phase} ({word}): nothing to resume")

    def scale(self, handle: JobHandle, gpus: int, shape: Mapping | None = None) -> None:
        """Pause (checkpoint, requeue held), change the held job's shape (`scontrol update`: nodes, GPUs per
        node, CPUs and memory per node), release it: the script reads the new shape from the allocation
        and jsruntime reshards the checkpoint on the new world size. `shape` is the planned placement
        (nodes, gpus_per_node, cpus_per_task, memory_per_node); without it, the GPUs on the job's nodes."""
        job, live = self._live_job(handle)
        shape = dict(shape or {})
        nodes = int(shape.get("nodes") or parse.number(job.get("node_count")) or 1)
        per_node = int(shape.get("gpus_per_node") or 0) or gpus // nodes
        if per_node < 1 or nodes * per_node != gpus:
            raise ProviderError(f"{gpus} GPUs do not spread evenly over {nodes} node{'s' if nodes != 1 else ''}",
                                hint="plan the new shape first (jsctl scale plans it from the job's spec)")
        script = self._batch_script(handle)
        if SHAPE_FROM_ALLOCATION not in script:
            raise ProviderError(f"{handle}'s batch script does not read its shape from the allocation (a job without "
                                "GPUs, or one submitted by an older jsctl), so it cannot run on another shape",
                                hint="change gpu.count in the job file and run jsctl apply")
        if not any(line.startswith("export JETSTREAM_CHECKPOINT_DIR=") for line in script.splitlines()):
            raise ProviderError(f"{handle} writes no checkpoints, so it cannot continue on another shape",
                                hint="change gpu.count in the job file and run jsctl apply (it starts over)")
        if not (live.phase == "PAUSED" and live.engine_state == "PENDING"):
            self.pause(handle, timeout_s=float(shape.get("timeout_s") or 300.0))
        cpus = nodes * int(shape.get("cpus_per_task") or 1)
        update = ["update", f"JobId={handle.id}", f"NumNodes={nodes}-{nodes}", f"NumTasks={nodes}",
                  f"NumCPUs={cpus}", f"TresPerNode=gres:gpu:{per_node}"]
        if shape.get("memory_per_node"):
            update.append(f"MinMemoryNode={-(-int(shape['memory_per_node']) // 2**20)}")
        self._scontrol(update, hint="the job stays held at its checkpoint; jsctl resume continues on the old shape")
        self.resume(handle)

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
