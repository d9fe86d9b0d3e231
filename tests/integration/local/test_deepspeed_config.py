"""A DeepSpeed job gets the configuration the plan generated as a file, at the path in its environment
(local provider; the deepspeed package is not needed: jsruntime only sets up the process group)."""
import json

import pytest
from localjobs import run_cli, wait_phase

pytest.importorskip("torch", reason="the job calls jsruntime.init(), which needs torch==2.13.0")

JOB = """version: jetstream.v1
job:
  name: ds
compute:
  resources:
    gpu:
      count: 2
strategy:
  framework: pytorch
  parallelism: deepspeed
  launcher: torchrun
  config: {zero_stage: 3, offload_optimizer: true, mixed_precision: bf16, global_batch_size: 64, gradient_clipping: 1.0}
model:
  parameters: 125M
  micro_batch_size: 4
lifecycle:
  command: [ds_job.py]
"""

PROGRAM = """import json, os
import jsruntime

rt = jsruntime.init()  # a deepspeed plan: the process group, no engine (the program makes it)
path = os.environ["JETSTREAM_DEEPSPEED_CONFIG"]
with open(path) as fh:
    config = json.load(fh)
planned = json.loads(os.environ["JETSTREAM_STRATEGY"])["deepspeed"]
print("DSCONFIG " + json.dumps({"rank": rt.rank, "world": rt.world_size, "path": path,
                                "same_as_strategy": config == planned, "rt_path": rt.deepspeed_config,
                                "config": config}), flush=True)
rt.finish()
"""


def test_deepspeed_job_reads_its_generated_config_file(ws):
    (ws / "ds.yaml").write_text(JOB)
    (ws / "ds_job.py").write_text(PROGRAM)
    code, out, err = run_cli("plan", "-f", "ds.yaml", "--json")
    assert code == 0, err
    after = json.loads(out)["resource_changes"][0]["change"]["after"]
    planned = after["strategy"]["deepspeed"]
    assert planned["train_batch_size"] == 64 and planned["train_micro_batch_size_per_gpu"] == 4
    assert planned["gradient_accumulation_steps"] == 8  # 64 / (4 × 2 workers)
    files = dict(after["artifact"]["files"])
    assert json.loads(files["deepspeed_config.json"]) == planned  # the file is what the plan shows
    code, out, err = run_cli("plan", "-f", "ds.yaml", "--show-artifacts")
    assert "---- deepspeed_config.json ----" in out and "JETSTREAM_DEEPSPEED_CONFIG" in out

    code, out, err = run_cli("apply", "-f", "ds.yaml", "--auto-approve")
    assert code == 0, err
    row = wait_phase("ds", timeout=120)
    code, logs, _ = run_cli("logs", "ds")
    assert row["phase"] == "SUCCEEDED", logs
    seen = [json.loads(line.split("DSCONFIG ", 1)[1]) for line in logs.splitlines() if "DSCONFIG " in line]
    assert sorted(s["rank"] for s in seen) == [0, 1], logs
    run_dir = ws / ".jsctl" / "runs" / row["job_id"]
    for s in seen:
        assert s["world"] == 2 and s["same_as_strategy"] and s["config"] == planned
        assert s["path"] == s["rt_path"] == str((run_dir / "deepspeed_config.json").resolve())
