"""issue 17: a PyTorch Lightning module (examples/frameworks/lightning_module.py: an MLP with dropout on a
generated stream) follows the plan through jsruntime.lightning on the local provider, 2 CPU workers
(torchrun, DDP over gloo; Lightning's multi-process CPU mode works here): checkpoints every 20 steps
(keep_latest 2); preempted with SIGUSR1 mid-run it saves at the end of the step and exits 75, jsctl
requeues it (exactly one requeuer: under torchrun Lightning's TorchElasticEnvironment never requeues,
and the job's start record says so), it resumes from that step and ends SUCCEEDED with bitwise the same
losses as an uninterrupted run (CPU, gloo, the same data stream from global_step, and every rank's RNG,
hence its dropout masks, restored from the checkpoint)."""
import pytest

from fwkit import checkpoints, cli, events, final, losses, preempted_and_plain

pytest.importorskip("lightning", reason="needs the lightning extra (pip install -e '.[lightning]')")
STEPS = 60


def test_lightning_module_preempted_requeued_resumes_exactly(fw):
    code, out, err = cli("plan", "-f", str(fw / "frameworks" / "lightning.yaml"))  # the plan says who requeues
    assert code == 0 and "requeues on preemption: the runtime checkpoints and exits 75" in out, out + err
    assert "jsctl requeues, not the framework" in out, out
    recs, ref, k = preempted_and_plain(fw, "lightning.yaml", "lightning-classifier", "step-*", STEPS, 0.1)
    assert 20 <= k < STEPS  # after the first planned checkpoint (save_frequency 20steps)
    start = events(recs, "start")[0]
    assert start["framework"] == "lightning" and start["world_size"] == 2
    assert start["requeue"] == "jsctl runtime (exit 75)" and start["cluster_environment"] == "TorchElasticEnvironment"
    after, reference = losses(recs), losses(ref)
    assert sorted(after) == sorted(reference) == list(range(1, STEPS + 1)), (sorted(after), sorted(reference))
    assert [after[s] for s in range(k + 1, STEPS + 1)] == [reference[s] for s in range(k + 1, STEPS + 1)]
    mine, plain = final(fw, "lightning-classifier"), final(fw, "lightning-classifier-plain")
    assert mine["final_loss"] == plain["final_loss"] and mine["step"] == STEPS and mine["world_size"] == 2
    saved = sorted({20, 40, 60, k})
    assert checkpoints(fw, "lightning-classifier") == [f"step-{s:08d}" for s in saved[-2:]]  # keep_latest 2
    code, out, _ = cli("metrics", "lightning-classifier")
    assert code == 0 and f"step {STEPS}" in out and "loss" in out, out
    assert f"resumed from checkpoint step {k}" in out, out
