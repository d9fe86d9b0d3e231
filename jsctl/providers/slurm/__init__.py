"""The Slurm provider: batch scripts from a Jinja2 template, submitted with sbatch (here or over ssh)."""
from jsctl.providers.slurm.provider import SlurmProvider

__all__ = ["SlurmProvider"]
