"""What needs no cluster: the kubelet's `$(VAR)` expansion as the test helper plays it, the phase
mapping of the client, and that jsctl's CLI and a local or Slurm plan never import `kubernetes`."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kubelet import container_argv, container_env, expand, mapping_for
from jsctl.model.status import JobHandle
from jsctl.providers.kubernetes import livestatus


@pytest.mark.parametrize("text, out", [
    ("$(A)", "1"), ("x$(A)y", "x1y"), ("$$(A)", "$(A)"), ("$$$(A)", "$1"), ("$(MISSING)", "$(MISSING)"),
    ("$(A", "$(A"), ("$", "$"), ("a$", "a$"), ("$HOME and $$ and $1", "$HOME and $ and $1"), ("$(A)$(B)", "1two"),
    ("$()", "$()"), ("$(A)(", "1("), ("back\\slash $(B)", "back\\slash two"),
])
def test_expansion_is_the_kubelets(text, out):
    assert expand(text, mapping_for({"A": "1", "B": "two"})) == out


def test_expansion_mangles_a_dollar_before_a_multibyte_character_as_go_does():
    # Go: string(input[0]) of the byte 0xC3 is the rune U+00C3 ("Ã"); the following 0xBC stays alone
    assert expand("$ü", mapping_for({})) == ("$Ã" + "\ufffd")


def test_env_resolution_order_and_sources():
    pod = {"metadata": {"name": "p", "namespace": "n", "labels": {"l": "v"}, "annotations": {"a": "x y"}},
           "spec": {"nodeName": "node-1", "containers": [{
               "command": ["run", "$(B)"], "args": ["$(S)", "$$(B)", "$(LATER)"],
               "env": [{"name": "A", "value": "a"}, {"name": "B", "value": "$(A)-$(LATER)"},
                       {"name": "S", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "K"}}},
                       {"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['a']"}}},
                       {"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                       {"name": "LATER", "value": "z"}]}]}}

    def read(kind, name):
        assert (kind, name) == ("Secret", "sec")
        return {"data": {"K": "JCh4KQ=="}}  # "$(x)": secrets are not expanded

    env = container_env(pod, read)
    assert env == {"A": "a", "B": "a-$(LATER)", "S": "$(x)", "F": "x y", "N": "node-1", "LATER": "z"}
    assert container_argv(pod, env) == ["run", "a-$(LATER)", "$(x)", "$(B)", "z"]


def _job(conditions=(), **status):
    return {"kind": "Job", "metadata": {"name": "js-a-0000"}, "spec": {},
            "status": {"conditions": [{"type": t, "status": "True", "reason": r, "message": m}
                                      for t, r, m in conditions], **status}}


def _pod(phase, node=None, scheduled=None, exit_code=None):
    cond = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": scheduled}] \
        if scheduled else []
    cs = [{"state": {"terminated": {"exitCode": exit_code}}}] if exit_code is not None else []
    return {"metadata": {"name": f"p-{phase}"}, "spec": {"nodeName": node} if node else {},
            "status": {"phase": phase, "conditions": cond, "containerStatuses": cs}}


def test_job_phases():
    ls = livestatus.live_status
    assert ls("Job", "batch", _job([("Complete", None, None)]), []).phase == "SUCCEEDED"
    failed = ls("Job", "batch", _job([("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff "
                                                                            "limit")], failed=1),
                [_pod("Failed", "n", exit_code=1)])
    assert failed.phase == "FAILED" and failed.exit_code == 1 and "BackoffLimitExceeded" in failed.reason
    assert ls("Job", "batch", _job([("Suspended", "JobSuspended", "Job suspended")]), []).phase == "PAUSED"
    running = ls("Job", "batch", _job(active=1), [_pod("Running", "a100-0")])
    assert running.phase == "RUNNING" and running.nodes == ("a100-0",)
    waiting = ls("Job", "batch", _job(active=1), [_pod("Pending", scheduled="0/6 nodes are available")])
    assert waiting.phase == "PENDING" and waiting.engine_state == "Unschedulable"
    assert "0/6 nodes are available" in waiting.reason
    deleting = _job(active=1)
    deleting["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    assert ls("Job", "batch", deleting, []).phase == "CANCELLED"


def test_untracked_and_gone():
    vj = ls = livestatus.live_status("Job", "batch.volcano.sh", {"kind": "Job", "status": {}}, [])
    assert vj.phase == "UNKNOWN" and "not tracked" in vj.reason
    ls = livestatus.live_status("TrainJob", "trainer.kubeflow.org", {"kind": "TrainJob"}, [])
    assert ls.phase == "UNKNOWN" and "not tracked" in ls.reason
    assert livestatus.gone("Job n/x", None).phase == "UNKNOWN"
    tomb = {"metadata": {"annotations": {livestatus.PHASE_ANNOTATION: "CANCELLED"}},
            "lastTimestamp": "2026-12-01T00:00:00Z"}
    assert livestatus.gone("Job n/x", tomb).phase == "CANCELLED"


def test_handles_round_trip():
    from jsctl.providers.kubernetes.handles import Ref

    h = Ref.to_handle("ci", "ns", "jobset.x-k8s.io/v1alpha2", "JobSet", "js-a-0000")
    assert str(h) == "kubernetes://ci/ns/jobset.v1alpha2.jobset.x-k8s.io/js-a-0000"
    assert JobHandle.parse(str(h)) == h
    r = Ref.of(h)
    assert (r.namespace, r.kind, r.api_version, r.name) == ("ns", "jobset", "jobset.x-k8s.io/v1alpha2", "js-a-0000")
    core = Ref.of(Ref.to_handle("ci", "ns", "batch/v1", "Job", "j"))
    assert core.api_version == "batch/v1" and core.kind == "job"


LAZY = """
import sys
from click.testing import CliRunner
from jsctl.cli import cli
r = CliRunner()
res = r.invoke(cli, ["--help"])
assert res.exit_code == 0, res.output
for args in {plans!r}:
    res = r.invoke(cli, args)
    assert res.exit_code in (0, 2), (args, res.output)
heavy = sorted(m for m in sys.modules if m == "kubernetes" or m.startswith("kubernetes."))
print("HEAVY", heavy)
"""


def test_help_and_local_or_slurm_plans_do_not_import_kubernetes(tmp_path):
    from paths import EXAMPLES, ROOT

    (tmp_path / "jsctl.yaml").write_text(
        "version: jetstream.v1\nclusters:\n  - name: local\n    provider: local\n", encoding="utf-8")
    job = tmp_path / "a.yaml"
    job.write_text("version: jetstream.v1\njob:\n  name: a\ncompute:\n  resources:\n    cpu:\n      count: 1\n"
                   "lifecycle:\n  command: ['true']\n", encoding="utf-8")
    slurm = tmp_path / "slurm"
    slurm.mkdir()
    (slurm / "jsctl.yaml").write_text(open(f"{EXAMPLES}/slurm/jsctl.yaml").read(), encoding="utf-8")
    plans = [["plan", "-f", str(job), "--workspace", str(tmp_path / "jsctl.yaml")],
             ["plan", "-f", f"{EXAMPLES}/slurm/quickstart-4gpu.yaml", "--workspace", str(slurm / "jsctl.yaml"),
              "--refresh=false"]]
    path = os.pathsep.join([ROOT, os.path.join(ROOT, "runtime")])
    env = {**os.environ, "PYTHONPATH": path, "SLURM_CONF": str(tmp_path / "none.conf")}
    res = subprocess.run([sys.executable, "-c", LAZY.format(plans=plans)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "HEAVY []" in res.stdout, res.stdout
