"""issue 17: a transformers.Trainer script (examples/frameworks/hf_trainer_llama.py, a tiny Llama from a
config.json, generated data) follows the plan through jsruntime.hf on the local provider, 2 CPU workers
(torchrun, gloo): preempted with SIGUSR1 mid-run, it checkpoints at the end of the step, exits 75, is
requeued, resumes from that step and ends SUCCEEDED with the same losses and bitwise the same weights
as an uninterrupted run (same ops on the same data in the same order on CPU: DDP over gloo, and the
Trainer restores model, optimizer, scheduler, RNG states and the data position exactly)."""
import pytest

from fwkit import checkpoints, cli, final, losses, preempted_and_plain

pytest.importorskip("transformers", reason="needs the hf extra (pip install -e '.[hf]')")
STEPS = 40


def test_trainer_preempted_requeued_resumes_exactly(fw):
    recs, ref, k = preempted_and_plain(fw, "hf-trainer.yaml", "hf-trainer", "checkpoint-*", STEPS, 0.25)
    assert 10 <= k < STEPS  # after the first planned checkpoint (save_frequency 10steps)
    after, reference = losses(recs), losses(ref)
    assert sorted(after) == sorted(reference) == list(range(1, STEPS + 1)), (sorted(after), sorted(reference))
    assert [after[s] for s in range(k + 1, STEPS + 1)] == [reference[s] for s in range(k + 1, STEPS + 1)]
    mine, plain = final(fw, "hf-trainer"), final(fw, "hf-trainer-plain")
    assert mine["weights_sha256"] == plain["weights_sha256"] and mine["eval_loss"] == plain["eval_loss"]
    assert mine["step"] == STEPS and mine["world_size"] == 2

    # keep_latest 2: exactly the two newest complete checkpoints remain (the planned ones and the preemption's)
    ckpts = checkpoints(fw, "hf-trainer")
    assert ckpts == [f"checkpoint-{s}" for s in sorted({10, 20, 30, 40, k})[-2:]], ckpts
    assert all(next(fw.glob(f"**/checkpoints/{c}/COMPLETE")) for c in ckpts)
    # the script's own output_dir and logging_steps are reported, naming both values
    log = cli("logs", "hf-trainer")[1]
    assert "jsruntime.hf: output_dir: the script set 'out/tiny-llama', the plan says '" in log
    assert "jsruntime.hf: logging_steps: the script set 5, the plan says 1" in log
    code, out, _ = cli("metrics", "hf-trainer")
    assert code == 0 and f"step {STEPS}" in out and "loss" in out, out
    assert f"resumed from checkpoint step {k}" in out, out
