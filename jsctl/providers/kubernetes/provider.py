"""The Kubernetes provider's pure half: offers, validation, the manifest, and diffs."""
from __future__ import annotations

from typing import Any

from jsctl.config.diagnostics import Diagnostic, error, warning
from jsctl.errors import ProviderError
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.catalog import Catalog
from jsctl.model.cluster import Capabilities, Cluster, Facts, Offer
from jsctl.model.job import JobContext
from jsctl.model.runtime_names import RuntimeNames
from jsctl.providers.base import Provider, ProviderClient, package_schema
from jsctl.providers.kubernetes import inventory, manifests, names
from jsctl.providers.kubernetes.request import JOB_ID_LABEL, KubernetesRequest
from jsctl.providers.kubernetes.settings import RUNTIME_NAMES, KubernetesSettings


class KubernetesProvider(Provider):
    name = "kubernetes"

    def capabilities(self) -> Capabilities:
        return Capabilities(pause=True, resume=True, scale=False, node_logs=True, check_remote=True,
                            dependencies=False)

    def offers(self, cluster: Cluster, facts: Facts | None, catalog: Catalog) -> list[Offer]:
        return inventory.offers(KubernetesSettings.of(cluster), facts)

    def settings_schema(self) -> dict[str, Any]:
        return package_schema(__package__)

    def runtime_names(self) -> RuntimeNames:
        return RUNTIME_NAMES

    def settings_for(self, job: JobContext, facts: Facts | None) -> KubernetesSettings:
        """The inventory entry the planner put in the context, else settings a probe carried, else defaults."""
        if job.cluster is not None:
            return KubernetesSettings.of(job.cluster)
        if facts is not None and "cluster_settings" in facts.data:
            return KubernetesSettings.of(Cluster(job.placement.cluster, "kubernetes", facts.data["cluster_settings"]))
        return KubernetesSettings.of(Cluster(job.placement.cluster, "kubernetes", {}))

    def validate(self, job: JobContext, facts: Facts | None) -> list[Diagnostic]:
        file = job.spec.file
        try:
            settings = self.settings_for(job, facts)
        except ProviderError as exc:
            return [error("K8S01", exc.message, file)]
        out: list[Diagnostic] = []
        spec = job.spec
        host = names.longest_hostname(job.job_id, settings.flavor)
        if not names.dns_label(job.job_id) or not names.dns_label(host):
            out.append(error("K8S02", f"job id {job.job_id!r} cannot name Kubernetes objects: pod hostnames like "
                             f"{host!r} must be DNS labels of at most 63 characters", file,
                             hint="shorten job.name (lowercase letters, digits and '-')"))
        if settings.pools and settings.pool(job.placement.pool) is None:
            out.append(error("K8S03", f"cluster {settings.cluster} has no pool {job.placement.pool}", file))
        if not spec.environment.image:
            out.append(error("K8S04", "a Kubernetes job needs environment.image", file))
        for s in spec.environment.secrets:
            if not names.ENV_NAME.fullmatch(s) or not names.SECRET_KEY.fullmatch(s):
                out.append(error("K8S05", f"secret {s!r} is not a valid environment variable name and Secret key",
                                 file, hint="letters, digits and '_', not starting with a digit"))
        for m in (*spec.inputs, *spec.outputs):
            if settings.storage_rule(m.path) is None:
                out.append(warning("K8S06", f"storage {m.name}: {m.path} is under no storage prefix of cluster "
                                   f"{settings.cluster}: not mounted", file,
                                   hint="add a storage entry (prefix → pvc or host_path) to the cluster in jsctl.yaml"))
        bad = [k for k, v in spec.labels if not (names.label_key(k) and names.label_value(v))]
        if bad:
            out.append(warning("K8S07", f"labels {', '.join(bad)} are not valid Kubernetes labels: only in the "
                               "pods' jsctl.dev/labels annotation", file))
        if spec.priority != "normal" and spec.priority not in settings.priority_classes:
            out.append(warning("K8S08", f"priority {spec.priority}: cluster {settings.cluster} names no PriorityClass "
                               "for it; the pods get the cluster's default priority", file,
                               hint=f"add priority_classes: {{{spec.priority}: <name>}} to the cluster in jsctl.yaml"))
        skipped = [k for k, v in (("pre_run", settings.flavor == "kubeflow" and spec.lifecycle.pre_run),
                                  ("post_success", settings.flavor != "jobset" and spec.lifecycle.post_success),
                                  ("post_failure", spec.lifecycle.post_failure)) if v]
        if skipped:
            out.append(warning("K8S09", f"{', '.join(skipped)}: not run by the {settings.flavor} flavor (the main "
                               "container runs the launcher itself, so that signals reach it)", file,
                               hint="flavor jobset runs post_success hooks in a replicated job after the training"
                               if "post_success" in skipped and settings.flavor != "jobset" else None))
        if settings.flavor == "kubeflow" and spec.priority in settings.priority_classes:
            out.append(warning("K8S10", "kubeflow: a TrainJob cannot set the pods' priorityClassName", file))
        if settings.flavor == "kubeflow" and any(n in dict(spec.environment.env_vars) for n in
                                                 ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK",
                                                  "PET_MASTER_ADDR", "PET_MASTER_PORT")):
            out.append(warning("K8S11", "kubeflow: Trainer sets PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, "
                               "PET_MASTER_ADDR and PET_MASTER_PORT; the job's values for them are dropped", file))
        return out

    def render(self, job: JobContext, facts: Facts | None) -> RenderedArtifact:
        settings = self.settings_for(job, facts)
        m = manifests.build(job, settings)
        request = KubernetesRequest(
            manifest=f"{job.job_id}.yaml", namespace=settings.namespace, flavor=settings.flavor,
            workload=m.workload.to_dict(), objects=tuple(r.to_dict() for r in m.refs),
            selector={JOB_ID_LABEL: job.job_id},
            secret=names.secret_name(job.job_id) if job.spec.environment.secrets else None,
            kubeconfig=settings.kubeconfig, context=settings.context)
        p = job.placement
        summary = (f"{m.workload.kind} {m.workload.name}: {p.nodes} pod{'s' if p.nodes != 1 else ''}"
                   + (f" × {p.gpus_per_node} GPU{'s' if p.gpus_per_node != 1 else ''}" if p.gpus_per_node else "")
                   + f" on {p.pool}")
        return RenderedArtifact("kubernetes-manifest", job.job_id, ((request.manifest, m.text),), request, summary,
                                m.notes, secrets=job.spec.environment.secrets, upstream=job.depends_on)

    def request_type(self) -> type[KubernetesRequest]:
        return KubernetesRequest

    def client(self, cluster: Cluster, workspace_dir: str) -> ProviderClient:
        from jsctl.providers.kubernetes.client import KubernetesClient

        return KubernetesClient(cluster, workspace_dir)
