"""Names of environment variables that are set when a job runs, so `${NAME}` waits for run time.

The core knows the engine-neutral ones (JETSTREAM_*, MASTER_ADDR, ...: `jsctl.config.variables`);
each provider declares the names its engine sets (`Provider.runtime_names()`, e.g. Slurm's
SLURM_JOB_ID), and stages receive the union over the installed providers as input.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class RuntimeNames:
    names: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()  # every name that starts with one of these

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self.names or name.startswith(self.prefixes))

    def __or__(self, other: "RuntimeNames") -> "RuntimeNames":
        return RuntimeNames(self.names | other.names, tuple(dict.fromkeys(self.prefixes + other.prefixes)))

    @classmethod
    def union(cls, items: Iterable["RuntimeNames"]) -> "RuntimeNames":
        out = cls()
        for item in items:
            out = out | item
        return out


NONE = RuntimeNames()
