"""Job addresses (`job.train`, `workflow.pipe.job.train`) and deterministic job ids."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class Address:
    """Where a job lives in the configuration: its name, and its workflow if it has one."""

    name: str
    workflow: str | None = None

    def __str__(self) -> str:
        return f"workflow.{self.workflow}.job.{self.name}" if self.workflow else f"job.{self.name}"

    @classmethod
    def parse(cls, text: str) -> "Address":
        """`job.NAME` or `workflow.W.job.NAME`; ValueError for anything else."""
        head, sep, name = text.rpartition(".job.")
        if sep and head.startswith("workflow.") and head != "workflow." and name:
            return cls(name, head.removeprefix("workflow."))
        if text.startswith("job.") and len(text) > 4:
            return cls(text[4:])
        raise ValueError(f"not a job address: {text!r} (expected job.NAME or workflow.W.job.NAME)")

    def selected_by(self, ref: str) -> bool:
        """Does `--target REF` (or a job reference on the command line) pick this job: its address,
        its name, or its workflow (`workflow.W`)?"""
        return ref in (str(self), self.name) or (self.workflow is not None and ref == f"workflow.{self.workflow}")


def job_address(name: str, workflow: str | None = None) -> str:
    return str(Address(name, workflow))


def job_id(name: str, address: str, generation: int) -> str:
    """`js-<name>-<4 chars>`: a pure function of address and generation, so a re-apply can adopt."""
    digest = int.from_bytes(hashlib.sha256(f"{address}#{generation}".encode()).digest()[:8], "big")
    suffix = ""
    for _ in range(4):
        digest, r = divmod(digest, 36)
        suffix += _ALPHABET[r]
    return f"js-{name}-{suffix}"
