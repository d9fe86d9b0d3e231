"""Providers by name, from the `jsctl.providers` entry-point group (built-ins register the same way)."""
from __future__ import annotations

import functools

from jsctl.errors import ProviderError
from jsctl.providers.base import Provider

BUILTIN = {"local": "jsctl.providers.local:LocalProvider", "slurm": "jsctl.providers.slurm:SlurmProvider"}


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
        raise ProviderError(f"no provider named '{name}' is installed (installed: {', '.join(names())})",
                            hint="install the extra that brings it, e.g. pip install 'jsctl[aws]'")
    module, _, attr = target.partition(":")
    import importlib

    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ProviderError(f"provider '{name}' could not be loaded from {target}: {exc}") from exc
    return cls()
