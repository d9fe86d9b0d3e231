"""comm_s/compute_s in metric lines (issue 12, item 6): the time the step waits on the model's collectives,
measured under FSDP2 and DDP on 2 gloo processes, without changing what is computed."""

from __future__ import annotations

import pytest

try:
    import torch  # noqa: F401
except ImportError:
    pytest.skip("jsruntime tests need torch (pip install torch==2.13.0)", allow_module_level=True)

import jsrt_helpers as h

STRATEGIES = {"fsdp": '{"parallelism": "fsdp", "config": {"sharding_strategy": "FULL_SHARD"}}',
              "ddp": '{"parallelism": "ddp"}'}


def test_collectives_are_timed_under_fsdp_and_ddp(tmp_path):
    losses = {}
    for name, strategy in STRATEGIES.items():
        env = h.job_env(tmp_path / name / "ckpt", JETSTREAM_STRATEGY=strategy, JETSTREAM_LOG_EVERY="20",
                        JETSTREAM_SAVE_FREQUENCY="1000steps")
        job = h.run(h.torchrun(2, h.QUICKSTART, "--steps", "80", "--output-dir", str(tmp_path / name)), env,
                    tmp_path, name, timeout=120)
        records = job.records("metrics")
        assert [r["step"] for r in records] == [20, 40, 60, 80]
        for r in records:
            assert 0 < r["comm_s"] < r["step_time_s"], (name, r)
            assert r["compute_s"] + r["comm_s"] == pytest.approx(r["step_time_s"], abs=2e-6)
            assert r["peak_mem_bytes"] > 0 and r["mem_kind"] == "rss"
            # every rank's own figures, gathered on the step's one collective (the dashboard's curves per worker)
            ranks = r["ranks"]
            assert ranks["loss"][0] == r["loss"] and len(ranks["loss"]) == 2 and ranks["loss"][1] != r["loss"]
            assert all(m > 0 for m in ranks["peak_mem_bytes"]) and ranks["peak_mem_bytes"][0] <= r["peak_mem_bytes"]
            assert all(0 < s < 60 for s in ranks["step_time_s"]), ranks
        print(name, [(r["step_time_s"], r["comm_s"]) for r in records])
        losses[name] = [r["loss"] for r in records]
    assert losses["fsdp"] == pytest.approx(losses["ddp"], rel=1e-5)  # timing hooks change nothing computed
