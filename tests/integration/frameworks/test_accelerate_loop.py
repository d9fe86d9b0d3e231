"""issue 17: a plain accelerate.Accelerator loop (examples/frameworks/accelerate_llama.py: the tiny Llama,
generated data) follows the plan through jsruntime.accelerate on the local provider, 2 CPU workers
(torchrun, gloo): accelerator.save_state into the planned directory every 10 steps (keep_latest 2),
preempted with SIGUSR1 mid-run it saves at the end of the step and exits 75, is requeued, load_state()s
that step, skips the batches it saw, and ends SUCCEEDED with bitwise the same losses and weights as an
uninterrupted run (CPU, gloo: the same operations on the same data in the same order; load_state
restores model, optimizer, scheduler and every rank's RNG)."""
import pytest

from fwkit import checkpoints, cli, final, losses, preempted_and_plain

pytest.importorskip("accelerate", reason="needs the hf extra (pip install -e '.[hf]')")
pytest.importorskip("transformers", reason="needs the hf extra (pip install -e '.[hf]')")
STEPS = 40


def test_accelerate_loop_preempted_requeued_resumes_exactly(fw):
    recs, ref, k = preempted_and_plain(fw, "accelerate.yaml", "accelerate-llama", "step-*", STEPS, 0.25)
    assert 10 <= k < STEPS
    after, reference = losses(recs), losses(ref)
    assert sorted(after) == sorted(reference) == list(range(1, STEPS + 1)), (sorted(after), sorted(reference))
    assert [after[s] for s in range(k + 1, STEPS + 1)] == [reference[s] for s in range(k + 1, STEPS + 1)]
    mine, plain = final(fw, "accelerate-llama"), final(fw, "accelerate-llama-plain")
    assert mine["weights_sha256"] == plain["weights_sha256"] and mine["eval_loss"] == plain["eval_loss"]
    assert mine["step"] == STEPS and mine["world_size"] == 2
    ckpts = checkpoints(fw, "accelerate-llama")
    assert ckpts == [f"step-{s:08d}" for s in sorted({10, 20, 30, 40, k})[-2:]], ckpts  # keep_latest 2
    root = next(fw.glob(f"**/checkpoints/{ckpts[-1]}"))
    assert {"COMPLETE", "model.safetensors", "optimizer.bin", "scheduler.bin", "random_states_0.pkl",
            "random_states_1.pkl"} <= {p.name for p in root.iterdir()}
    code, out, _ = cli("metrics", "accelerate-llama")
    assert code == 0 and f"step {STEPS}" in out and "loss" in out, out
    assert f"resumed from checkpoint step {k}" in out, out
