"""A DeepSpeed job on Slurm: the batch script writes the generated config (a quoted here-document) beside
its log, names it in JETSTREAM_DEEPSPEED_CONFIG, mounts it into a container, and the plan notes say so."""
from __future__ import annotations

import json
import os

from slurmkit import plan_changes, run_script, script_of

DS_JOB = """\
version: jetstream.v1
job:
  name: ds
compute:
  resources:
    gpu:
      count: 4
{image}strategy:
  parallelism: deepspeed
  config: {{zero_stage: 2, offload_optimizer: true, mixed_precision: fp16, gradient_accumulation_steps: 2}}
model:
  parameters: 125M
  micro_batch_size: 3
lifecycle:
  command: [python3, -c, "import json, os; print('GOT', json.dumps(json.load(open(os.environ['JETSTREAM_DEEPSPEED_CONFIG']))))"]
"""


def test_script_writes_the_config_the_plan_shows_and_the_job_reads_it(tmp_path):
    (c,) = plan_changes(tmp_path, {"job.yaml": DS_JOB.format(image="")}, ["job.yaml"])
    planned = c.strategy["deepspeed"]
    assert planned == {"train_batch_size": 24, "train_micro_batch_size_per_gpu": 3, "gradient_accumulation_steps": 2,
                       "bf16": {"enabled": False}, "fp16": {"enabled": True},
                       "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memory": True}}}
    text = script_of(c)
    path = os.path.join(c.artifact.request.log_dir, f"{c.job_id}.deepspeed_config.json")
    assert f"export JETSTREAM_DEEPSPEED_CONFIG={path}" in text
    assert "<<'JSCTL_DEEPSPEED_JSON'" in text  # quoted: nothing in it expands
    assert any("DeepSpeed config: written by the script to " + path in n for n in c.artifact.notes)
    os.makedirs(c.artifact.request.log_dir, exist_ok=True)  # the client makes it before sbatch
    res = run_script(tmp_path, text)
    assert res.returncode == 0, res.stderr
    with open(path) as fh:
        assert json.load(fh) == planned
    got = [line for line in res.stdout.splitlines() if line.startswith("GOT ")]
    assert got and json.loads(got[0][4:]) == planned


def test_container_mounts_the_config_read_only(tmp_path):
    job = DS_JOB.format(image="environment:\n  image: nvcr.io/nvidia/pytorch:24.01-py3\n")
    (c,) = plan_changes(tmp_path, {"job.yaml": job}, ["job.yaml"], runtime="pyxis")
    path = os.path.join(c.artifact.request.log_dir, f"{c.job_id}.deepspeed_config.json")
    assert f"{path}:{path}:ro" in script_of(c)


def test_no_config_file_without_deepspeed(tmp_path):
    job = DS_JOB.format(image="").replace("parallelism: deepspeed", "parallelism: ddp").replace(
        "zero_stage: 2, offload_optimizer: true, ", "")
    (c,) = plan_changes(tmp_path, {"job.yaml": job}, ["job.yaml"])
    text = script_of(c)
    assert "export JETSTREAM_DEEPSPEED_CONFIG" not in text and "JSCTL_DEEPSPEED_JSON" not in text
    assert "deepspeed" not in c.strategy
    assert c.strategy["batch"] == {"micro_batch_size": 3, "gradient_accumulation_steps": 2, "global_batch_size": 24}


def test_a_global_batch_size_the_world_does_not_divide_is_a_plan_error(tmp_path):
    import pytest

    from jsctl.errors import ConfigError

    job = DS_JOB.format(image="").replace("gradient_accumulation_steps: 2", "global_batch_size: 20")
    with pytest.raises(ConfigError) as exc:
        plan_changes(tmp_path, {"job.yaml": job}, ["job.yaml"])
    text = str(exc.value) + " ".join(d.message for d in exc.value.diagnostics)
    assert "global_batch_size 20 is not a multiple of micro-batch 3 × 4 GPUs = 12" in text
    assert "12 (accumulation 1) or 24 (accumulation 2)" in text
