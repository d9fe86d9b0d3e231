"""azure-ml: jobs as Azure Machine Learning command jobs on compute clusters (the pure half).

- Placement: the catalog's Azure instance types (Standard_ND96amsr_A100_v4, ...); each maps to a
  compute cluster of the workspace (`compute:` in jsctl.yaml); `resources.instance_count` = nodes.
- Launch: `distribution: PyTorch` with `process_count_per_instance: 1`. Azure ML starts the entry
  script once per node with MASTER_ADDR and NODE_RANK set; the script execs the launch contract's
  command, so jsruntime.launch/torchrun starts the GPU workers as on Slurm and Kubernetes (one
  rendezvous, SIGUSR1 handling, exit 75, a user's own torchrun not started 8 times per node).
- Storage: job paths under a `datastores:` prefix become `azureml://datastores/...` inputs (ro_mount)
  and outputs (rw_mount); the script links each to its `mount_path`.
- Secrets: a command job has no per-job secret injection, and no value may be in the request. Submit
  stores each value given to `jsctl apply` in the cluster's Key Vault (`key_vault:`) as
  `jsctl-<job id>-<NAME>`; the request carries only that secret's URL, and the entry script reads it
  at run time with the compute's managed identity (which needs `get` on the vault's secrets). A job
  with secrets on a cluster without `key_vault` is refused (AML05).
- Check: `jsctl plan --check-remote` validates the YAML artifact with azure.ai.ml.load_job and asks
  the workspace for the compute; the plan itself imports no Azure SDK (azure.ai.ml costs 1.7 s).
"""
from __future__ import annotations

from typing import Any

from jsctl.config.diagnostics import Diagnostic, error, warning
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.catalog import Catalog
from jsctl.model.cluster import Capabilities, Cluster, Facts, Offer
from jsctl.model.job import JobContext
from jsctl.model.runtime_names import RuntimeNames
from jsctl.providers.azure_ml import jobspec
from jsctl.providers.azure_ml.request import AzureMlRequest
from jsctl.providers.azure_ml.settings import API_VERSION, SCHEMA, AzureMlSettings
from jsctl.providers.base import ProviderClient
from jsctl.providers.cloud import CloudProvider

# set by Azure ML when the job runs: `${NAME}` of these in a job file waits for run time
RUNTIME_NAMES = RuntimeNames(frozenset({"NODE_RANK", "RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}),
                             ("AZUREML_", "AZURE_ML_INPUT_", "AZURE_ML_OUTPUT_", "AZ_BATCHAI_"))


class AzureMlProvider(CloudProvider):
    name = "azure-ml"
    cloud = "azure"
    code = "AML"

    def capabilities(self) -> Capabilities:
        return Capabilities(node_logs=True, check_remote=True, dependencies=False)

    def settings_schema(self) -> dict[str, Any]:
        return SCHEMA

    def offers(self, cluster: Cluster, facts: Facts | None, catalog: Catalog) -> list[Offer]:
        """The catalog's instance types that have a compute cluster in the workspace (`compute:`)."""
        s = AzureMlSettings.of(cluster)
        return [o for o in super().offers(cluster, facts, catalog) if o.pool in s.compute]

    def check_cluster(self, cluster: Cluster, catalog: Catalog) -> list[Diagnostic]:
        s = AzureMlSettings.of(cluster)
        out = super().check_cluster(cluster, catalog)
        for name in dict.fromkeys([*(cluster.settings.get("instance_types") or ()), *s.compute, *s.spot_compute]):
            if catalog.get("azure", str(name)) is None and name not in (cluster.settings.get("instance_types") or ()):
                out.append(Diagnostic("error", "AML01", f"cluster {s.cluster}: compute names instance type '{name}', "
                                      "which is not in the azure catalog", ""))
            elif name not in s.compute:
                out.append(Diagnostic("warning", "AML01", f"cluster {s.cluster}: instance type {name} has no compute "
                                      "cluster (`compute:`): not offered", ""))
        return out

    def runtime_names(self) -> RuntimeNames:
        return RUNTIME_NAMES

    @staticmethod
    def settings_for(job: JobContext, facts: Facts | None) -> AzureMlSettings:
        if job.cluster is not None:
            return AzureMlSettings.of(job.cluster)
        data = facts.data.get("cluster_settings", {}) if facts is not None else {}
        return AzureMlSettings.of(Cluster(job.placement.cluster, "azure-ml", data))

    def validate(self, job: JobContext, facts: Facts | None) -> list[Diagnostic]:
        s = self.settings_for(job, facts)
        spec, p, file = job.spec, job.placement, job.spec.file
        out: list[Diagnostic] = []
        if s.compute_for(p.pool, p.capacity == "spot") is None:
            out.append(error("AML02", f"cluster {s.cluster} names no compute cluster for instance type {p.pool}", file,
                             hint=f"add `compute: {{{p.pool}: <compute cluster>}}` to the cluster in jsctl.yaml"))
        if not spec.environment.image:
            out.append(error("AML03", "an Azure ML job needs environment.image", file))
        if spec.environment.system_packages:
            out.append(warning("AML04", "environment.build.system_packages: not installed by azure-ml (an image "
                               "build needs a Dockerfile); bake them into the image", file))
        if spec.environment.secrets and not s.key_vault:
            out.append(error("AML05", f"secrets {', '.join(spec.environment.secrets)}: Azure ML command jobs have no "
                             "secret injection and jsctl never puts a value in a job request", file,
                             hint="set `key_vault: https://<vault>.vault.azure.net` on the cluster: submit stores "
                                  "the values there and the job reads them with the compute's managed identity"))
        for m in (*spec.inputs, *spec.outputs):
            if s.datastore_uri(m.path.replace("${JOB_ID}", job.job_id)) is None:
                out.append(warning("AML06", f"storage {m.name}: {m.path} is under no datastore prefix of cluster "
                                   f"{s.cluster}: not mounted", file,
                                   hint="add `datastores: [{prefix: ..., datastore: ...}]` to the cluster"))
        hooks = [k for k, v in (("pre_run", spec.lifecycle.pre_run), ("post_success", spec.lifecycle.post_success),
                                ("post_failure", spec.lifecycle.post_failure)) if v]
        if hooks:
            out.append(warning("AML07", f"{', '.join(hooks)}: not run by azure-ml (a command job runs one "
                               "command; put them in it)", file))
        if "${{" in jobspec.build(job, s).body["properties"]["command"]:
            out.append(error("AML08", "the job's command or environment holds `${{`, which Azure ML replaces "
                             "(`${{inputs.x}}`) before the job runs", file))
        reserved = [k for k, _ in spec.labels if k.startswith("jsctl.")]
        if reserved:
            out.append(warning("AML09", f"labels {', '.join(reserved)}: jsctl's own tags win", file))
        return out

    def render(self, job: JobContext, facts: Facts | None) -> RenderedArtifact:
        s = self.settings_for(job, facts)
        built = jobspec.build(job, s)
        request = AzureMlRequest(
            workspace_id=s.workspace_id, job_name=job.job_id, api_version=API_VERSION,
            job_file=f"{job.job_id}.yaml", environment_name="CliV2AnonymousEnvironment",
            environment_version=built.environment_version, environment=built.environment, body=built.body,
            experiment=s.experiment, secrets=built.secrets, endpoint_url=s.endpoint_url,
            logs_endpoint=s.logs_endpoint)
        p = job.placement
        spot = p.capacity == "spot"
        notes = [f"Azure ML command job on compute {built.compute or '?'}: {p.nodes} × {p.pool}"
                 + (" (spot)" if spot else ""),
                 "distribution PyTorch, 1 process per node: jsruntime.launch/torchrun starts the GPU workers"]
        if spot:
            notes.append("spot: the low-priority compute " + built.compute if p.pool in s.spot_compute
                         else "spot: queue_settings job_tier Spot")
        if built.secrets:
            notes.append(f"secrets {', '.join(built.secrets)}: stored in Key Vault {s.key_vault} at submit; the job "
                         "reads them with the compute's managed identity (never in the request)")
        for name, (azure, kind, uri, mount_path) in sorted(jobspec.mounts(job, s).items()):
            notes.append(f"{kind} {name}: {uri} ({'ro' if kind == 'input' else 'rw'}_mount as {azure}"
                         + (f", linked at {mount_path})" if mount_path else ")"))
        notes += [f"warning: {d.message}" for d in self.validate(job, facts) if d.severity == "warning"]
        summary = f"Azure ML command job {job.job_id}: {p.nodes} × {p.pool}"
        return RenderedArtifact("azure-ml-command-job", job.job_id, ((request.job_file, built.yaml),), request,
                                summary, tuple(notes), secrets=job.spec.environment.secrets, upstream=job.depends_on)

    def request_type(self) -> type[AzureMlRequest]:
        return AzureMlRequest

    def client(self, cluster: Cluster, workspace_dir: str) -> ProviderClient:
        from jsctl.providers.azure_ml.client import AzureMlClient

        return AzureMlClient(cluster, workspace_dir)
