"""The Kubernetes provider's typed request: the objects KubernetesClient.submit applies (server-side
apply, field manager `jsctl`), in order, from the manifest file of the artifact."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Mapping

from jsctl.model.artifact import Request

FIELD_MANAGER = "jsctl"
# labels on every object jsctl creates (values are valid label values; the full address is an annotation)
JOB_ID_LABEL = "jsctl.dev/job-id"
GENERATION_LABEL = "jsctl.dev/generation"
ADDRESS_ANNOTATION = "jsctl.dev/address"
LABELS_ANNOTATION = "jsctl.dev/labels"  # the job's labels as JSON (any value; label values are restricted)
DIGEST_ANNOTATION = "jsctl.dev/manifest-digest"  # sha256 of the manifest, as planned


@dataclass(frozen=True)
class ObjectRef:
    api_version: str  # batch/v1, jobset.x-k8s.io/v1alpha2, ...
    kind: str
    name: str

    def to_dict(self) -> dict[str, str]:
        return {"api_version": self.api_version, "kind": self.kind, "name": self.name}


@dataclass(frozen=True)
class KubernetesRequest(Request):
    manifest: str  # the file among the artifact's files: multi-document YAML, applied in this order
    namespace: str
    flavor: str  # job | jobset | volcano | kubeflow
    workload: Mapping[str, str]  # ObjectRef.to_dict() of the object whose status is the job's
    objects: tuple[Mapping[str, str], ...]  # ObjectRef.to_dict() of every document, in apply order
    selector: Mapping[str, str]  # labels that select every object (and pod) of this job
    secret: str | None = None  # the Secret submit creates from the job's secret values (never rendered)
    kubeconfig: str | None = None
    context: str | None = None

    IN_PLACE: ClassVar[tuple[str, ...]] = ("kubeconfig", "context")
