"""The backend a workspace's `state:` names."""
from __future__ import annotations

from typing import Protocol

from jsctl.errors import StateError
from jsctl.state.backend import StateBackend


class Settings(Protocol):
    """What the factory reads (jsctl.config.workspace.StateSettings; this stage does not import config)."""

    backend: str
    path: str | None
    bucket: str | None
    key: str | None
    region: str | None
    endpoint_url: str | None


def backend_for(settings: Settings) -> StateBackend:
    if settings.backend == "local":
        from jsctl.state.local import LocalBackend

        return LocalBackend(str(settings.path))
    if settings.backend == "s3":
        from jsctl.state.s3 import S3Backend

        return S3Backend(str(settings.bucket), str(settings.key), settings.region, settings.endpoint_url)
    raise StateError(f"unknown state backend {settings.backend!r}", hint="backends: local, s3")
