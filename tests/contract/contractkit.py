"""Harnesses for the provider contract suite: one per provider, each a workspace with one cluster of
that provider, a small real job for it, and its client (a module name of its own: conftest.py is
ambiguous between test directories).

A new provider passes the suite by adding a Harness subclass here and its name to HARNESSES.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from jsctl.model.artifact import RenderedArtifact
from jsctl.model.status import JobHandle, LiveStatus
from jsctl.providers import registry
import slurmci
from slurmci import wait_for

ROOT = Path(__file__).resolve().parents[2]
SLURM_EXAMPLES = ROOT / "examples" / "slurm"

# The launch contract: what every job sees, whatever runs it (docs/launch-contract.md).
LAUNCH_NAMES = ("JOB_ID", "JETSTREAM_JOB_ID", "JETSTREAM_ADDRESS", "JETSTREAM_NNODES", "JETSTREAM_GPUS_PER_NODE",
                "JETSTREAM_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
# torchrun's own option variables, for a command that runs torchrun itself (issue 9, item 4).
PET_NAMES = ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_RDZV_ENDPOINT", "PET_RDZV_BACKEND", "PET_RDZV_ID")

# Writes its argv and the variables named in $WANT to the file $DUMP (one per node: $DUMP.<NODE_RANK>
# when NODE_RANK is set by the engine), then exits 0.
DUMP = ("import json, os, sys; rank = os.environ.get('NODE_RANK') or os.environ.get('JETSTREAM_NODE_RANK') or '0'; "
        "json.dump({'argv': sys.argv[1:], 'env': {k: os.environ.get(k) for k in os.environ['WANT'].split(',')}}, "
        "open(os.environ['DUMP'] + '.' + rank, 'w'))")

TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")


def yaml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a YAML double-quoted scalar


class Harness:
    """One provider under test. Subclasses say how its workspace, jobs and engine look."""

    provider = ""
    cluster = ""
    timeout = 60.0  # seconds a small job may take to finish
    labels_variable: str | None = None  # where the engine hands the job its labels (JSON), if it does

    def __init__(self, ws: Path) -> None:
        self.ws = ws

    # ---- the workspace ----------------------------------------------------------------------------
    def inventory(self) -> str:
        raise NotImplementedError

    def setup(self) -> None:
        (self.ws / "jsctl.yaml").write_text(self.inventory(), encoding="utf-8")

    def compute(self, gpus: bool = False) -> str:
        """The job file's `compute:` section: a CPU job, or a small GPU job for this provider."""
        if gpus:
            return ("compute:\n  resources:\n    gpu:\n      count: 2\n    memory:\n      per_gpu: 256Mi\n"
                    "  time_limit: 10m\n")
        return "compute:\n  resources:\n    cpu:\n      count: 1\n    memory:\n      total: 128Mi\n  time_limit: 10m\n"

    def multinode_compute(self) -> str:
        """Two workers, on two nodes where the provider has more than one (the local provider has one)."""
        return self.compute(gpus=True)

    def job(self, name: str, command: list[str], gpus: bool = False, env: dict | None = None,
            secrets: tuple[str, ...] = (), labels: dict | None = None, compute: str | None = None,
            extra: str = "") -> str:
        """A job file: `command` (exec form), env values and labels written as JSON strings; `compute`
        replaces the compute section, `extra` adds top-level sections (strategy: ...)."""
        text = f"version: jetstream.v1\njob:\n  name: {name}\n"
        if labels:
            text += "  labels:\n" + "".join(f"    {k}: {yaml_str(v)}\n" for k, v in labels.items())
        text += compute if compute is not None else self.compute(gpus)
        text += extra
        if env or secrets:
            text += "environment:\n"
            if env:
                text += "  env_vars:\n" + "".join(f"    {k}: {yaml_str(v)}\n" for k, v in env.items())
            if secrets:
                text += "  secrets: [" + ", ".join(secrets) + "]\n"
        text += "lifecycle:\n  command: [" + ", ".join(yaml_str(a) for a in command) + "]\n"
        return text

    def dump_job(self, name: str, want: list[str], args: list[str] = (), gpus: bool = False, env: dict | None = None,
                 secrets: tuple[str, ...] = (), labels: dict | None = None) -> tuple[str, Path]:
        """A job that writes its argv and the named variables to a file; (job text, that file's prefix)."""
        out = self.ws / "dump" / name
        out.parent.mkdir(parents=True, exist_ok=True)
        env = {"WANT": ",".join(want), "DUMP": str(out), **(env or {})}
        return self.job(name, [sys.executable, "-c", DUMP, *args], gpus, env, secrets, labels), out

    def sleeper(self, name: str) -> str:
        return self.job(name, ["sleep", "60"])

    # ---- the engine -------------------------------------------------------------------------------
    def client(self):
        from jsctl.config import workspace

        w = workspace.load(str(self.ws / "jsctl.yaml"))
        return registry.get(self.provider).client(w.cluster(self.cluster), str(self.ws))

    def received(self, handle: JobHandle, artifact: RenderedArtifact) -> str:
        """The digest of what the engine holds for this job, read back from the engine's side."""
        raise NotImplementedError

    def jobs_named(self, job_id: str) -> list[str]:
        """The engine's jobs for a jsctl job id (any state)."""
        raise NotImplementedError

    def unknown_handle(self) -> JobHandle:
        return JobHandle(self.provider, self.cluster, "js-nosuchjob-0000")

    def wait(self, client, handle: JobHandle, phases=TERMINAL, timeout: float | None = None) -> LiveStatus:
        return wait_for(lambda: (s := client.refresh([handle])[handle]).phase in phases and s,
                        timeout or self.timeout, what=f"{handle} to be {'/'.join(phases)}")

    def files_to_search(self) -> list[Path]:
        """Every file jsctl or the engine wrote for these jobs: for the secret check."""
        return [p for p in self.ws.rglob("*") if p.is_file()]

    def cleanup(self, handles: list[str]) -> None:
        client = self.client()
        for text in handles:
            try:
                client.cancel(JobHandle.parse(text))
            except Exception:  # noqa: BLE001 - best effort: never leave jobs running
                pass


class LocalHarness(Harness):
    provider = "local"
    cluster = "local"

    def inventory(self) -> str:
        return "version: jetstream.v1\nclusters:\n  - name: local\n    provider: local\n    max_workers: 2\n"

    def _run_dir(self, ident: str) -> Path:
        return self.ws / ".jsctl" / "runs" / ident

    def received(self, handle: JobHandle, artifact: RenderedArtifact) -> str:
        directory = self._run_dir(handle.id)
        files = tuple((name, (directory / name).read_text(encoding="utf-8")) for name, _ in artifact.files)
        request = registry.get("local").request_type().from_dict(json.loads(dict(files)["run.json"]))
        return RenderedArtifact(artifact.kind, artifact.job_id, files, request, "").digest

    def jobs_named(self, job_id: str) -> list[str]:
        return [job_id] if self._run_dir(job_id).exists() else []


class SlurmHarness(Harness):
    provider = "slurm"
    cluster = "ci"
    timeout = 120.0

    @staticmethod
    def unreachable() -> str | None:
        return slurmci.unreachable()

    def inventory(self) -> str:
        text = (SLURM_EXAMPLES / "jsctl.yaml").read_text(encoding="utf-8")
        return text.replace("/tmp/jsctl-slurm/shared", str(self.ws / "shared"))

    def received(self, handle: JobHandle, artifact: RenderedArtifact) -> str:
        """The batch script as slurmctld stored it (scontrol write batch_script) and the job's comment,
        which carries the script's hash."""
        res = subprocess.run(["scontrol", "write", "batch_script", handle.id, "-"], capture_output=True, text=True,
                             timeout=30)
        assert res.returncode == 0, res.stderr
        comment = subprocess.run(["squeue", "-h", "-j", handle.id, "-o", "%k"], capture_output=True, text=True,
                                 timeout=30).stdout.strip()
        planned = getattr(artifact.request, "comment", None)  # jsctl:<address>@<generation>:<script hash>
        if comment and planned:  # still queued or running: Slurm holds the planned comment
            assert comment == planned, (comment, planned)
        (name, _), = artifact.files
        return RenderedArtifact(artifact.kind, artifact.job_id, ((name, res.stdout),), artifact.request, "").digest

    def jobs_named(self, job_id: str) -> list[str]:
        res = subprocess.run(["squeue", "-h", "-n", job_id, "-o", "%i"], capture_output=True, text=True, timeout=30)
        return res.stdout.split()

    def unknown_handle(self) -> JobHandle:
        return JobHandle("slurm", self.cluster, "99999999")

    def multinode_compute(self) -> str:
        return ("compute:\n  resources:\n    gpu:\n      count: 2\n      per_node: 1\n    memory:\n"
                "      per_gpu: 512Mi\n  time_limit: 10m\n")

    def sleeper(self, name: str) -> str:
        return self.job(name, ["sh", "-c", "sleep 60"])

    def cleanup(self, handles: list[str]) -> None:
        ids = [JobHandle.parse(h).id for h in handles]
        if ids:
            subprocess.run(["scancel", *ids], capture_output=True)


class TestCloudHarness(Harness):
    __test__ = False
    provider = "testcloud"
    cluster = "tc"
    labels_variable = "TESTCLOUD_LABELS"

    def inventory(self) -> str:
        return ("version: jetstream.v1\nclusters:\n  - name: tc\n    provider: testcloud\n    cloud: aws\n"
                "    region: us-east-1\n    instance_types: [g5.xlarge, p4de.24xlarge]\n    root: .testcloud\n")

    def compute(self, gpus: bool = False) -> str:
        if gpus:
            return "compute:\n  resources:\n    gpu:\n      type: a100-80gb\n      count: 8\n  time_limit: 10m\n"
        return super().compute(gpus)

    def multinode_compute(self) -> str:
        return ("compute:\n  resources:\n    gpu:\n      type: a10g\n      count: 2\n      per_node: 1\n"
                "  time_limit: 10m\n")

    def _jobs(self) -> Path:
        return self.ws / ".testcloud" / "jobs"

    def received(self, handle: JobHandle, artifact: RenderedArtifact) -> str:
        sent = json.loads((self._jobs() / handle.id / "submitted.json").read_text(encoding="utf-8"))
        request = registry.get("testcloud").request_type().from_dict(sent["request"])
        return RenderedArtifact(sent["kind"], sent["job_id"], tuple((a, b) for a, b in sent["files"]), request,
                                "").digest

    def jobs_named(self, job_id: str) -> list[str]:
        return sorted(p.name for p in self._jobs().glob(f"{job_id}.*")) if self._jobs().exists() else []


# ---- reading a workspace --------------------------------------------------------------------------

def write_job(h: Harness, name: str, text: str) -> Path:
    path = h.ws / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def state(h: Harness) -> dict:
    return json.loads((h.ws / ".jsctl" / "state.json").read_text(encoding="utf-8"))


def record(h: Harness, address: str) -> dict:
    return state(h)["resources"][address]


def wait_record(h: Harness, address: str, phases=TERMINAL, timeout: float | None = None):
    handle = JobHandle.parse(record(h, address)["handle"])
    return handle, h.wait(h.client(), handle, phases, timeout)


HARNESSES: dict[str, type[Harness]] = {"local": LocalHarness, "slurm": SlurmHarness, "testcloud": TestCloudHarness}
INSTALLED = registry.names()  # every provider of the `jsctl.providers` entry points
PROVIDERS = [name for name in INSTALLED if name in HARNESSES]
