"""The workspace: `jsctl.yaml` (inventory of clusters, state backend, catalog, budget) or the default.

A cluster entry is `name`, `provider`, an optional `description`, and settings: every other key,
checked against the schema its provider declares (`Provider.settings_schema()`). This stage does
not know the providers; whoever loads a workspace passes the installed ones' schemas in.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Union

from jsctl.config import schema
from jsctl.config.diagnostics import Diagnostic, did_you_mean, error, has_errors
from jsctl.config.loader import Document, load_file
from jsctl.errors import ConfigError
from jsctl.model.cluster import Cluster

DEFAULT_FILE = "jsctl.yaml"
DEFAULT_PROVIDER = "local"  # the documented default: without jsctl.yaml, jobs run on this machine
CLUSTER_KEYS = ("name", "provider", "description")  # every other key of a cluster entry is a setting
# a provider's settings schema, or a function that loads it (so that only the providers used are loaded)
SchemaSource = Union[Mapping[str, Any], Callable[[], Mapping[str, Any]]]


@dataclass(frozen=True)
class StateSettings:
    """`state:` of jsctl.yaml: the local file (`path`, absolute here) or an S3 object."""

    backend: str = "local"
    path: str | None = None
    bucket: str | None = None
    key: str | None = None
    region: str | None = None
    endpoint_url: str | None = None


S3_ONLY = ("bucket", "key", "region", "endpoint_url")


def state_settings(state: Mapping[str, Any], base: str) -> tuple[StateSettings, list[str]]:
    """The settings of a `state:` mapping (paths relative to `base`), and the keys that do not belong
    to its backend."""
    backend = state.get("backend", "local")
    if backend == "s3":
        return (StateSettings("s3", None, state.get("bucket"), state.get("key"), state.get("region"),
                              state.get("endpoint_url")), ["path"] if "path" in state else [])
    path = os.path.join(base, state.get("path", os.path.join(".jsctl", "state.json")))
    return StateSettings("local", path), [k for k in S3_ONLY if k in state]


@dataclass(frozen=True)
class Workspace:
    dir: str  # absolute; relative paths in jsctl.yaml resolve here
    file: str | None  # None = the embedded default
    clusters: tuple[Cluster, ...]
    state_path: str  # absolute
    catalog: str | None = None
    budget: float | None = None
    prefer: tuple[str, ...] = ()
    state: StateSettings | None = None  # None: the local file at state_path

    @property
    def state_settings(self) -> StateSettings:
        return self.state or StateSettings("local", self.state_path)

    def cluster(self, name: str) -> Cluster | None:
        return next((c for c in self.clusters if c.name == name), None)


def default(directory: str = ".") -> Workspace:
    d = os.path.abspath(directory)
    return Workspace(d, None, (Cluster(DEFAULT_PROVIDER, DEFAULT_PROVIDER, {}),),
                     os.path.join(d, ".jsctl", "state.json"))


def load(path: str | None = None, providers: Mapping[str, SchemaSource] | None = None) -> Workspace:
    """`--workspace FILE`, else ./jsctl.yaml if present, else the embedded default.

    `providers`: installed provider name → its settings schema, or a function returning it.
    Each cluster's provider must be one of them, and its settings must pass that schema. None: the
    provider names and settings are not checked here (the providers check settings when they read them).
    """
    if path is None:
        if not os.path.exists(DEFAULT_FILE):
            return default(".")
        path = DEFAULT_FILE
    doc, diags = load_file(path)
    if doc is not None and not has_errors(diags):
        diags.extend(schema.validate(doc, "workspace"))
    if doc is not None and not has_errors(diags) and providers is not None:
        diags.extend(check_clusters(doc, providers))
    if doc is None or has_errors(diags):
        exc = ConfigError(diags)
        exc.sources = {doc.path: doc.text} if doc else {}
        raise exc
    data = doc.data
    base = os.path.dirname(os.path.abspath(path))
    clusters = []
    seen: set[str] = set()
    for i, c in enumerate(data.get("clusters") or []):
        if c["name"] in seen:
            p = doc.where(("clusters", i, "name"))
            raise ConfigError([error("WS01", f"cluster '{c['name']}' is defined twice", path, p.line, p.col)])
        seen.add(c["name"])
        settings = {k: v for k, v in c.items() if k not in CLUSTER_KEYS}
        clusters.append(Cluster(c["name"], c["provider"], settings))
    if not clusters:
        clusters.append(Cluster(DEFAULT_PROVIDER, DEFAULT_PROVIDER, {}))
    state = data.get("state") or {}
    settings, stray = state_settings(state, base)
    if stray:
        p = doc.where(("state", stray[0]), key=True)
        raise ConfigError([error("WS04", f"'{stray[0]}' is not a setting of the {settings.backend} state backend",
                                 path, p.line, p.col,
                                 hint="backend local takes path; backend s3 takes bucket, key, region, endpoint_url")])
    state_path = settings.path or os.path.join(base, ".jsctl", "state.json")
    catalog = os.path.join(base, data["catalog"]) if data.get("catalog") else None
    return Workspace(base, os.path.abspath(path), tuple(clusters), state_path, catalog, data.get("budget"),
                     tuple(data.get("prefer") or ()), settings)


def jsctl_extras() -> list[str]:
    """The extras the installed jsctl distribution declares (its metadata's Provides-Extra)."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        return sorted(metadata("jsctl").get_all("Provides-Extra") or [])
    except PackageNotFoundError:  # run from a source tree that was never installed
        return []


def provider_install_hint(name: str, installed: list[str]) -> str:
    """How to get a provider that is not installed: the installed ones, an extra of jsctl only if one
    by that name (or its first word: 'aws' for 'aws-batch') exists, else how a provider package is
    found (the 'jsctl.providers' entry-point group)."""
    extras = jsctl_extras()
    head = name.replace("_", "-").split("-", 1)[0]
    extra = next((e for e in (name, head) if e in extras), None)
    text = "installed providers: " + (", ".join(installed) or "none")
    if extra:
        return text + f"; if '{name}' is a provider of jsctl's '{extra}' extra: pip install 'jsctl[{extra}]'"
    have = f"jsctl's extras ({', '.join(extras)}) bring" if extras else "jsctl has no extras that bring"
    return (text + f"; {have} no provider '{name}': a provider is a package that registers itself in the "
            "'jsctl.providers' entry-point group; install that package into this environment "
            "(docs/providers.md)")


def check_clusters(doc: Document, providers: Mapping[str, SchemaSource]) -> list[Diagnostic]:
    """Each cluster's provider is installed and its settings pass the provider's schema (positioned)."""
    out: list[Diagnostic] = []
    installed = sorted(providers)
    for i, c in enumerate(doc.data.get("clusters") or []):
        name = c["provider"]
        if name not in providers:
            p = doc.where(("clusters", i, "provider"))
            out.append(error("WS02", f"unknown provider '{name}'{did_you_mean(name, installed)}", doc.path,
                             p.line, p.col, hint=provider_install_hint(name, installed), length=len(name)))
            continue
        settings = {k: v for k, v in c.items() if k not in CLUSTER_KEYS}
        found = providers[name]
        try:
            out.extend(schema.validate_part(doc, found() if callable(found) else found, settings, ("clusters", i)))
        except Exception as exc:  # jsonschema (imported only if a check needs it) on the provider's bug: say whose
            from jsonschema.exceptions import SchemaError

            if not isinstance(exc, SchemaError):
                raise
            p = doc.where(("clusters", i, "provider"))
            out.append(error("WS03", f"provider '{name}' has an invalid settings schema: {exc.message}",
                             doc.path, p.line, p.col))
    return out
