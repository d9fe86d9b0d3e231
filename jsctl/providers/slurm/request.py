"""The Slurm provider's typed request: the sbatch command SlurmClient.submit runs, and the options
the batch script carries (so that a diff names the option that changed, not a regex over the script)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from jsctl.model.artifact import Request


@dataclass(frozen=True)
class SbatchRequest(Request):
    argv: tuple[str, ...]  # run with the script on standard input; apply adds --dependency for upstream jobs
    script: str  # the script's name among the artifact's files
    options: Mapping[str, str]  # the script's #SBATCH options, name → value as written ("" for a flag)
    log_dir: str  # created before submit
    workdir: str | None
    access: str  # local | ssh
    container_runtime: str  # pyxis | apptainer | none
    runtime_dir: str | None = None  # where submit stages jsruntime (the script puts it on PYTHONPATH)

    @property
    def comment(self) -> str:
        """`jsctl:<address>@<generation>:<script hash>`, as Slurm reports it back (unquoted)."""
        value = self.options.get("comment", "")
        return value[1:-1].replace('\\"', '"').replace("\\\\", "\\") if value.startswith('"') else value
