"""jsctl on the real CI Slurm cluster, through the CLI: workflows with Slurm dependencies, failure
propagation, stop, drift, torchrun across GPUs and nodes, and preemption → checkpoint → requeue →
resume."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from slurmit import QUICKSTART, wait_for

QS = ("-v", f"QUICKSTART={QUICKSTART}", "-v", "STEPS=150")


def apply(jsctl, *args):
    code, out, err = jsctl("apply", "--auto-approve", *args)
    assert code == 0, out + err
    return out


def slurm_id(record: dict) -> str:
    return record["handle"].rsplit("/", 1)[1]


def test_workflow_runs_in_order_with_slurm_dependencies(ws, jsctl, wait_done):
    code, out, err = jsctl("plan", "-f", "pipeline.yaml")
    assert code == 0, err
    assert "note: after workflow.ci-pipeline.job.data-prep (sbatch --dependency=afterok" in out
    assert "note: after workflow.ci-pipeline.job.fine-tune" in out
    out = apply(jsctl, "-f", "pipeline.yaml")
    assert out.count("submitted slurm://ci/") == 3  # all at once: Slurm runs the DAG without jsctl
    jobs = wait_done(["data-prep", "fine-tune", "evaluate"])
    assert {n: j["phase"] for n, j in jobs.items()} == {"data-prep": "SUCCEEDED", "fine-tune": "SUCCEEDED",
                                                         "evaluate": "SUCCEEDED"}
    out_dir = ws / "out"
    done = float(next(out_dir.glob("js-data-prep-*/processed/done")).read_text())
    tuned = float(next(out_dir.glob("js-fine-tune-*/model/started")).read_text())
    evaluated = float(next(out_dir.glob("js-evaluate-*/report/started")).read_text())
    assert done < tuned < evaluated
    assert next(out_dir.glob("js-fine-tune-*/model/model.txt")).read_text() == "rows: 3\ngpus 0,1\n"
    assert next(out_dir.glob("js-evaluate-*/report/lines.txt")).read_text().strip() == "2"


def test_failed_middle_job_cancels_the_last(ws, jsctl, wait_done):
    apply(jsctl, "-f", "pipeline.yaml", "-v", "FINE_TUNE_EXIT=3")
    jobs = wait_done(["data-prep", "fine-tune", "evaluate"])
    assert jobs["data-prep"]["phase"] == "SUCCEEDED"
    assert (jobs["fine-tune"]["phase"], jobs["fine-tune"]["exit_code"]) == ("FAILED", 3)
    assert jobs["evaluate"]["phase"] == "CANCELLED"
    assert "upstream job did not succeed" in jobs["evaluate"]["reason"]
    assert f"afterok:{slurm_id(jobs['fine-tune'])}(failed)" in jobs["evaluate"]["reason"]
    code, out, _ = jsctl("status")
    assert "CANCELLED" in out and "upstream job did not succeed" in out


def test_stop_and_drift(ws, jsctl, status):
    apply(jsctl, "-f", "sleeper.yaml")
    wait_for(lambda: status()["sleeper"]["phase"] == "RUNNING", 60, what="sleeper to run")
    # state keeps the batch script's digest; describe shows the script as Slurm holds it
    code, out, err = jsctl("describe", "sleeper")
    assert code == 0 and "#!/bin/bash" in out and "#SBATCH" in out and "changed since" not in out, out + err
    code, out, err = jsctl("stop", "sleeper")
    assert code == 0 and "Stopped" in out, err
    wait_for(lambda: status()["sleeper"]["engine_state"] == "CANCELLED", 30, what="scancel")
    assert jsctl("stop", "sleeper")[0] == 0  # idempotent

    # drift: cancelled behind jsctl's back shows in the next plan, and the job is planned again
    apply(jsctl, "-f", "sleeper.yaml")
    job = wait_for(lambda: (s := status()["sleeper"])["phase"] == "RUNNING" and s, 60, what="the new sleeper")
    subprocess.run(["scancel", slurm_id(job)], check=True)
    wait_for(lambda: "JobState=CANCELLED" in scontrol_job(slurm_id(job)), 30, what="the scancel")
    code, out, err = jsctl("plan", "-f", "sleeper.yaml")  # (jsctl status would record the new phase)
    assert code == 0, err
    assert "Objects have changed outside of jsctl" in out
    assert 'status = "RUNNING" -> "CANCELLED" (slurm: CANCELLED)' in out
    assert "job.sleeper must be replaced" in out


def scontrol_job(job_id: str) -> str:
    return subprocess.run(["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True).stdout


def final(ws: Path, name: str) -> dict:
    return json.loads(next(ws.glob(f"out/js-{name}-*/results/final.json")).read_text())


@pytest.fixture(scope="module")
def reference_loss(tmp_path_factory):
    """The quickstart's final loss with 4 workers on the local provider: what Slurm must reproduce."""
    import os

    from click.testing import CliRunner

    from jsctl.cli import cli

    d = tmp_path_factory.mktemp("local")
    (d / "jsctl.yaml").write_text("version: jetstream.v1\nclusters:\n  - {name: local, provider: local, "
                                  "max_workers: 4}\n")
    (d / "job.yaml").write_text((Path(__file__).resolve().parents[3] / "examples" / "slurm" /
                                 "quickstart-4gpu.yaml").read_text())
    old = os.getcwd()
    os.chdir(d)
    try:
        run = CliRunner().invoke(cli, ["apply", "--auto-approve", "-f", "job.yaml", *QS], catch_exceptions=False)
        assert run.exit_code == 0, run.output

        def done():
            res = CliRunner().invoke(cli, ["status", "--json"], catch_exceptions=False)
            phase = json.loads(res.stdout)["jobs"][0]["phase"]
            return phase if phase in ("SUCCEEDED", "FAILED", "CANCELLED") else None
        assert wait_for(done, 180, 1, "the local quickstart") == "SUCCEEDED"
        return final(d, "quickstart-4gpu")["final_loss"]
    finally:
        os.chdir(old)


def test_torchrun_4_workers_on_one_node_and_across_two(ws, jsctl, wait_done, reference_loss):
    apply(jsctl, "-f", "quickstart-2x2.yaml", "-f", "quickstart-4gpu.yaml", *QS)
    jobs = wait_done(["quickstart-2x2", "quickstart-4gpu"], 240)
    assert {n: j["phase"] for n, j in jobs.items()} == {"quickstart-2x2": "SUCCEEDED",
                                                         "quickstart-4gpu": "SUCCEEDED"}
    one, two = final(ws, "quickstart-4gpu"), final(ws, "quickstart-2x2")
    assert one["world_size"] == two["world_size"] == 4
    assert one["final_loss"] == reference_loss  # bitwise: same seeds, same world size as the local run
    assert two["final_loss"] == pytest.approx(reference_loss, rel=1e-6)
    code, out, _ = jsctl("logs", "quickstart-2x2", "--metrics")  # every line, metric lines too
    assert "on jsn[1-2]" in out and re.search(r"^1: ", out, re.M)
    code, node2, _ = jsctl("logs", "quickstart-2x2", "--node", "jsn2")
    assert code == 0 and node2 and not re.search(r"^\d+: ", node2, re.M)
    code, tail, _ = jsctl("logs", "quickstart-4gpu", "--tail", "7")  # the post_success hook's cat final.json
    assert tail.splitlines()[0] == "jsctl: the command ended with exit 0" and '"world_size": 4' in tail


def test_preemption_checkpoints_requeues_and_resumes(ws, jsctl, status, reference_loss):
    apply(jsctl, "-f", "quickstart-4gpu.yaml", *QS)
    job = status()["quickstart-4gpu"]

    def log() -> str:
        return jsctl("logs", "quickstart-4gpu", "--metrics")[1]
    wait_for(lambda: re.search(r'"step": ([3-9]\d|1\d\d),', log()), 120, what="training to pass step 30")
    subprocess.run(["scancel", "--batch", "--signal=USR1", slurm_id(job)], check=True)
    requeued = wait_for(lambda: (s := status()["quickstart-4gpu"])["restarts"] == 1 and s["phase"] == "PENDING"
                        and s, 60, what="the requeue")
    assert "requeued" in requeued["reason"]
    code, out, err = jsctl("resume", "quickstart-4gpu")  # sooner than Slurm would (cred_expire: 10 s here)
    assert code == 0, err
    done = wait_for(lambda: (s := status()["quickstart-4gpu"])["phase"] in ("SUCCEEDED", "FAILED") and s, 180,
                    what="the resumed run")
    text = log()
    assert done["phase"] == "SUCCEEDED" and done["restarts"] == 1, (done, text[-3000:])
    assert "jsctl: SIGUSR1: preemption notice" in text
    assert "jsctl: preempted (exit 75): requeueing Slurm job" in text
    saved = int(re.search(r'"event": "preempt", "step": (\d+)', text).group(1))
    restored = int(re.search(r'"event": "restore", "step": (\d+)', text).group(1))
    assert saved == restored > 0
    # as if never interrupted (to float noise: the resumed run is not bitwise equal, about 3e-7 apart)
    assert final(ws, "quickstart-4gpu")["final_loss"] == pytest.approx(reference_loss, rel=1e-5)


# The launch contract (docs/launch-contract.md) for the commands that start torchrun themselves: the
# product description's shell and a torchrun the user wrote, each with only the options they give.
TORCHRUN_SHAPES = {
    "shell": ["bash", "-c", "torchrun --nnodes=$JETSTREAM_NNODES --nproc_per_node=$JETSTREAM_GPUS_PER_NODE "
              "${QUICKSTART} --steps ${STEPS} --output-dir $JETSTREAM_MOUNT_RESULTS"],
    "torchrun": ["torchrun", "--nnodes=2", "--nproc_per_node=2", "${QUICKSTART}", "--steps", "${STEPS}",
                 "--output-dir", "${JETSTREAM_MOUNT_RESULTS}"],
}


def two_by_two(ws: Path, name: str, command: list[str]) -> str:
    """quickstart-4gpu.yaml (checkpoints, results) on 2 nodes × 2 GPUs, running `command`."""
    text = (ws / "quickstart-4gpu.yaml").read_text()
    text = text.replace("name: quickstart-4gpu", f"name: {name}").replace(
        "      count: 4\n", "      count: 4\n      per_node: 2\n")
    text = re.sub(r"(?m)^  command: \[.*\]$", "  command: " + json.dumps(command), text, count=1)
    (ws / f"{name}.yaml").write_text(text)
    return f"{name}.yaml"


@pytest.mark.parametrize("shape", sorted(TORCHRUN_SHAPES))
def test_torchrun_in_the_command_forms_one_group_and_survives_preemption(ws, jsctl, status, reference_loss, shape):
    """Two runs at once on both nodes: one to the end, one preempted (scancel --batch --signal=USR1 as
    Slurm's --signal=B:USR1 would), requeued and resumed; both end at the plain script's loss."""
    plain, preempted = f"qs-{shape}", f"qs-{shape}-preempted"
    apply(jsctl, "-f", two_by_two(ws, plain, TORCHRUN_SHAPES[shape]),
          "-f", two_by_two(ws, preempted, TORCHRUN_SHAPES[shape]), *QS)
    job = status()[preempted]

    def log() -> str:
        return jsctl("logs", preempted, "--metrics")[1]
    wait_for(lambda: re.search(r'"step": ([3-9]\d|1\d\d),', log()), 180, what="training to pass step 30")
    subprocess.run(["scancel", "--batch", "--signal=USR1", slurm_id(job)], check=True)
    wait_for(lambda: (s := status()[preempted])["restarts"] == 1 and s["phase"] == "PENDING", 90,
             what="the requeue")
    code, out, err = jsctl("resume", preempted)
    assert code == 0, err
    done = wait_for(lambda: all((s := status())[n]["phase"] in ("SUCCEEDED", "FAILED") for n in (plain, preempted))
                    and s, 300, what="both runs")
    text = log()
    assert done[plain]["phase"] == "SUCCEEDED", jsctl("logs", plain)[1][-3000:]
    assert done[preempted]["phase"] == "SUCCEEDED" and done[preempted]["restarts"] == 1, text[-3000:]
    assert "jsctl: SIGUSR1: preemption notice" in text
    assert "jsruntime.launch: workers checkpointed after a preemption signal; exit 75" in text
    # the step's exit: 75, or 143 when the other node's 75 came first (srun --kill-on-bad-exit)
    assert re.search(r"jsctl: preempted \(exit (75|143)\): requeueing Slurm job", text), text[-3000:]
    saved = {int(s) for s in re.findall(r'"event": "preempt", "step": (\d+)', text)}
    restored = {int(s) for s in re.findall(r'"event": "restore", "step": (\d+)', text)}
    assert len(saved) == 1 and saved == restored and min(saved) > 0, (saved, restored)
    one, two = final(ws, plain), final(ws, preempted)
    assert one["world_size"] == two["world_size"] == 4  # both nodes' workers in one group
    assert one["final_loss"] == pytest.approx(reference_loss, rel=1e-6)
    assert two["final_loss"] == pytest.approx(reference_loss, rel=1e-5)  # resumed: to float noise
