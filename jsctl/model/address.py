"""Addresses and deterministic job ids: same address and generation, same id."""
from __future__ import annotations

import hashlib

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def job_address(name: str, workflow: str | None = None) -> str:
    return f"workflow.{workflow}.job.{name}" if workflow else f"job.{name}"


def job_id(name: str, address: str, generation: int) -> str:
    """`js-<name>-<4 chars>`: a pure function of address and generation, so a re-apply can adopt."""
    digest = int.from_bytes(hashlib.sha256(f"{address}#{generation}".encode()).digest()[:8], "big")
    suffix = ""
    for _ in range(4):
        digest, r = divmod(digest, 36)
        suffix += _ALPHABET[r]
    return f"js-{name}-{suffix}"

