"""The Kubernetes provider: a manifest per job (an Indexed Job, a JobSet, a Volcano Job or a Kubeflow
TrainJob, with what they need), applied with the kubernetes client (the `k8s` extra)."""
from jsctl.providers.kubernetes.provider import KubernetesProvider

__all__ = ["KubernetesProvider"]
