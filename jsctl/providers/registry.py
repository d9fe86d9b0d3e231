"""Providers by name, from the `jsctl.providers` entry-point group (built-ins register the same way),
and their clients: one per cluster of a workspace, made on first use."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from jsctl.errors import ProviderError
from jsctl.providers.base import Provider, ProviderClient

if TYPE_CHECKING:
    from jsctl.config.workspace import Workspace

BUILTIN = {"local": "jsctl.providers.local:LocalProvider", "slurm": "jsctl.providers.slurm:SlurmProvider",
           "kubernetes": "jsctl.providers.kubernetes:KubernetesProvider",
           "aws-batch": "jsctl.providers.aws_batch:AwsBatchProvider",
           "gcp-batch": "jsctl.providers.gcp_batch:GcpBatchProvider",
           "azure-ml": "jsctl.providers.azure_ml:AzureMlProvider"}


@functools.lru_cache(maxsize=None)
def _entry_points() -> dict[str, str]:
    from importlib.metadata import entry_points

    found = dict(BUILTIN)
    for ep in entry_points(group="jsctl.providers"):
        found[ep.name] = ep.value
    return found


def names() -> list[str]:
    return sorted(_entry_points())


@functools.lru_cache(maxsize=None)
def get(name: str) -> Provider:
    target = _entry_points().get(name)
    if target is None:
        from jsctl.config.diagnostics import did_you_mean
        from jsctl.config.workspace import provider_install_hint

        raise ProviderError(f"no provider named '{name}' is installed{did_you_mean(name, names())}",
                            hint=provider_install_hint(name, names()))
    module, _, attr = target.partition(":")
    import importlib

    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ProviderError(f"provider '{name}' could not be loaded from {target}: {exc}") from exc
    return cls()


def loadable() -> list[Provider]:
    """Every installed provider that loads; one that does not fails only where a cluster uses it."""
    found = []
    for name in names():
        try:
            found.append(get(name))
        except ProviderError:
            continue
    return found


class Clients:
    """One client per cluster of a workspace, made on first use (constructing one touches nothing)."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._made: dict[str, ProviderClient] = {}

    def get(self, cluster_name: str) -> ProviderClient:
        if cluster_name not in self._made:
            cluster = self.workspace.cluster(cluster_name)
            if cluster is None:
                raise ProviderError(f"cluster '{cluster_name}' is not in this workspace any more",
                                    hint="restore it in jsctl.yaml to manage its jobs")
            self._made[cluster_name] = get(cluster.provider).client(cluster, self.workspace.dir)
        return self._made[cluster_name]
