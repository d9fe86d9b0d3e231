"""Job handles of the Kubernetes provider and the manifest a request names (pure).

A handle is `kubernetes://<cluster>/<namespace>/<kind>.<version>.<group>/<name>`: kubectl's
TYPE.VERSION.GROUP form (`job.v1.batch`, `jobset.v1alpha2.jobset.x-k8s.io`, `pod.v1` for core kinds).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from jsctl.errors import ProviderError
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.status import JobHandle
from jsctl.providers.kubernetes.request import KubernetesRequest


@dataclass(frozen=True)
class Ref:
    """The object a handle names."""

    namespace: str
    kind: str  # lowercase, as in the handle
    version: str
    group: str  # "" for core
    name: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.kind}.{self.version}{'.' + self.group if self.group else ''} {self.namespace}/{self.name}"

    @classmethod
    def of(cls, handle: JobHandle) -> "Ref":
        parts = handle.id.split("/")
        if len(parts) != 3 or not all(parts):
            raise ProviderError(f"not a Kubernetes job handle: {handle} "
                                "(expected kubernetes://CLUSTER/NAMESPACE/KIND.VERSION.GROUP/NAME)")
        namespace, resource, name = parts
        kind, _, rest = resource.partition(".")
        version, _, group = rest.partition(".")
        if not version:
            raise ProviderError(f"not a Kubernetes job handle: {handle} (no API version in {resource!r})")
        return cls(namespace, kind, version, group, name)

    @classmethod
    def to_handle(cls, cluster: str, namespace: str, api_version: str, kind: str, name: str) -> JobHandle:
        group, _, version = api_version.rpartition("/")
        resource = f"{kind.lower()}.{version}" + (f".{group}" if group else "")
        return JobHandle("kubernetes", cluster, f"{namespace}/{resource}/{name}")


def manifest_documents(artifact: RenderedArtifact) -> list[dict[str, Any]]:
    """The objects of the artifact's manifest, in apply order."""
    request = artifact.request
    if not isinstance(request, KubernetesRequest):
        raise ProviderError(f"{artifact.job_id}: not a Kubernetes request ({artifact.kind})")
    files = dict(artifact.files)
    if request.manifest not in files:
        raise ProviderError(f"{artifact.job_id}: the artifact has no manifest {request.manifest!r}")
    try:
        docs = [d for d in yaml.safe_load_all(files[request.manifest]) if d is not None]
    except yaml.YAMLError as exc:
        raise ProviderError(f"{artifact.job_id}: the manifest is not YAML: {exc}") from None
    for d in docs:
        if not isinstance(d, dict) or not d.get("apiVersion") or not d.get("kind") or \
                not (d.get("metadata") or {}).get("name"):
            raise ProviderError(f"{artifact.job_id}: a manifest document lacks apiVersion, kind or metadata.name")
    return docs
