"""The quickstart really trains on the local provider, and recovers when a worker is killed."""
import json
import os
import re
import shutil
import signal
import time

import pytest

from localjobs import job_yaml, run_cli, wait_phase
from paths import EXAMPLES

from jsctl.providers.local.runs import job_processes

pytest.importorskip("torch", reason="the quickstart needs torch==2.13.0 (pip install -e '.[runtime]')")


@pytest.fixture
def quickstart(ws):
    shutil.copy(os.path.join(EXAMPLES, "quickstart.yaml"), ws / "quickstart.yaml")
    shutil.copytree(os.path.join(EXAMPLES, "quickstart"), ws / "quickstart")
    return ws


def worker_pids(run_dir) -> list[int]:
    found = []
    for pid in job_processes(str(run_dir)):
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if b"LOCAL_RANK=1" in fh.read().split(b"\0"):
                    found.append(pid)
        except OSError:
            continue
    return found


def test_quickstart_trains(quickstart):
    code, out, err = run_cli("apply", "-f", "quickstart.yaml", "--auto-approve")
    assert code == 0, err
    row = wait_phase("quickstart", timeout=120)
    assert row["phase"] == "SUCCEEDED", run_cli("logs", "quickstart")[1][-3000:]
    final = json.loads(next(quickstart.glob("out/*/results/final.json")).read_text())
    assert final["step"] == 300 and final["world_size"] == 2 and final["final_loss"] < 1.0
    assert len(list(quickstart.glob("out/*/checkpoints/step-*"))) <= 3  # keep_latest
    code, out, _ = run_cli("metrics", "quickstart")
    assert code == 0 and "step 300" in out and "loss" in out
    assert "No changes." in run_cli("plan", "-f", "quickstart.yaml")[1]


def test_killed_worker_resumes_from_checkpoint(quickstart):
    code, _, err = run_cli("apply", "-f", "quickstart.yaml", "--auto-approve", "-v", "STEPS=2000")
    assert code == 0, err
    status_file = next(quickstart.glob(".jsctl/runs/*/status.json"))
    deadline = time.time() + 90
    while time.time() < deadline and not list(quickstart.glob("out/*/checkpoints/step-*")):
        time.sleep(0.2)
    assert list(quickstart.glob("out/*/checkpoints/step-*")), "no checkpoint was written"
    workers = worker_pids(status_file.parent)
    assert workers, "no worker processes found"
    os.kill(workers[-1], signal.SIGKILL)
    row = wait_phase("quickstart", timeout=240)
    log = run_cli("logs", "quickstart", "--metrics")[1]
    assert row["phase"] == "SUCCEEDED", log[-3000:]
    assert row["restarts"] >= 1
    events = [json.loads(line) for line in log.splitlines() if line.startswith('{"jetstream": "event"')]
    resumed = [e for e in events if e.get("event") in ("restore", "restored", "resume", "resumed")]
    assert resumed and resumed[0]["step"] > 0, [e.get("event") for e in events]


def _reference_then_running(quickstart):
    """An uninterrupted 600-step run `plain` (the reference), then `quickstart` running with at least
    one checkpoint written: its job id and run directory."""
    text = (quickstart / "quickstart.yaml").read_text()
    (quickstart / "plain.yaml").write_text(text.replace("name: quickstart", "name: plain"))
    assert run_cli("apply", "-f", "plain.yaml", "--auto-approve", "-v", "STEPS=600")[0] == 0
    assert wait_phase("plain", timeout=180)["phase"] == "SUCCEEDED"
    assert run_cli("apply", "-f", "quickstart.yaml", "--auto-approve", "-v", "STEPS=600")[0] == 0
    job_id = json.loads(run_cli("status", "quickstart", "--json")[1])["jobs"][0]["job_id"]
    run_dir = quickstart / ".jsctl" / "runs" / job_id
    deadline = time.time() + 90
    while time.time() < deadline and not list(quickstart.glob(f"out/{job_id}/checkpoints/step-*")):
        time.sleep(0.2)
    return job_id, run_dir


def test_preemption_signal_requeues_and_resumes_exactly(quickstart):
    """SIGUSR1 to the running job (what Slurm's --signal sends): checkpoint, exit 75, requeue, resume;
    the result equals an uninterrupted run's."""
    job_id, run_dir = _reference_then_running(quickstart)
    launcher = json.loads((run_dir / "status.json").read_text())["child_pgid"]
    os.kill(launcher, signal.SIGUSR1)
    row = wait_phase("quickstart", timeout=180)
    log = run_cli("logs", "quickstart", "--metrics")[1]
    assert row["phase"] == "SUCCEEDED", log[-3000:]
    assert "preempted (exit 75)" in log and row["restarts"] >= 1
    final = lambda name: json.loads(next(quickstart.glob(f"out/js-{name}-*/results/final.json")).read_text())  # noqa: E731
    assert final("quickstart")["final_train_loss"] == final("plain")["final_train_loss"]
    assert final("quickstart")["final_loss"] == final("plain")["final_loss"]


def test_scale_checkpoints_and_resumes_on_the_new_shape(quickstart):
    assert run_cli("apply", "-f", "quickstart.yaml", "--auto-approve", "-v", "STEPS=1500")[0] == 0
    job_id = json.loads(run_cli("status", "quickstart", "--json")[1])["jobs"][0]["job_id"]
    deadline = time.time() + 90
    while time.time() < deadline and not list(quickstart.glob(f"out/{job_id}/checkpoints/step-*")):
        time.sleep(0.2)
    code, out, err = run_cli("scale", "quickstart", "--gpu-count", "1", "--auto-approve")
    assert code == 0, err
    row = wait_phase("quickstart", timeout=240)
    log = run_cli("logs", "quickstart", "--metrics")[1]
    assert row["phase"] == "SUCCEEDED", log[-3000:]
    assert "scaled to 1 workers" in log
    events = [json.loads(line) for line in log.splitlines() if line.startswith('{"jetstream": "event"')]
    restored = [e for e in events if e.get("event") == "restore"]
    assert restored and restored[-1]["world_size"] == 1 and restored[-1]["step"] > 0
    assert json.loads(next(quickstart.glob(f"out/{job_id}/results/final.json")).read_text())["world_size"] == 1
    code, out, _ = run_cli("plan", "-f", "quickstart.yaml", "-v", "STEPS=1500")
    assert "compute.resources.gpu.count = 1 -> 2" in out  # the file still says 2: the plan shows it


def test_tune_switches_a_running_fsdp_job_to_ddp(quickstart):
    """`jsctl tune --apply --to ddp` (issue 12, item 6): checkpoint, restart under DDP, resharded restore."""
    text = (quickstart / "quickstart.yaml").read_text()
    fsdp = "  parallelism: fsdp\n  config:\n    sharding_strategy: FULL_SHARD\n"
    (quickstart / "quickstart.yaml").write_text(text.replace("  parallelism: ddp\n", fsdp))
    assert run_cli("apply", "-f", "quickstart.yaml", "--auto-approve", "-v", "STEPS=1500")[0] == 0
    job_id = json.loads(run_cli("status", "quickstart", "--json")[1])["jobs"][0]["job_id"]
    deadline = time.time() + 90
    while time.time() < deadline and not list(quickstart.glob(f"out/{job_id}/checkpoints/step-*")):
        time.sleep(0.2)
    code, out, err = run_cli("tune", "quickstart")
    assert code == 0 and "fsdp FULL_SHARD" in out and "waiting on collectives" in out, out + err
    code, out, err = run_cli("tune", "quickstart", "--apply", "--to", "ddp")
    assert code == 0 and "to ddp" in out, out + err
    row = wait_phase("quickstart", timeout=240)
    log = run_cli("logs", "quickstart", "--metrics")[1]
    assert row["phase"] == "SUCCEEDED", log[-3000:]
    assert "strategy switched to" in log
    records = [json.loads(line) for line in log.splitlines() if line.startswith('{"jetstream": "')]
    restored = [(i, r) for i, r in enumerate(records) if r.get("event") == "restore"]
    assert restored, [r.get("event") for r in records]
    at, restore = restored[-1]
    assert restore["parallelism"] == "ddp" and restore["step"] > 0 and restore["world_size"] == 2
    after = [r for r in records[at:] if r["jetstream"] == "metrics"]
    assert after and restore["step"] < after[0]["step"] <= restore["step"] + 10 and "loss" in after[0]
    assert "comm_s" in after[0] and after[-1]["step"] == 1500
    code, out, _ = run_cli("plan", "-f", "quickstart.yaml", "-v", "STEPS=1500")
    assert "strategy.parallelism" in out and "ddp" in out, out  # the file still says fsdp: the plan shows it


def test_pause_checkpoints_frees_the_workers_and_resume_restores(quickstart):
    """`jsctl pause` (issue 16): checkpoint at step k, PAUSED with no worker alive; `jsctl resume`
    restores step k and ends with the loss of an uninterrupted run."""
    job_id, run_dir = _reference_then_running(quickstart)
    code, out, err = run_cli("pause", "quickstart", "--timeout", "2m")
    assert code == 0, out + err
    step = int(re.search(r"checkpoint step (\d+)", out).group(1))
    assert 0 < step < 600 and "GPUs held: none" in out
    row = json.loads(run_cli("status", "quickstart", "--json")[1])["jobs"][0]
    assert row["phase"] == "PAUSED" and str(step) in row["engine_state"], row
    assert f"PAUSED at step {step}; GPUs held: none" in run_cli("status", "quickstart")[1]
    assert job_processes(str(run_dir)) == []  # every worker (and launcher) is gone
    time.sleep(1)
    assert json.loads(run_cli("status", "quickstart", "--json")[1])["jobs"][0]["phase"] == "PAUSED"
    code, out, err = run_cli("resume", "quickstart")
    assert code == 0, out + err
    row = wait_phase("quickstart", timeout=240)
    log = run_cli("logs", "quickstart", "--metrics")[1]
    assert row["phase"] == "SUCCEEDED", log[-3000:]
    events = [json.loads(line) for line in log.splitlines() if line.startswith('{"jetstream": "event"')]
    restored = [e for e in events if e.get("event") == "restore"]
    assert restored and restored[-1]["step"] == step, restored
    final = lambda name: json.loads(next(quickstart.glob(f"out/js-{name}-*/results/final.json")).read_text())  # noqa: E731
    assert final("quickstart")["final_loss"] == final("plain")["final_loss"]


def test_pause_refuses_a_job_without_checkpoints_and_times_out_on_one_that_ignores_it(ws):
    (ws / "nock.yaml").write_text(job_yaml("nock", ["sleep", "60"]))
    deaf = job_yaml("deaf", ["bash", "-c", 'trap "" USR1; sleep 60'],
                    "storage:\n  outputs:\n    - name: checkpoints\n      path: ck\n      policy:\n"
                    "        keep_latest: 1\n")
    (ws / "deaf.yaml").write_text(deaf)
    assert run_cli("apply", "-f", "nock.yaml", "-f", "deaf.yaml", "--auto-approve")[0] == 0
    wait_phase("nock", ("RUNNING",), timeout=30)
    wait_phase("deaf", ("RUNNING",), timeout=30)
    time.sleep(0.5)  # bash sets its trap
    code, out, err = run_cli("pause", "nock")
    assert code == 1 and "no checkpoints" in err and "--force" in err, out + err
    assert wait_phase("nock", ("RUNNING",), timeout=5)["phase"] == "RUNNING"
    code, out, err = run_cli("pause", "nock", "--force")
    assert code == 0 and "SIGSTOP" in out, out + err
    assert json.loads(run_cli("status", "nock", "--json")[1])["jobs"][0]["phase"] == "PAUSED"
    assert run_cli("resume", "nock")[0] == 0
    assert wait_phase("nock", ("RUNNING",), timeout=5)["phase"] == "RUNNING"
    code, out, err = run_cli("pause", "deaf", "--timeout", "3s")
    assert code == 1 and "did not complete a checkpoint within 3s" in err and "keeps running" in err, out + err
    assert wait_phase("deaf", ("RUNNING",), timeout=5)["phase"] == "RUNNING"
    assert run_cli("stop", "nock")[0] == 0 and run_cli("stop", "deaf")[0] == 0
    # a paused job (workers gone, the supervisor waiting) stops cleanly
    quits = job_yaml("quits", ["bash", "-c", 'trap "exit 75" USR1; while true; do sleep 0.1; done'],
                     "storage:\n  outputs:\n    - name: checkpoints\n      path: ck2\n      policy:\n"
                     "        keep_latest: 1\n")
    (ws / "quits.yaml").write_text(quits)
    assert run_cli("apply", "-f", "quits.yaml", "--auto-approve")[0] == 0
    wait_phase("quits", ("RUNNING",), timeout=30)
    time.sleep(0.5)
    code, out, err = run_cli("pause", "quits", "--timeout", "20s")
    assert code == 0, out + err
    assert json.loads(run_cli("status", "quits", "--json")[1])["jobs"][0]["phase"] == "PAUSED"
    assert run_cli("stop", "quits")[0] == 0
    assert wait_phase("quits", timeout=20)["phase"] == "CANCELLED"
