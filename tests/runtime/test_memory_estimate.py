"""The plan's memory estimate (jsctl.plan.memory) against what training really holds (issue 12).

A small GPT trains on CPU under jsruntime's DDP, then FSDP2 FULL_SHARD wrapping (one launch of 2 processes,
gloo, fp32: no mixed precision on CPU); tests/runtime/memory_worker.py measures each rank's model states (anonymous
RSS after the first step, over the baseline) and its peak (the high-water mark of the next step). The
estimate for the same shape, world and precision must match: model states within 15%, the total within
25%. The total is compared without the "cuda context + framework" allowance: on CPU there is no CUDA
context, and the baseline the worker subtracts already holds the framework. The errors are printed
(pytest -s to see them)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from jsctl.plan import memory, modelsize

torch = pytest.importorskip("torch", reason="jsruntime tests need torch (pip install torch==2.13.0)")

HERE = Path(__file__).resolve().parent
WORKER = HERE / "memory_worker.py"
SHAPE = {"vocab": 8192, "hidden": 256, "layers": 4, "heads": 4, "seq": 256, "batch": 8}
STATES = ("weights", "gradients", "optimizer state")


def estimated(parallelism: str, config: dict) -> memory.MemoryEstimate:
    arch = modelsize.analyze({"model_type": "gpt2", "n_embd": SHAPE["hidden"], "n_layer": SHAPE["layers"],
                              "n_head": SHAPE["heads"], "vocab_size": SHAPE["vocab"], "n_positions": 0,
                              "tie_word_embeddings": False})  # the worker's GPT: no learned positions
    shape = memory.ModelShape(arch.parameters, hidden=arch.hidden, layers=arch.layers, heads=arch.heads,
                              intermediate=arch.intermediate, vocab=arch.vocab,
                              sequence_length=SHAPE["seq"], micro_batch_size=SHAPE["batch"])
    return memory.estimate(shape, memory.option_from(parallelism, config), 1, 2, precision="fp32")


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> dict[str, dict]:
    """One torchrun launch measures DDP, then FSDP2 (each rank reports both; the larger peak counts)."""
    import jsrt_helpers as h

    tmp_path = tmp_path_factory.mktemp("memory")
    env = h.job_env(tmp_path / "ckpt", MALLOC_MMAP_THRESHOLD_="65536")
    out = tmp_path / "out"
    out.mkdir()
    args = [f"--{k}={v}" for k, v in SHAPE.items()] + ["--parallelism=ddp,fsdp", "--steps=2", f"--out={out}"]
    job = h.run(h.torchrun(2, WORKER, *args), env, tmp_path, "memory", timeout=150)
    found = [json.loads(f.read_text()) for f in sorted(out.glob("*.json"))]
    assert len(found) == 4, job.tail()
    return {p: max((r for r in found if r["parallelism"] == p), key=lambda r: r["peak_bytes"])
            for p in ("ddp", "fsdp")}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm and clear_refs")
@pytest.mark.parametrize("parallelism, config", [("ddp", {}), ("fsdp", {"sharding_strategy": "FULL_SHARD"})])
def test_estimate_matches_measured_memory(measured, parallelism, config):
    est = estimated(parallelism, config)
    got = measured[parallelism]
    est_states = sum(t.bytes for t in est.terms if t.name in STATES)
    est_total = est.total - est.term("cuda context + framework").bytes
    states_err = est_states / got["states_bytes"] - 1
    total_err = est_total / got["peak_bytes"] - 1
    mib = 2**20
    print(f"\n{est.option.label()} fp32, 2 ranks, {est.shape.parameters / 1e6:.2f}M params: "
          f"model states measured {got['states_bytes'] / mib:.1f} MiB, estimated {est_states / mib:.1f} MiB "
          f"({states_err:+.1%}); peak measured {got['peak_bytes'] / mib:.1f} MiB, estimated "
          f"{est_total / mib:.1f} MiB ({total_err:+.1%})")
    for t in est.terms:
        print(f"  {t.name:<26} {t.bytes / mib:9.1f} MiB  {t.why}")
    assert not est.lower_bound
    assert abs(states_err) <= 0.15, f"model states off by {states_err:+.1%}"
    assert abs(total_err) <= 0.25, f"total off by {total_err:+.1%}"
