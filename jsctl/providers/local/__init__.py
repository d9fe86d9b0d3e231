"""The local provider: jobs run as supervised process groups on this machine (the embedded default)."""
from __future__ import annotations

import json
import os
from typing import Any

from jsctl.model.artifact import RenderedArtifact
from jsctl.model.catalog import Catalog
from jsctl.model.cluster import Capabilities, Cluster, Facts, Offer
from jsctl.model.job import JobContext
from jsctl.providers.base import Provider, package_schema
from jsctl.providers.local import runs
from jsctl.providers.local.request import LocalRunRequest
from jsctl.render import launch

# A local run is a scaled-down smoke test: CPU and memory requests per GPU are not enforced here, so the
# offer states room for any request instead of this machine's size.
UNENFORCED = 64


def max_workers(cluster: Cluster, cpus: int | None = None) -> int:
    """How many worker processes (emulated GPUs) one job may have: `max_workers`, else the CPU count (≥ 2)."""
    return int(cluster.settings.get("max_workers") or max(cpus or os.cpu_count() or 1, 2))


class LocalProvider(Provider):
    name = "local"

    def capabilities(self) -> Capabilities:
        return Capabilities(pause=True, resume=True, scale=True, node_logs=False)

    def settings_schema(self) -> dict[str, Any]:
        return package_schema(__package__)

    def offers(self, cluster: Cluster, facts: Facts | None, catalog: Catalog) -> list[Offer]:
        data = dict(facts.data) if facts else {}
        cpus = int(data.get("cpus") or os.cpu_count() or 1)
        workers = max_workers(cluster, cpus)
        memory = int(data.get("memory_bytes") or 0) or 8 * 2**30
        return [Offer(cluster=cluster.name, provider="local", pool="this machine", gpu_type="*",
                      gpus_per_node=workers, max_nodes=1, cpus_per_node=max(cpus, workers) * UNENFORCED,
                      memory_per_node=memory * UNENFORCED, interconnect="loopback", nvlink=True, max_time_s=None,
                      node_hour_price=0.0, capacities=("on-demand", "spot", "backfill"),
                      note="GPUs are emulated as CPU worker processes", emulated=True)]

    def render(self, job: JobContext, facts: Facts | None) -> RenderedArtifact:
        spec = job.spec
        mounts: dict[str, str] = {}
        notes: list[str] = []
        for m in (*spec.inputs, *spec.outputs):
            path = m.path if os.path.isabs(m.path) else os.path.normpath(os.path.join(job.workdir, m.path))
            mounts[m.name] = path
            if m.mount_path and m.mount_path != path:
                notes.append(f"storage {m.name}: {m.mount_path} is not mounted on this machine; the job finds "
                             f"{path} in $JETSTREAM_MOUNT_{launch.env_name(m.name)}")
        if spec.environment.image:
            notes.append(f"image {spec.environment.image} is not used: the local provider runs on this "
                         "machine's Python")
        if spec.checkpoint_output is not None:
            notes.append("requeues on preemption: the runtime checkpoints and exits 75, then the local supervisor "
                         "starts the command again from the newest checkpoint (jsctl requeues, not the framework: "
                         "jsruntime.lightning turns Lightning's SLURMEnvironment auto_requeue off)")
        files = []
        ds_text = launch.deepspeed_config(job)
        if ds_text:  # written into the run directory beside run.json (LocalClient.submit)
            files.append((launch.DEEPSPEED_CONFIG_FILE, ds_text))
            notes.append(f"DeepSpeed config: {launch.DEEPSPEED_CONFIG_FILE} in the run directory, its path in "
                         f"${launch.DEEPSPEED_CONFIG_ENV}; the program calls deepspeed.initialize(config=...) "
                         "with it (jsruntime sets up the process group only)")
        env = launch.environment(job, mounts, f"${{{runs.MARKER}}}/{launch.DEEPSPEED_CONFIG_FILE}")
        env["MASTER_ADDR"] = "127.0.0.1"
        request = LocalRunRequest(
            job_id=job.job_id, address=job.address, workdir=job.workdir, argv=launch.command(job), env=env,
            secrets=spec.environment.secrets, pre_run=spec.lifecycle.pre_run, post_success=spec.lifecycle.post_success,
            post_failure=spec.lifecycle.post_failure, outputs=tuple(sorted({mounts[o.name] for o in spec.outputs})),
            workers=job.placement.workers, max_restarts=spec.recovery.max_restarts,
            restart_on_exit_codes=spec.recovery.restart_on_exit_codes, time_limit_s=spec.compute.time_limit_s)
        text = json.dumps(request.to_dict(), indent=2, sort_keys=True) + "\n"
        return RenderedArtifact("local-run", job.job_id, (("run.json", text), *files), request,
                                f"local run, {job.placement.workers} worker process"
                                f"{'es' if job.placement.workers != 1 else ''}", tuple(notes),
                                secrets=spec.environment.secrets, upstream=job.depends_on)

    def request_type(self) -> type[LocalRunRequest]:
        return LocalRunRequest

    def client(self, cluster: Cluster, workspace_dir: str):
        from jsctl.providers.local.client import LocalClient

        return LocalClient(cluster, workspace_dir)
