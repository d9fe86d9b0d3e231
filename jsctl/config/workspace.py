"""The workspace: `jsctl.yaml` (inventory of clusters, state backend, catalog, budget) or the default."""
from __future__ import annotations

import os
from dataclasses import dataclass

from jsctl.config import schema
from jsctl.config.diagnostics import error, has_errors
from jsctl.config.loader import load_file
from jsctl.errors import ConfigError
from jsctl.model.cluster import Cluster

DEFAULT_FILE = "jsctl.yaml"


@dataclass(frozen=True)
class Workspace:
    dir: str  # absolute; relative paths in jsctl.yaml resolve here
    file: str | None  # None = the embedded default
    clusters: tuple[Cluster, ...]
    state_path: str  # absolute
    catalog: str | None = None
    budget: float | None = None
    prefer: tuple[str, ...] = ()

    def cluster(self, name: str) -> Cluster | None:
        return next((c for c in self.clusters if c.name == name), None)

    @property
    def runs_dir(self) -> str:
        return os.path.join(self.dir, ".jsctl", "runs")


def default(directory: str = ".") -> Workspace:
    d = os.path.abspath(directory)
    return Workspace(d, None, (Cluster("local", "local", {}),), os.path.join(d, ".jsctl", "state.json"))


def load(path: str | None = None) -> Workspace:
    """`--workspace FILE`, else ./jsctl.yaml if present, else the embedded default."""
    if path is None:
        if not os.path.exists(DEFAULT_FILE):
            return default(".")
        path = DEFAULT_FILE
    doc, diags = load_file(path)
    if doc is not None and not has_errors(diags):
        diags.extend(schema.validate(doc, "workspace"))
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
        settings = {k: v for k, v in c.items() if k not in ("name", "provider")}
        clusters.append(Cluster(c["name"], c["provider"], settings))
    if not clusters:
        clusters.append(Cluster("local", "local", {}))
    state = data.get("state") or {}
    state_path = os.path.join(base, state.get("path", os.path.join(".jsctl", "state.json")))
    catalog = os.path.join(base, data["catalog"]) if data.get("catalog") else None
    return Workspace(base, os.path.abspath(path), tuple(clusters), state_path, catalog, data.get("budget"),
                     tuple(data.get("prefer") or ()))
