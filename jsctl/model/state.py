"""The state document: pure data and the operations on it; no I/O here."""
from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from typing import Any

from jsctl import __version__
from jsctl.errors import StateError

FORMAT_VERSION = 1


@dataclass
class State:
    serial: int = 0
    lineage: str = field(default_factory=lambda: str(uuid.uuid4()))
    resources: dict[str, dict] = field(default_factory=dict)
    generations: dict[str, int] = field(default_factory=dict)  # survives destroy: ids are never reused

    def to_dict(self) -> dict:
        return {"format_version": FORMAT_VERSION, "serial": self.serial, "lineage": self.lineage,
                "jsctl_version": __version__, "resources": self.resources, "generations": self.generations}

    @classmethod
    def from_dict(cls, d: Any, path: str = "state") -> "State":
        if not isinstance(d, dict) or "lineage" not in d or "serial" not in d:
            raise StateError(f"{path} is not a jsctl state file (no serial/lineage)")
        version = d.get("format_version")
        if version != FORMAT_VERSION:
            raise StateError(f"{path} has format_version {version!r}; this jsctl reads {FORMAT_VERSION}",
                             hint="upgrade jsctl")
        return cls(int(d["serial"]), str(d["lineage"]), dict(d.get("resources") or {}),
                   dict(d.get("generations") or {}))

    def copy(self) -> "State":
        return copy.deepcopy(self)

    def next_generation(self, address: str) -> int:
        prior = self.resources.get(address)
        if prior:
            return int(prior["generation"])
        return int(self.generations.get(address, 0)) + 1

    def put(self, address: str, record: dict) -> None:
        self.resources[address] = record
        self.generations[address] = max(int(record["generation"]), int(self.generations.get(address, 0)))
        self.serial += 1

    def observe(self, address: str, status: dict, now: float) -> bool:
        """Record an observed status. Observations are not configuration: the serial stays, so a
        saved plan is not made stale by someone running `jsctl status`. True when it changed."""
        record = self.resources.get(address)
        if record is None:
            return False
        before = record.get("status") or {}
        merged = {**before, **{k: v for k, v in status.items() if v is not None or k == "reason"}}
        if merged == before:
            return False
        if merged.get("phase") != before.get("phase"):
            merged["previous_phase"] = before.get("phase")
            event = f"{before.get('phase', '?')} -> {merged.get('phase')}"
            if merged.get("reason"):
                event += f" ({merged['reason']})"
            record["events"] = [*(record.get("events") or []), {"time": now, "event": event}]
        record["status"] = merged
        record["updated_at"] = now
        return True

    def remove(self, address: str) -> None:
        if self.resources.pop(address, None) is not None:
            self.serial += 1

    def find(self, ref: str) -> list[str]:
        """Addresses matching a job name, address, job id or handle."""
        if ref in self.resources:
            return [ref]
        return [a for a, r in self.resources.items()
                if ref in (r.get("name"), r.get("job_id"), r.get("handle")) or a.endswith(f".job.{ref}")]
