"""The Slurm provider's pure half: offers, validation, the batch script, and diffs."""
from __future__ import annotations

from typing import Any, Mapping

from jsctl.config.diagnostics import Diagnostic, error, warning
from jsctl.errors import ProviderError
from jsctl.model.artifact import Change, RenderedArtifact
from jsctl.model.catalog import Catalog
from jsctl.model.cluster import Capabilities, Cluster, Facts, Offer
from jsctl.model.job import JobContext
from jsctl.model.runtime_names import RuntimeNames
from jsctl.providers.base import Provider, ProviderClient, package_schema
from jsctl.providers.slurm import inventory, script
from jsctl.providers.slurm.request import SbatchRequest
from jsctl.providers.slurm.settings import RUNTIME_NAMES, SlurmSettings
from jsctl.render import launch, render as render_template

class SlurmProvider(Provider):
    name = "slurm"

    def capabilities(self) -> Capabilities:
        return Capabilities(pause=True, resume=True, scale=True, node_logs=True, check_remote=True,
                            dependencies=True)

    def offers(self, cluster: Cluster, facts: Facts | None, catalog: Catalog) -> list[Offer]:
        return inventory.offers(SlurmSettings.of(cluster), facts)

    def settings_schema(self) -> dict[str, Any]:
        return package_schema(__package__)

    def runtime_names(self) -> RuntimeNames:
        return RUNTIME_NAMES

    def settings_for(self, job: JobContext, facts: Facts | None) -> SlurmSettings:
        """The cluster's settings: the inventory entry the planner put in the context, else the
        settings a probe carried, else none (defaults)."""
        if job.cluster is not None:
            return _settings_of(job.cluster)
        if facts is not None and "cluster_settings" in facts.data:
            return SlurmSettings.of(Cluster(job.placement.cluster, "slurm", facts.data["cluster_settings"]))
        return SlurmSettings.of(Cluster(job.placement.cluster, "slurm", {}))

    def validate(self, job: JobContext, facts: Facts | None) -> list[Diagnostic]:
        out: list[Diagnostic] = []
        file = job.spec.file
        try:
            settings = self.settings_for(job, facts)
        except ProviderError as exc:
            return [error("SLURM01", exc.message, file)]
        if settings.access.mode == "slurmrestd":
            out.append(error("SLURM02", f"cluster {settings.cluster}: access mode slurmrestd is not supported yet",
                             file, hint="use access.mode: local (on a login node) or ssh"))
        if settings.access.mode == "ssh" and not settings.shared_dir:
            out.append(error("SLURM03", f"cluster {settings.cluster}: ssh access needs shared_dir "
                             "(a directory on the cluster for logs and the jobs' working directory)", file))
        c = script.container(settings, job.spec)
        if c.runtime != "none":
            for src, dst in c.mounts:
                if any(ch in src + dst for ch in ",:"):
                    out.append(error("SLURM04", f"storage path {src!r} → {dst!r}: {c.runtime} mount lists cannot "
                                     "hold ',' or ':'", file))
        if job.spec.priority == "high" and not _qos(settings, job.placement.pool, "high"):
            out.append(warning("SLURM06", f"priority high: partition {job.placement.pool} has no QOS for it; "
                               "the job gets Slurm's default priority", file,
                               hint="add qos: {high: <name>} to the partition in jsctl.yaml"))
        return out

    def render(self, job: JobContext, facts: Facts | None) -> RenderedArtifact:
        settings = self.settings_for(job, facts)
        ctx = script.context(job, settings)
        text, script_hash = script.seal(render_template(__package__, script.TEMPLATE, **ctx))
        c: script.Container = ctx["container"]
        notes = []
        if c.runtime == "none":
            if c.image:
                notes.append(f"cluster {settings.cluster} has no container runtime: runs on the host, "
                             f"image {c.image} is not used")
            mounted = [m for m in (*job.spec.inputs, *job.spec.outputs) if m.mount_path and m.mount_path != m.path]
            if mounted:
                notes.append("on the host, storage is at its paths: " + ", ".join(
                    f"{m.name} {m.path} (not {m.mount_path})" for m in mounted))
        else:
            image = script.pyxis_image(c.image or "") if c.runtime == "pyxis" else script.apptainer_image(c.image or "")
            notes.append(f"container {image} via {c.runtime}" + (
                "; mounts " + ", ".join(f"{s} → {d}" for s, d in c.mounts) if c.mounts else ""))
        if job.depends_on:
            notes.append("after " + ", ".join(job.depends_on) + " (sbatch --dependency=afterok, "
                         "--kill-on-invalid-dep=yes)")
        if ctx["checkpoints"]:
            notes.append(f"requeues on preemption: SIGUSR1 {settings.signal_grace_s}s before the end, "
                         "checkpoint, exit 75, then this script runs scontrol requeue (jsctl requeues, not the "
                         "framework: jsruntime.lightning turns Lightning's SLURMEnvironment auto_requeue off)")
        notes.append(f"jsruntime: this jsctl's copy, staged at submit in {ctx['runtime_dir']} and first on "
                     "PYTHONPATH" + (" (mounted read-only into the container)" if c.runtime_dir else ""))
        if ctx["deepspeed_file"]:
            notes.append(f"DeepSpeed config: written by the script to {ctx['deepspeed_file']}, its path in "
                         f"${launch.DEEPSPEED_CONFIG_ENV}; the program calls deepspeed.initialize(config=...) with it "
                         "(jsruntime sets up the process group only)")
        notes.append(f"log: {ctx['log_file']}")
        options = dict(opt.removeprefix("--").partition("=")[::2] for opt in ctx["sbatch"])
        options["comment"] = script.sbatch_value(script.comment(job.address, job.generation, script_hash))
        request = SbatchRequest(argv=("sbatch", "--parsable", "--export=ALL"), script=f"{job.job_id}.sbatch",
                                options=options, log_dir=ctx["log_root"], workdir=ctx["workdir"],
                                access=settings.access.mode, container_runtime=c.runtime,
                                runtime_dir=ctx["runtime_dir"])
        p = job.placement
        summary = (f"sbatch script: {p.nodes} node{'s' if p.nodes != 1 else ''}"
                   + (f" × {p.gpus_per_node} GPU{'s' if p.gpus_per_node != 1 else ''}" if p.gpus_per_node else "")
                   + f" on {p.pool}")
        return RenderedArtifact("sbatch-script", job.job_id, ((request.script, text),), request, summary,
                                tuple(notes), secrets=job.spec.environment.secrets, upstream=job.depends_on)

    def request_type(self) -> type[SbatchRequest]:
        return SbatchRequest

    def diff(self, prior: Mapping[str, Any] | None, artifact: RenderedArtifact,
             prior_digest: str | None = None) -> Change:
        """Changed #SBATCH options force a new job; a changed script body shows as its comment hash."""
        change = super().diff(prior, artifact, prior_digest)
        if "request.options.comment" not in change.fields:
            return change
        reasons = [r for r in change.reasons if not r.startswith("request.options.comment ")]
        return Change(change.action, (*reasons, "script body changed (forces replacement)"), change.fields)

    def client(self, cluster: Cluster, workspace_dir: str) -> ProviderClient:
        from jsctl.providers.slurm.client import SlurmClient

        return SlurmClient(cluster, workspace_dir)


_SETTINGS: dict[int, tuple[Cluster, SlurmSettings]] = {}  # id(cluster) -> (it, its settings): read once, not per job


def _settings_of(cluster: Cluster) -> SlurmSettings:
    hit = _SETTINGS.get(id(cluster))
    if hit is not None and hit[0] is cluster:
        return hit[1]
    settings = SlurmSettings.of(cluster)
    if len(_SETTINGS) >= 64:
        _SETTINGS.clear()
    _SETTINGS[id(cluster)] = (cluster, settings)  # holds the cluster: its id is not reused meanwhile
    return settings


def _qos(settings: SlurmSettings, partition: str, priority: str) -> str | None:
    return ((settings.partition(partition) or {}).get("qos") or {}).get(priority)
