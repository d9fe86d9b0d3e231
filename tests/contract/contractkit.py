"""Harnesses for the provider contract suite: one per provider, each a workspace with one cluster of
that provider, a small real job for it, and its client (a module name of its own: conftest.py is
ambiguous between test directories).

A new provider passes the suite by adding a Harness subclass here and its name to HARNESSES.
"""
from __future__ import annotations

import hashlib
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
K8S_EXAMPLES = ROOT / "examples" / "kubernetes"

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
    image: str | None = None  # the image a job names where the engine needs one (engines here never pull it)
    long_label: tuple[str, str] | None = None  # a label that keeps an emulated job running (for jobs that sleep)

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
        replaces the compute section, `extra` adds top-level sections (strategy: ...). With `image`, the
        job names it; with `long_label`, a job that sleeps carries it."""
        if self.long_label and any("sleep" in word for word in command):
            labels = {self.long_label[0]: self.long_label[1], **(labels or {})}
        text = f"version: jetstream.v1\njob:\n  name: {name}\n"
        if labels:
            text += "  labels:\n" + "".join(f"    {k}: {yaml_str(v)}\n" for k, v in labels.items())
        text += compute if compute is not None else self.compute(gpus)
        text += extra
        if env or secrets or self.image:
            text += "environment:\n"
            if self.image:
                text += f"  image: {self.image}\n"
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

    def emulate_node(self, handle: JobHandle) -> None:
        """Engines whose nodes run no process (kwok) play the node's part here, once the job has run:
        run its command as the node would have (KubernetesHarness). Others: nothing to do."""

    logs_unavailable: str | None = None  # why the engine's logs cannot show what a job printed, if so
    runs_no_processes: str | None = None  # why the engine's nodes start no process of a job, if so

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


class KubernetesHarness(Harness):
    """The CI control plane of scripts/k8s-up.sh (kube-apiserver, controllers, kwok's fake nodes), each
    workspace in a namespace of its own (created in setup, deleted in cleanup): job ids are the same in
    two workspaces, and so would be the object names in one namespace.

    kwok runs no container. Pods go Running, and pods of a Job complete after about 3 s; a `sleeper`
    carries the label `kwok-run: long` so that it runs until deleted. For the jobs that must have run
    (the dump jobs), `emulate_node` plays the kubelet's part on this machine for the index-0 pod: it
    reads the Pod as the apiserver holds it, resolves its env (values, secretKeyRef from the real Secret,
    fieldRef, `$(VAR)` expansion as the kubelet does) and runs its command and args here with that env
    (the image is ignored). What a job prints is not what `kubectl logs` shows (kwok answers a fixed
    line), so the log check of the CLI test is skipped for this harness, with that reason."""

    provider = "kubernetes"
    cluster = "k8s"
    timeout = 60.0
    image = "python:3.11-slim"  # never pulled: kwok starts nothing
    long_label = ("kwok-run", "long")
    logs_unavailable = ("kwok's fake nodes run no container: `kubectl logs` answers kwok's fixed line, not what "
                        "the job printed")
    runs_no_processes = "kwok's fake nodes run no container (emulate_node plays one pod's part, not a group's)"

    def __init__(self, ws: Path) -> None:
        super().__init__(ws)
        self.namespace = "jsct-" + hashlib.sha256(str(ws.resolve()).encode()).hexdigest()[:12]

    @staticmethod
    def unreachable() -> str | None:
        return _k8sci().unreachable()

    def inventory(self) -> str:
        text = (K8S_EXAMPLES / "jsctl.yaml").read_text(encoding="utf-8")
        assert "namespace: jsctl-ci" in text
        return text.replace("namespace: jsctl-ci", f"namespace: {self.namespace}") \
            .replace("kubeconfig: /tmp/jsctl-k8s/kubeconfig", f"kubeconfig: {_k8sci().KUBECONFIG}")

    def setup(self) -> None:
        super().setup()
        _k8sci().kubectl("create", "namespace", self.namespace, namespace=None)

    def _api(self):
        return self.client().api()

    def emulate_node(self, handle: JobHandle) -> None:
        kubelet = _kubelet()
        api = self._api()
        ns, _, name = handle.id.split("/")
        pods = api.request("GET", f"/api/v1/namespaces/{ns}/pods",
                           {"labelSelector": f"jsctl.dev/job-id={name}"})["items"]
        assert pods, f"{handle} has no pods"
        from jsctl.providers.kubernetes.livestatus import pod_index

        pod = sorted(pods, key=pod_index)[0]

        def read(kind: str, obj: str) -> dict:
            plural = {"Secret": "secrets", "ConfigMap": "configmaps"}[kind]
            return api.request("GET", f"/api/v1/namespaces/{ns}/{plural}/{obj}")

        res = kubelet.run_container(pod, read, cwd=str(self.ws), timeout=self.timeout)
        assert res.returncode == 0, (res.returncode, res.stdout, res.stderr)

    def received(self, handle: JobHandle, artifact: RenderedArtifact) -> str:
        """Every object of the manifest as the apiserver holds it: each field the manifest sets must read
        back unchanged (the apiserver adds defaults and status beside them); then the digest of the
        manifest, else of what was read back."""
        import yaml

        api = self._api()
        files = dict(artifact.files)
        docs = [d for d in yaml.safe_load_all(files[artifact.request.manifest]) if d]
        held = []
        for d in docs:
            meta = d["metadata"]
            obj = api.request("GET", api.path(d["apiVersion"], d["kind"], meta.get("namespace") or
                                              artifact.request.namespace, meta["name"]))
            held.append(obj)
        differences = [diff for d, o in zip(docs, held) for diff in subset_differences(d, o, d["kind"])]
        if not differences:
            return artifact.digest
        return hashlib.sha256(json.dumps(held, sort_keys=True).encode()).hexdigest() + " " + "; ".join(differences)

    def jobs_named(self, job_id: str) -> list[str]:
        res = _k8sci().kubectl("get", "jobs.batch,jobsets.jobset.x-k8s.io", "-l", f"jsctl.dev/job-id={job_id}",
                               "-o", "name", namespace=self.namespace)
        return res.stdout.split()

    def unknown_handle(self) -> JobHandle:
        return JobHandle("kubernetes", self.cluster, f"{self.namespace}/job.v1.batch/js-nosuchjob-0000")

    def cleanup(self, handles: list[str]) -> None:
        _k8sci().kubectl("delete", "namespace", self.namespace, "--wait=false", check=False, namespace=None)


def subset_differences(want, got, where: str) -> list[str]:
    """Where `got` (read back) differs from `want` (as rendered) in a field `want` sets."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{where}: {got!r} is not a mapping"]
        return [d for k, v in want.items() for d in subset_differences(v, got.get(k), f"{where}.{k}")]
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return [f"{where}: {got!r} != {want!r}"]
        return [d for i, (a, b) in enumerate(zip(want, got)) for d in subset_differences(a, b, f"{where}[{i}]")]
    return [] if want == got else [f"{where}: {got!r} != {want!r}"]


def _k8sci():
    import k8sci

    return k8sci


def _kubelet():
    import kubelet  # tests/kubelet.py: the kubelet's part, played here

    return kubelet


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


HARNESSES: dict[str, type[Harness]] = {"local": LocalHarness, "slurm": SlurmHarness, "testcloud": TestCloudHarness,
                                       "kubernetes": KubernetesHarness}


def _cloud_harnesses() -> None:
    """The cloud providers' harnesses, each in a module of its own beside this one (`HARNESS`)."""
    import importlib

    for module, provider in (("harness_aws", "aws-batch"), ("harness_gcp", "gcp-batch"), ("harness_azure", "azure-ml")):
        try:
            HARNESSES[provider] = importlib.import_module(module).HARNESS
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise


_cloud_harnesses()
INSTALLED = registry.names()  # every provider of the `jsctl.providers` entry points
PROVIDERS = [name for name in INSTALLED if name in HARNESSES]
