"""jsruntime.lightning: the plan mapped onto a Lightning Trainer, who requeues, and the callback in one process.

The in-process runs train a real (tiny) LightningModule on the CPU: checkpoints in jsruntime's layout,
a real SIGUSR1 saves at the end of the step and exits 75, and the resumed run's losses equal an
uninterrupted run's bit for bit (one process: the same operations in the same order).
"""

from __future__ import annotations

import io
import json
import os
import signal
from contextlib import redirect_stdout
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="jsruntime tests need torch (pip install torch==2.13.0)")
pytest.importorskip("lightning", reason="jsruntime.lightning needs lightning (pip install -e '.[lightning]')")

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, IterableDataset  # noqa: E402

import lightning.pytorch as pl  # noqa: E402
from lightning.pytorch.callbacks import ModelCheckpoint  # noqa: E402
from lightning.pytorch.plugins.environments import SLURMEnvironment  # noqa: E402

import jsruntime.lightning as jsl  # noqa: E402
from jsruntime import REQUEUE_EXIT_CODE, ConfigError, read_env  # noqa: E402
from jsruntime import checkpoint_dir as cdir  # noqa: E402

TORCHRUN_2 = {"TORCHELASTIC_RUN_ID": "abc", "WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "0",
              "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
DDP = '{"parallelism": "ddp", "config": {"mixed_precision": "bf16"}}'


@pytest.fixture(autouse=True)
def _signals_restored(monkeypatch):
    """A JetstreamCallback installs SIGTERM/SIGUSR1 handlers when built: give pytest its own back."""
    for name in ("SLURM_NTASKS", "SLURM_JOB_NAME", "TORCHELASTIC_RUN_ID", "JSRUNTIME_STATUS_FILE"):
        monkeypatch.delenv(name, raising=False)
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGUSR1)}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


def _plan(environ: dict, **kwargs):
    return jsl.plan(kwargs, env=read_env(environ), environ=environ)


def _callbacks(kwargs) -> list:
    return [c for c in kwargs["callbacks"] if isinstance(c, jsl.JetstreamCallback)]


# ---- the mapping -----------------------------------------------------------------------------
def test_torchrun_ddp_job_maps_devices_strategy_precision_and_adds_the_callback():
    environ = dict(TORCHRUN_2, JETSTREAM_STRATEGY=DDP, JETSTREAM_CHECKPOINT_DIR="/ck", JETSTREAM_SAVE_FREQUENCY="5steps")
    p = _plan(environ, max_steps=10)
    kw = p.kwargs
    assert (kw["devices"], kw["num_nodes"], kw["strategy"], kw["precision"]) == (2, 1, "ddp", "bf16-mixed")
    assert kw["max_steps"] == 10 and len(_callbacks(kw)) == 1
    assert kw["enable_checkpointing"] is False  # no second (default) checkpointer in lightning_logs/
    assert "plugins" not in kw and "TorchElastic" in p.cluster_environment and p.conflicts == ()
    assert p.requeue == "jsctl runtime (exit 75)"
    cb = _callbacks(kw)[0]
    assert (cb.config.directory, cb.config.every_steps) == ("/ck", 5)


def test_two_nodes_of_four_and_a_single_process_job():
    environ = dict(TORCHRUN_2, WORLD_SIZE="8", LOCAL_WORLD_SIZE="4")
    assert (_plan(environ).kwargs["devices"], _plan(environ).kwargs["num_nodes"]) == (4, 2)
    alone = _plan({}).kwargs  # no launcher, no plan: Lightning's defaults stay
    assert not {"devices", "num_nodes", "strategy", "precision", "plugins", "enable_checkpointing"} & set(alone)


def test_the_scripts_own_settings_are_kept_and_reported():
    environ = dict(TORCHRUN_2, JETSTREAM_STRATEGY=DDP)
    p = _plan(environ, strategy="fsdp", precision=32, devices=2)
    assert p.kwargs["strategy"] == "fsdp" and p.kwargs["precision"] == 32
    assert {c.setting for c in p.conflicts} == {"strategy", "precision"}
    assert "the plan says ddp, the script set fsdp (kept)" in str(next(c for c in p.conflicts if c.setting == "strategy"))
    same = _plan(environ, strategy="ddp_find_unused_parameters_true", precision="bf16").conflicts
    assert same == ()  # the same choice spelt differently is no conflict
    with pytest.warns(UserWarning, match="strategy: the plan says ddp"):
        jsl.prepare(strategy="fsdp", env=read_env(environ))
    with pytest.raises(jsl.LightningConflict, match="differ from the plan"):
        jsl.prepare(strategy="fsdp", strict=True, env=read_env(environ))


def test_own_model_checkpoint_keeps_lightning_checkpointing_on():
    mine = ModelCheckpoint(dirpath="elsewhere")
    kw = _plan({"JETSTREAM_CHECKPOINT_DIR": "/ck"}, callbacks=[mine]).kwargs
    assert "enable_checkpointing" not in kw and kw["callbacks"][0] is mine and len(_callbacks(kw)) == 1


# ---- who requeues ----------------------------------------------------------------------------
def test_under_srun_lightnings_slurm_auto_requeue_is_turned_off():
    p = _plan({"SLURM_NTASKS": "1", "SLURM_JOB_NAME": "train"})
    envs = [x for x in p.kwargs["plugins"] if isinstance(x, SLURMEnvironment)]
    assert len(envs) == 1 and envs[0].auto_requeue is False
    assert p.cluster_environment == "SLURMEnvironment(auto_requeue=False)"


def test_under_torchrun_inside_slurm_no_slurm_plugin_is_added():
    p = _plan(dict(TORCHRUN_2, SLURM_NTASKS="2", SLURM_JOB_NAME="train"))
    assert "plugins" not in p.kwargs and "TorchElastic" in p.cluster_environment


def test_a_second_requeuer_is_refused_and_a_quiet_one_is_kept():
    with pytest.raises(jsl.LightningConflict, match="exactly one may"):
        _plan({"SLURM_NTASKS": "1"}, plugins=[SLURMEnvironment()])  # auto_requeue=True is Lightning's default
    quiet = SLURMEnvironment(auto_requeue=False)
    p = _plan({"SLURM_NTASKS": "1"}, plugins=[quiet])
    assert p.kwargs["plugins"] == [quiet]


# ---- the callback in a real Trainer (one process) ----------------------------------------------
class Stream(IterableDataset):
    def __init__(self, start: int) -> None:
        self.start = start

    def __iter__(self):
        i = self.start
        while True:
            g = torch.Generator().manual_seed(1000 + i)
            x = torch.randn(8, 6, generator=g)
            yield x, (x.sum(dim=1) > 0).long()
            i += 1


class Tiny(pl.LightningModule):
    def __init__(self, signal_at: int | None = None) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 2))
        self.signal_at = signal_at
        self.losses: dict[int, float] = {}

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.losses[self.global_step + 1] = loss.item()
        self.log("train_loss", loss)
        if self.signal_at is not None and self.global_step + 1 == self.signal_at:
            os.kill(os.getpid(), signal.SIGUSR1)  # arrives during the step: acted on at its end
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-2)

    def train_dataloader(self):
        return DataLoader(Stream(self.trainer.global_step), batch_size=None)


def _fit(ckpt: Path, steps: int, signal_at: int | None = None, status: Path | None = None) -> tuple[Tiny, list[dict]]:
    environ = {"JETSTREAM_CHECKPOINT_DIR": str(ckpt), "JETSTREAM_SAVE_FREQUENCY": "2steps",
               "JETSTREAM_KEEP_LATEST": "2", "JOB_ID": "t"}
    if status is not None:
        environ["JSRUNTIME_STATUS_FILE"] = str(status)
    torch.manual_seed(0)
    model = Tiny(signal_at)
    env = read_env(environ)
    trainer = pl.Trainer(**jsl.prepare(env=env, max_steps=steps, logger=False, enable_progress_bar=False,
                                       enable_model_summary=False, accelerator="cpu", devices=1,
                                       default_root_dir=ckpt.parent))
    torch.manual_seed(1)  # dropout
    out = io.StringIO()
    with redirect_stdout(out):
        try:
            trainer.fit(model, ckpt_path=jsl.resume_path(env))
        finally:
            records = [json.loads(x) for x in out.getvalue().splitlines() if x.startswith('{"jetstream"')]
    return model, records


def test_checkpoints_preemption_exit_75_and_a_bitwise_resume(tmp_path):
    _, records = _fit(tmp_path / "ref", 8)
    reference = {r["step"]: r["loss"] for r in records if r["jetstream"] == "metrics"}
    assert sorted(reference) == list(range(1, 9))
    assert [s for s, _ in cdir.complete_checkpoints(tmp_path / "ref")] == [6, 8]  # keep_latest 2
    assert [r["step"] for r in records if r["jetstream"] == "checkpoint"] == [2, 4, 6, 8]
    marker = cdir.read_marker(tmp_path / "ref" / "step-00000008")
    assert marker["format"] == "lightning" and (tmp_path / "ref" / "step-00000008" / "lightning.ckpt").is_file()

    ckpt, status = tmp_path / "ck", tmp_path / "status"
    with pytest.raises(SystemExit) as stopped:
        _fit(ckpt, 8, signal_at=3, status=status)
    assert stopped.value.code == REQUEUE_EXIT_CODE
    assert cdir.latest_complete(ckpt)[0] == 3  # saved at the end of the step the signal came in
    assert status.read_text().startswith("preempted step=3")
    assert signal.getsignal(signal.SIGUSR1) is not signal.SIG_IGN  # handlers given back

    model, records = _fit(ckpt, 8)
    events = {r["event"]: r for r in records if r["jetstream"] == "event"}
    assert events["restore"]["step"] == 3 and "fresh_start" not in events
    assert sorted(model.losses) == [4, 5, 6, 7, 8]
    assert {s: model.losses[s] for s in model.losses} == {s: reference[s] for s in range(4, 9)}


def test_fit_without_ckpt_path_over_a_checkpoint_is_an_error(tmp_path):
    _fit(tmp_path / "ck", 2)
    environ = {"JETSTREAM_CHECKPOINT_DIR": str(tmp_path / "ck")}
    trainer = pl.Trainer(**jsl.prepare(env=read_env(environ), max_steps=4, logger=False, enable_progress_bar=False,
                                       enable_model_summary=False, accelerator="cpu", devices=1,
                                       default_root_dir=tmp_path))
    with pytest.raises(ConfigError, match="ckpt_path=jsruntime.lightning.resume_path"):
        trainer.fit(Tiny())


def test_a_trainer_that_auto_requeues_is_refused_by_the_callback(tmp_path):
    trainer = pl.Trainer(max_steps=1, logger=False, enable_progress_bar=False, enable_model_summary=False,
                         accelerator="cpu", devices=1, plugins=[SLURMEnvironment()], default_root_dir=tmp_path,
                         callbacks=[jsl.JetstreamCallback(env=read_env({}))])
    with pytest.raises(jsl.LightningConflict, match="auto_requeue=True"):
        trainer.fit(Tiny())


def test_resume_path(tmp_path):
    env = read_env({"JETSTREAM_CHECKPOINT_DIR": str(tmp_path)})
    assert jsl.resume_path(env) is None and jsl.resume_path(read_env({})) is None
    other = tmp_path / "step-00000005"
    other.mkdir()
    (other / "COMPLETE").write_text('{"step": 5}')  # jsruntime core's (DCP) checkpoint
    with pytest.raises(ConfigError, match="not written by jsruntime.lightning"):
        jsl.resume_path(env)
    mine = tmp_path / "step-00000007"
    mine.mkdir()
    (mine / "lightning.ckpt").write_bytes(b"x")
    (mine / "COMPLETE").write_text('{"step": 7, "format": "lightning"}')
    assert jsl.resume_path(env) == str(mine / "lightning.ckpt")
