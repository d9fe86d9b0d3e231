"""The SDK: every CLI verb is first one of these typed functions."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from jsctl.config.diagnostics import Diagnostic, has_errors
from jsctl.config.spec import JobSpec
from jsctl.config.variables import Variables, collect
from jsctl.plan.resolve import Sources, load_sources, output_paths, resolve_job


@dataclass(frozen=True)
class Validation:
    sources: Sources
    specs: dict[str, JobSpec]  # by address
    diagnostics: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


def variables(cli_vars: Iterable[str] = (), var_files: Iterable[str] = ()) -> tuple[Variables, list[Diagnostic]]:
    return collect(cli_vars, var_files)


def validate(paths: Sequence[str], vars: Variables | None = None) -> Validation:
    """Load and check job and workflow files; every job resolved as its first generation."""
    vars = vars or Variables({})
    sources, diags = load_sources(paths, vars)
    specs: dict[str, JobSpec] = {}
    upstream: dict[str, dict[str, str]] = {}
    for source in sources.jobs:
        spec, ds = resolve_job(source, 1, upstream)
        diags.extend(ds)
        if spec is not None:
            specs[source.address] = spec
            upstream[source.address] = output_paths(spec)
    unique = tuple(dict.fromkeys(diags))
    return Validation(sources, specs, unique)
