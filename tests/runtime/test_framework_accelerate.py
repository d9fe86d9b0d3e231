"""jsruntime.accelerate: the plan as Accelerator arguments, an Accelerator that differs from the plan
reported (it cannot change once built), and save/resume in jsruntime's layout in one process."""
from __future__ import annotations

import json
import logging

import pytest

pytest.importorskip("torch", reason="jsruntime tests need torch (pip install torch==2.13.0)")
pytest.importorskip("accelerate", reason="jsruntime.accelerate needs the hf extra (pip install -e '.[hf]')")

import torch  # noqa: E402
from accelerate import Accelerator  # noqa: E402
from accelerate.state import AcceleratorState, GradientState  # noqa: E402

import jsruntime.accelerate as jsa  # noqa: E402
from jsruntime import ConfigError, read_env  # noqa: E402
from jsruntime import checkpoint_dir as cdir  # noqa: E402

PLAN = {"JETSTREAM_STRATEGY": json.dumps({"parallelism": "ddp", "config": {"mixed_precision": "bf16"},
                                          "batch": {"gradient_accumulation_steps": 4}})}


@pytest.fixture(autouse=True)
def fresh_state(monkeypatch):
    for name in ("JETSTREAM_STRATEGY", "JETSTREAM_CHECKPOINT_DIR", "WORLD_SIZE", "RANK"):
        monkeypatch.delenv(name, raising=False)
    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    yield
    AcceleratorState._reset_state(True)
    GradientState._reset_state()


def test_accelerator_kwargs_from_the_plan(monkeypatch):
    assert jsa.accelerator_kwargs(read_env({})) == {}  # no plan: Accelerate's defaults
    monkeypatch.setenv("JETSTREAM_STRATEGY", PLAN["JETSTREAM_STRATEGY"])
    assert jsa.accelerator_kwargs(read_env(PLAN)) == {"mixed_precision": "bf16", "gradient_accumulation_steps": 4}


def test_an_accelerator_built_otherwise_is_reported_naming_both_values(monkeypatch, caplog):
    monkeypatch.setenv("JETSTREAM_STRATEGY", PLAN["JETSTREAM_STRATEGY"])
    acc = Accelerator(cpu=True, gradient_accumulation_steps=2)
    with caplog.at_level(logging.WARNING, logger="jsruntime"):
        js = jsa.prepare(acc, handle_signals=False, env=read_env(PLAN))
    assert "mixed_precision: the script set 'no', the plan says 'bf16'" in caplog.text
    assert "gradient_accumulation_steps: the script set 2, the plan says 4" in caplog.text
    js.finish(save=False)
    with pytest.raises(ConfigError, match="gradient_accumulation_steps"):
        jsa.prepare(acc, prefer="error", handle_signals=False, env=read_env(PLAN))


def test_save_and_resume_in_the_planned_directory(tmp_path, capsys):
    env = read_env({"JETSTREAM_CHECKPOINT_DIR": str(tmp_path), "JETSTREAM_SAVE_FREQUENCY": "2steps",
                    "JETSTREAM_KEEP_LATEST": "2"})
    acc = Accelerator(cpu=True)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = acc.prepare(model, opt)
    js = jsa.prepare(acc, handle_signals=False, env=env)
    assert js.resume() == 0
    for step in range(1, 6):
        acc.backward(model(torch.ones(3, 4)).sum())
        opt.step()
        opt.zero_grad()
        js.step(step, loss=0.0)
    js.finish()
    assert [s for s, _ in cdir.complete_checkpoints(tmp_path)] == [4, 5]  # every 2 steps, the final, keep 2
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    again = jsa.prepare(acc, handle_signals=False, env=env)
    assert again.resume() == 5
    assert all(torch.equal(saved[k], v) for k, v in model.state_dict().items())
    out = capsys.readouterr().out
    assert '"event": "restore", "step": 5' in out and '"jetstream": "checkpoint", "step": 4' in out
