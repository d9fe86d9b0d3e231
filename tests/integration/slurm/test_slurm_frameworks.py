"""issue 17 on the real CI Slurm cluster: the Hugging Face Trainer script of examples/frameworks
(jsruntime.hf; a tiny Llama from a config.json, generated data) under sbatch/srun on 2 nodes × 1 (fake)
GPU, one torchrun worker per node, training on the CPU with gloo. Preempted with
`scancel --batch --signal=USR1` (what Slurm's --signal=B:USR1 sends), it saves at the end of the step,
exits 75, the batch script requeues it, `jsctl resume` starts it again, it resumes from that step and
ends SUCCEEDED with bitwise the same losses as a plain run of the same job submitted beside it (the same
world size and operations on CPU); keep_latest checkpoints remain and `jsctl metrics` shows the loss
curve."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import logrecords
from slurmit import ROOT, wait_for

pytest.importorskip("transformers", reason="needs the hf extra (pip install -e '.[hf]')")
pytest.importorskip("torch", reason="needs torch==2.13.0 (pip install -e '.[runtime]')")
STEPS = 40


def two_nodes(ws: Path, name: str) -> str:
    """examples/frameworks/hf-trainer.yaml on 2 nodes × 1 GPU, named `name`."""
    text = (ws / "frameworks" / "hf-trainer.yaml").read_text()
    text = text.replace("name: hf-trainer", f"name: {name}", 1).replace(
        "      count: 2\n", "      count: 2\n      per_node: 1\n    memory:\n      per_gpu: 2Gi\n", 1)
    text = re.sub(r"(?m)^  post_success:\n(    .*\n)+", "", text)
    (ws / "frameworks" / f"{name}.yaml").write_text(text)
    return f"frameworks/{name}.yaml"


def records(jsctl, name: str) -> list[dict]:
    return logrecords.parse(jsctl("logs", name, "--metrics")[1])


def losses(recs: list[dict]) -> dict[int, float]:
    return {r["step"]: r["loss"] for r in recs if r.get("jetstream") == "metrics" and "loss" in r}


def steps_of(recs: list[dict], event: str) -> list[int]:
    return [r["step"] for r in recs if r.get("jetstream") == "event" and r.get("event") == event]


def test_hf_trainer_on_two_nodes_preempted_by_scancel_resumes_exactly(ws, jsctl, status):
    shutil.copytree(ROOT / "examples" / "frameworks", ws / "frameworks",
                    ignore=shutil.ignore_patterns("out", "__pycache__"))
    job, plain = "hf-slurm", "hf-slurm-plain"
    code, out, err = jsctl("apply", "--auto-approve", "-f", two_nodes(ws, job), "-f", two_nodes(ws, plain),
                           "-v", f"STEPS={STEPS}", "-v", "MIN_STEP_SECONDS=0.25")
    assert code == 0, out + err
    slurm_id = status()[job]["handle"].rsplit("/", 1)[1]

    def log() -> str:
        return jsctl("logs", job, "--metrics")[1]
    ckpts = ws / "frameworks" / "out" / status()[job]["job_id"] / "checkpoints"
    wait_for(lambda: list(ckpts.glob("checkpoint-*/COMPLETE")), 240, what="the first complete checkpoint")
    subprocess.run(["scancel", "--batch", "--signal=USR1", slurm_id], check=True)
    wait_for(lambda: (s := status()[job])["restarts"] == 1 and s["phase"] == "PENDING", 90, what="the requeue")
    code, out, err = jsctl("resume", job)  # sooner than Slurm would start the requeued job
    assert code == 0, err
    done = wait_for(lambda: all((s := status())[n]["phase"] in ("SUCCEEDED", "FAILED") for n in (job, plain))
                    and s, 300, what="both runs")
    text = log()
    assert done[plain]["phase"] == "SUCCEEDED", jsctl("logs", plain)[1][-3000:]
    assert done[job]["phase"] == "SUCCEEDED" and done[job]["restarts"] == 1, text[-3000:]
    assert "jsctl: SIGUSR1: preemption notice" in text
    assert re.search(r"jsctl: preempted \(exit (75|143)\): requeueing Slurm job", text), text[-3000:]

    recs, ref = records(jsctl, job), records(jsctl, plain)
    start = next(r for r in recs if r.get("event") == "start")
    assert start["framework"] == "transformers" and start["world_size"] == 2 and start["parallelism"] == "ddp"
    assert re.search(r"^1: ", text, re.M), "no line from the second node's worker"
    saved, restored = set(steps_of(recs, "preempt")), set(steps_of(recs, "restore"))
    assert len(saved) == 1 and saved == restored and 10 <= min(saved) < STEPS, (saved, restored)
    k = min(saved)
    after, reference = losses(recs), losses(ref)
    assert sorted(after) == sorted(reference) == list(range(1, STEPS + 1)), (sorted(after), sorted(reference))
    assert [after[s] for s in range(k + 1, STEPS + 1)] == [reference[s] for s in range(k + 1, STEPS + 1)]
    kept = sorted(p.name for p in ckpts.iterdir())
    assert kept == [f"checkpoint-{s}" for s in sorted({10, 20, 30, 40, k})[-2:]], kept  # keep_latest 2
    code, out, _ = jsctl("metrics", job)
    assert code == 0 and f"step {STEPS}" in out and "loss" in out and f"resumed from checkpoint step {k}" in out, out
