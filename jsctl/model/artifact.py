"""What a provider renders for a job, and its verdict on a change."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class RenderedArtifact:
    """The exact thing apply sends: files (a script, a manifest) and a request body."""

    kind: str  # "local-run", "sbatch-script", ...
    job_id: str
    files: tuple[tuple[str, str], ...]  # (name, content)
    request: Mapping[str, Any]
    summary: str  # "sbatch script, 58 lines"
    notes: tuple[str, ...] = ()  # what the plan should say (mount mappings, no container runtime ...)

    @property
    def digest(self) -> str:
        body = json.dumps({"kind": self.kind, "files": self.files, "request": self.request},
                          sort_keys=True, default=str)
        return hashlib.sha256(body.encode()).hexdigest()

    def to_dict(self) -> dict:
        return {"kind": self.kind, "job_id": self.job_id, "files": [list(f) for f in self.files],
                "request": dict(self.request), "summary": self.summary, "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RenderedArtifact":
        return cls(d["kind"], d["job_id"], tuple((a, b) for a, b in d["files"]), d["request"], d["summary"],
                   tuple(d.get("notes", ())))


@dataclass(frozen=True)
class Change:
    """The provider's verdict on a changed artifact: update in place, or replace (with reasons)."""

    action: str  # "no-op" | "update" | "replace"
    reasons: tuple[str, ...] = ()
