"""Day-two operations on the real CI Slurm cluster (issue 16): pause = checkpoint through the preemption
path, then requeued and held (its GPUs free); resume = released, restored from that checkpoint; scale =
pause, the held job's new shape, resume resharded; a job without checkpoints is refused, and a
checkpoint that does not come in time leaves the job running."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import logrecords
from slurmit import QUICKSTART, wait_for

STEPS = "220"
QS = ("-v", f"QUICKSTART={QUICKSTART}", "-v", f"STEPS={STEPS}")


def apply(jsctl, *args) -> str:
    code, out, err = jsctl("apply", "--auto-approve", *args)
    assert code == 0, out + err
    return out


def two_by_two(ws: Path, name: str) -> str:
    """quickstart-4gpu.yaml (checkpoints every 20 steps, results) on 2 nodes × 2 GPUs, named `name`."""
    text = (ws / "quickstart-4gpu.yaml").read_text()
    text = text.replace("name: quickstart-4gpu", f"name: {name}").replace(
        "      count: 4\n", "      count: 4\n      per_node: 2\n")
    text = re.sub(r"(?m)^  post_success:\n(    .*\n)+", "", text)
    (ws / f"{name}.yaml").write_text(text)
    return f"{name}.yaml"


def records(jsctl, name: str) -> list[dict]:
    """The runtime's JSON lines in the job's log (any node's srun label stripped)."""
    return logrecords.parse(jsctl("logs", name, "--metrics")[1])


def events(jsctl, name: str, kind: str) -> list[dict]:
    return [r for r in records(jsctl, name) if r.get("jetstream") == "event" and r.get("event") == kind]


def losses(jsctl, name: str) -> dict[int, float]:
    return {r["step"]: r["loss"] for r in records(jsctl, name) if r.get("jetstream") == "metrics"}


def squeue(job_id: str) -> dict:
    doc = json.loads(subprocess.run(["squeue", "--json"], capture_output=True, text=True, check=True).stdout)
    return next(j for j in doc["jobs"] if str(j["job_id"]) == job_id)


def slurm_id(status: dict) -> str:
    return status["handle"].rsplit("/", 1)[1]


def test_pause_frees_the_gpus_resume_restores_and_scale_reshapes(ws, jsctl, status):
    """One 2 × 2 run paused, resumed and scaled 4 → 2 → 4 GPUs, beside an uninterrupted reference run
    (stopped once the resumed run's losses are compared with it)."""
    apply(jsctl, "-f", two_by_two(ws, "qs"), "-f", two_by_two(ws, "plain"), *QS)
    job = slurm_id(status()["qs"])
    wait_for(lambda: any(s >= 10 for s in losses(jsctl, "qs")), 120, what="training to pass step 10")

    # pause: checkpoint, requeued and held; no GPUs allocated
    code, out, err = jsctl("pause", "qs", "--timeout", "2m")
    assert code == 0, out + err
    step = int(re.search(r"at checkpoint step (\d+)", out).group(1))
    assert step >= 10 and "GPUs held: none" in out
    assert [e["step"] for e in events(jsctl, "qs", "exit")] == [step]  # reason preempted, published
    held = squeue(job)
    assert (held["job_state"], held["state_reason"]) == ("PENDING", "JobHeldUser")
    assert held["restart_cnt"] == 1 and not held.get("nodes") and not held.get("tres_alloc_str")
    shown = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True).stdout
    assert re.search(r"Reason=(JobHeldUser|job_requeued_in_held_state)", shown), shown
    assert re.search(r"\bNodeList=\s", shown), shown
    row = status()["qs"]
    assert row["phase"] == "PAUSED" and f"step {step}" in row["reason"] and "GPUs held: none" in row["reason"]
    assert (row["cost_so_far"] or 0) >= 0
    assert jsctl("pause", "qs")[0] == 0  # already paused: says so again

    # resume: released, restored from that step, continuing as if never paused
    code, out, err = jsctl("resume", "qs")
    assert code == 0, out + err
    restore = wait_for(lambda: events(jsctl, "qs", "restore"), 90, what="the restore")[-1]
    assert (restore["step"], restore["world_size"]) == (step, 4)
    common = wait_for(lambda: sorted(set(losses(jsctl, "qs")) & set(losses(jsctl, "plain")) &
                                     set(range(step + 1, step + 11))) or None, 90, what="steps run by both")
    mine, ref = losses(jsctl, "qs"), losses(jsctl, "plain")
    for s in common:  # not bitwise after a restore (float noise, ~3e-7), as after a preemption
        assert mine[s] == pytest.approx(ref[s], rel=1e-5), (s, mine[s], ref[s])
    assert jsctl("stop", "plain")[0] == 0  # the reference has served

    # scale 4 → 2: planned (1 node × 2, half the price), then checkpoint, new shape, resharded restore
    code, out, err = jsctl("scale", "qs", "--gpu-count", "2", "--auto-approve")
    assert code == 0, out + err
    assert "2 nodes × 2 GPUs → 1 node × 2 GPUs on ci/debug" in out
    assert "$2.00/h → $1.00/h (-$1.00/h)" in out
    two = wait_for(lambda: [e for e in events(jsctl, "qs", "restore") if e["world_size"] == 2], 120,
                   what="the restore on 2 GPUs")[-1]
    assert two["step"] > step and two["saved_world_size"] == 4
    shape = squeue(job)
    assert shape["tres_per_node"] == "gres:gpu:2" and shape["node_count"] == 1
    code, out, err = jsctl("plan", "-f", "qs.yaml", *QS)
    assert code == 0, err
    assert "compute.resources.gpu.count = 2 -> 4" in out  # the file still says 4: the plan shows it

    # and back to 4: 2 nodes × 2 again
    code, out, err = jsctl("scale", "qs", "--gpu-count", "4", "--auto-approve")
    assert code == 0, out + err
    assert "1 node × 2 GPUs → 2 nodes × 2 GPUs" in out and "(+$1.00/h)" in out
    four = wait_for(lambda: [e for e in events(jsctl, "qs", "restore") if e["world_size"] == 4
                             and e["step"] > two["step"]], 120, what="the restore on 4 GPUs")[-1]
    assert four["saved_world_size"] == 2
    done = wait_for(lambda: (s := status()["qs"])["phase"] in ("SUCCEEDED", "FAILED") and s, 180,
                    what="the scaled run to finish")
    assert done["phase"] == "SUCCEEDED", jsctl("logs", "qs")[1][-3000:]
    final = json.loads(next(ws.glob("out/js-qs-*/results/final.json")).read_text())
    assert final["world_size"] == 4 and final["step"] == int(STEPS)


DEAF = """\
version: jetstream.v1
job:
  name: deaf
compute:
  resources:
    cpu:
      count: 1
storage:
  outputs:
    - name: checkpoints
      path: ${OUT:-out}/${JOB_ID}/checkpoints
      policy:
        keep_latest: 1
lifecycle:
  command: [bash, -c, 'trap "" USR1; echo deaf started; sleep 120']
"""


def test_pause_refuses_without_checkpoints_and_keeps_a_job_that_does_not_checkpoint_running(ws, jsctl, status):
    (ws / "deaf.yaml").write_text(DEAF)
    apply(jsctl, "-f", "sleeper.yaml", "-f", "deaf.yaml")
    wait_for(lambda: all(status()[n]["phase"] == "RUNNING" for n in ("sleeper", "deaf")) and
             "deaf started" in jsctl("logs", "deaf")[1], 60, what="both jobs to run")
    code, out, err = jsctl("pause", "sleeper")
    assert code == 1 and "writes no checkpoints" in err and "--force" in err, out + err
    assert status()["sleeper"]["phase"] == "RUNNING"

    code, out, err = jsctl("pause", "deaf", "--timeout", "3s")  # SIGUSR1 reaches it, it saves nothing
    assert code == 1 and "did not complete a checkpoint within 3s" in err and "keeps running" in err, out + err
    assert status()["deaf"]["phase"] == "RUNNING"

    code, out, err = jsctl("pause", "sleeper", "--force")
    assert code == 0 and "progress is lost" in out and "GPUs held: none" in out, out + err
    held = squeue(slurm_id(status()["sleeper"]))
    assert (held["job_state"], held["state_reason"]) == ("PENDING", "JobHeldUser")
    assert status()["sleeper"]["phase"] == "PAUSED"
