"""`--target` (issue 10): one that matches nothing is an error naming the addresses that exist,
with a did-you-mean; a job's bare name, its address and `workflow.W` all select."""
from __future__ import annotations

import pytest

from jsctl.config import workspace
from jsctl.config.variables import Variables
from jsctl.errors import PlanError, UsageError
from jsctl.model.state import State
from jsctl.plan.planner import PlanInputs, check_targets, make_plan
from jsctl.plan.resolve import load_sources

JOB = "version: jetstream.v1\njob: {{name: {name}}}\nlifecycle: {{command: [\"true\"]}}\n"
WORKFLOW = ("version: jetstream.v1\nworkflow:\n  name: pipe\n  jobs:\n"
            "    - {name: prep, spec: prep.yaml}\n    - {name: train, spec: train.yaml, dependsOn: [prep]}\n")


def plan(tmp_path, targets, state=None):
    for name in ("llama-7b-sft", "prep", "train"):
        (tmp_path / f"{name}.yaml").write_text(JOB.format(name=name))
    (tmp_path / "wf.yaml").write_text(WORKFLOW)
    paths = [str(tmp_path / "llama-7b-sft.yaml"), str(tmp_path / "wf.yaml")]
    sources, diags = load_sources(paths, Variables({}))
    assert not [d for d in diags if d.severity == "error"], diags
    return make_plan(PlanInputs(sources, state or State(), workspace.load(None), targets=tuple(targets),
                                files=tuple(paths)))


@pytest.mark.parametrize("target, picked", [
    ("llama-7b-sft", ["job.llama-7b-sft"]),
    ("job.llama-7b-sft", ["job.llama-7b-sft"]),
    ("train", ["workflow.pipe.job.train"]),
    ("workflow.pipe", ["workflow.pipe.job.prep", "workflow.pipe.job.train"]),
])
def test_target_selects_by_name_address_or_workflow(tmp_path, target, picked):
    assert [c.address for c in plan(tmp_path, [target]).changes] == picked


def test_target_matching_nothing_is_an_error_with_did_you_mean(tmp_path):
    with pytest.raises(UsageError) as raised:
        plan(tmp_path, ["llama-7b-stf"])
    assert "--target llama-7b-stf matches no job (did you mean 'llama-7b-sft'?)" in raised.value.message
    hint = raised.value.hint
    assert "job.llama-7b-sft" in hint and "workflow.pipe.job.train" in hint and "workflow.pipe.job.prep" in hint


def test_one_good_and_one_bad_target_is_still_an_error(tmp_path):
    with pytest.raises(UsageError) as raised:
        plan(tmp_path, ["train", "job.nothing"])
    assert "job.nothing" in raised.value.message and "train matches" not in raised.value.message


def test_state_addresses_count():
    check_targets(["old"], ["job.old"])  # a job only state knows (to destroy) is a valid target
    with pytest.raises(UsageError) as raised:
        check_targets(["x"], [])
    assert "matches no job" in raised.value.message and "no jobs" in raised.value.hint


def test_compute_target_may_name_a_pool(tmp_path):
    """`compute.target: cluster/pool` is a cluster of the workspace (its pool is placement's business)."""
    (tmp_path / "jsctl.yaml").write_text("version: jetstream.v1\nclusters:\n  - {name: here, provider: local}\n")
    (tmp_path / "j.yaml").write_text("version: jetstream.v1\njob: {name: j}\ncompute: {target: here/nowhere}\n"
                                     "lifecycle: {command: [\"true\"]}\n")
    sources, _ = load_sources([str(tmp_path / "j.yaml")], Variables({}))
    with pytest.raises(PlanError) as caught:  # placement, not the P001 check, decides: no such pool
        make_plan(PlanInputs(sources, State(), workspace.load(str(tmp_path / "jsctl.yaml")),
                             files=(str(tmp_path / "j.yaml"),)))
    assert "is not a cluster of this workspace" not in str(caught.value)
    assert "cannot be placed" in str(caught.value), caught.value


def test_a_providers_warnings_about_a_job_reach_the_plan(tmp_path):
    """validate() warnings (here: Kubernetes' job flavor does not run post_success) are printed with
    the plan, naming the job; only its errors stop it."""
    (tmp_path / "jsctl.yaml").write_text(
        "version: jetstream.v1\nclusters:\n  - name: k\n    provider: kubernetes\n    namespace: ns\n"
        "    pools: [{name: cpu, nodes: 1, cpus_per_node: 4, memory_per_node: 8Gi}]\n")
    (tmp_path / "j.yaml").write_text(
        "version: jetstream.v1\njob: {name: j}\nenvironment: {image: busybox}\n"
        "lifecycle:\n  command: [\"true\"]\n  post_success:\n    - command: [echo, done]\n")
    sources, _ = load_sources([str(tmp_path / "j.yaml")], Variables({}))
    plan = make_plan(PlanInputs(sources, State(), workspace.load(str(tmp_path / "jsctl.yaml")),
                                files=(str(tmp_path / "j.yaml"),)))
    assert [c.action for c in plan.changes] == ["create"]
    assert any(w.startswith("job.j: ") and "post_success" in w for w in plan.warnings), plan.warnings
