"""The contract harness for azure-ml: the fake Azure ML service of tests/integration/azure/fakeaml.py
(one per test session, in this process), each harness workspace in an Azure ML workspace of its own
(job names are unique per Azure ML workspace; two jsctl workspaces would share them in one).

The fake service runs nothing: jobs move Queued → Running → Completed by its clock (a job whose command
sleeps carries the tag `fakeaml.run: long`, so it runs until cancelled, as the real one would). For the
jobs that must have run (the dump jobs), `emulate_node` plays node 0's part here (amlnode.run_node): it
reads the job's PUT body as the service recorded it and runs its `command` with bash, in the environment
Azure ML's PyTorch distribution gives the process, with a managed-identity endpoint on the fake, so the
script fetches its secrets from the fake Key Vault as it would from the real one. The image is ignored;
the command runs on this machine's Python.
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from contractkit import Harness
from jsctl.model.artifact import RenderedArtifact
from jsctl.model.status import JobHandle

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration" / "azure"))
from amlnode import run_node  # noqa: E402
from fakeaml import FakeAml  # noqa: E402

_FAKE: FakeAml | None = None


def fake() -> FakeAml:
    global _FAKE
    if _FAKE is None:
        _FAKE = FakeAml(queued_s=0.2, run_s=1.0)
    return _FAKE


def inventory(url: str, workspace: str) -> str:
    return f"""version: jetstream.v1
clusters:
  - name: aml
    provider: azure-ml
    subscription_id: 00000000-0000-0000-0000-000000000000
    resource_group: jsctl-ci
    workspace: {workspace}
    region: eastus
    instance_types: [Standard_NC24ads_A100_v4, Standard_ND96amsr_A100_v4]
    compute:
      Standard_NC24ads_A100_v4: a100-single
      Standard_ND96amsr_A100_v4: a100-ib-cluster
    key_vault: {url}/vault
    endpoint_url: {url}
"""


class AzureMlHarness(Harness):
    __test__ = False
    provider = "azure-ml"
    cluster = "aml"
    timeout = 30.0
    image = "python:3.11-slim"  # never pulled: the stand-in runs nothing
    long_label = ("fakeaml.run", "long")
    logs_unavailable = ("the fake Azure ML service runs no process: run history's log files say so instead of "
                        "what the job printed")
    runs_no_processes = "the fake Azure ML service runs no process (emulate_node plays node 0's part, not a group's)"

    def __init__(self, ws: Path) -> None:
        super().__init__(ws)
        self.workspace = "ws-" + hashlib.sha256(str(ws.resolve()).encode()).hexdigest()[:12]

    def inventory(self) -> str:
        return inventory(fake().url, self.workspace)

    def _job(self, name: str) -> dict | None:
        return fake().jobs.get((self.workspace, name))

    def emulate_node(self, handle: JobHandle) -> None:
        job = self._job(handle.id)
        assert job is not None, f"{handle}: the fake service has no such job"
        res = run_node(job["body"], str(self.ws), fake().url, timeout=self.timeout)
        assert res.returncode == 0, (res.returncode, res.stdout, res.stderr)

    def received(self, handle: JobHandle, artifact: RenderedArtifact) -> str:
        """The job's PUT body and its environment's, as the service recorded them."""
        job = self._job(handle.id)
        req = artifact.request
        held_env = fake().environments.get(req.environment_path)
        if job is None:
            return "no such job"
        if job["body"] == req.to_dict()["body"] and held_env == req.to_dict()["environment"]:
            return artifact.digest
        return "the service holds another body"

    def jobs_named(self, job_id: str) -> list[str]:
        return [name for (ws, name), j in sorted(fake().jobs.items())
                if ws == self.workspace and (j["body"]["properties"].get("tags") or {}).get("jsctl.job-id") == job_id]


HARNESS = AzureMlHarness
