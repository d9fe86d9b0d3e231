"""The launch contract (docs/launch-contract.md): each command shape's launched command and the
environment every job gets; shell text from user values is always quoted; run-time names expand,
nothing else does."""
import dataclasses
import os
import subprocess

import pytest

from jsctl import api
from jsctl.config.variables import Variables
from jsctl.model.job import JobContext, Placement
from jsctl.render import launch

NASTY = ["echo", "a'b", 'c"d', "$(touch pwned)", "`touch pwned2`", "x; rm -rf /", "${HOME}", "--n=${JETSTREAM_NNODES}"]


def ctx_for(write, command, extra=""):
    import json

    path = write("job.yaml", f"version: jetstream.v1\njob: {{name: t}}\n{extra}lifecycle:\n  command: {json.dumps(command)}\n")
    r = api.validate([path], Variables({}))
    assert r.ok, r.diagnostics
    spec = r.specs["job.t"]
    p = Placement("local", "local", "this machine", 1, 2, None, None, None, None, "on-demand", 0.0)
    return JobContext("job.t", "js-t-abcd", 1, spec, p)


def test_shell_words_arrive_unchanged(write, tmp_path):
    cmd = [c.replace("${HOME}", "$${HOME}") for c in NASTY]
    ctx = ctx_for(write, cmd)
    text = launch.shell_command(ctx.spec.lifecycle.command, ctx)
    out = subprocess.run(["bash", "-c", text], cwd=tmp_path, capture_output=True, text=True,
                         env={"JETSTREAM_NNODES": "4", "PATH": "/usr/bin:/bin"}).stdout
    assert out.strip() == " ".join(["a'b", 'c"d', "$(touch pwned)", "`touch pwned2`", "x; rm -rf /", "${HOME}", "--n=4"])
    assert not list(tmp_path.glob("pwned*"))


LAUNCHER = ("python", "-m", "jsruntime.launch")
ARGS = launch.DEFAULT_LAUNCHER_ARGS
SEED_SHELL = ["/bin/bash", "-c", "cd /workspace\ntorchrun --nnodes=${JETSTREAM_NNODES} "
              "--nproc_per_node=${JETSTREAM_GPUS_PER_NODE} train.py --bf16\n"]
TORCHRUN = "strategy: {launcher: torchrun}\n"


@pytest.mark.parametrize("command, extra, expected", [
    # a script, `python -m`, another program: jsctl runs torchrun (through the launcher) with the rendezvous
    (["train.py", "--lr", "1"], TORCHRUN, (*LAUNCHER, *ARGS, "train.py", "--lr", "1")),
    (["python", "-m", "pkg.train"], TORCHRUN, (*LAUNCHER, *ARGS, "-m", "pkg.train")),
    (["python3", "train.py"], TORCHRUN, (*LAUNCHER, *ARGS, "train.py")),
    (["mybinary"], TORCHRUN, (*LAUNCHER, *ARGS, "--no-python", "mybinary")),
    (["train.py"], "strategy: {launcher: torchrun, launcher_args: [--nnodes=1, --max-restarts=2]}\n",
     (*LAUNCHER, "--nnodes=1", "--max-restarts=2", "train.py")),
    # torchrun written by the user, and a shell: as written, under the launcher (signals, exit 75); the
    # rendezvous comes from PET_* - with or without `launcher: torchrun` for torchrun itself
    (["torchrun", "--nnodes=2", "--nproc_per_node=2", "train.py"], TORCHRUN,
     (*LAUNCHER, "--exec", "torchrun", "--nnodes=2", "--nproc_per_node=2", "train.py")),
    (["torchrun", "train.py"], "", (*LAUNCHER, "--exec", "torchrun", "train.py")),
    (["/opt/conda/bin/torchrun", "train.py"], "", (*LAUNCHER, "--exec", "/opt/conda/bin/torchrun", "train.py")),
    (["python", "-m", "torch.distributed.run", "train.py"], TORCHRUN,
     (*LAUNCHER, "--exec", "python", "-m", "torch.distributed.run", "train.py")),
    (SEED_SHELL, TORCHRUN, (*LAUNCHER, "--exec", *SEED_SHELL)),
    (["bash", "-c", "torchrun train.py"], TORCHRUN, (*LAUNCHER, "--exec", "bash", "-c", "torchrun train.py")),
    # no launcher: as written; the launcher itself: as written
    (["bash", "-c", "python prep.py"], "", ("bash", "-c", "python prep.py")),
    (["train.py"], "", ("train.py",)),
    (["python", "-m", "jsruntime.launch", "x.py"], TORCHRUN, ("python", "-m", "jsruntime.launch", "x.py")),
])
def test_command_shapes(write, command, extra, expected):
    assert launch.command(ctx_for(write, command, extra)) == expected


def test_launcher_args_and_pet_environment_say_the_same(write):
    env = launch.environment(ctx_for(write, ["train.py"], TORCHRUN))
    for arg in ARGS:
        option, _, value = arg.partition("=")
        assert env[launch.pet_name(option)] == value
    assert env["PET_RDZV_BACKEND"] == "c10d" and env["PET_RDZV_ENDPOINT"] == "${MASTER_ADDR}:${MASTER_PORT}"
    assert env["PET_SIGNALS_TO_HANDLE"].split(",")[-1] == "SIGUSR1"


def test_torchrun_reads_every_pet_variable(write, monkeypatch):
    """What torchrun (torch/distributed/run.py) makes of the environment of a 2 × 4 job: the rendezvous
    on the first node, SIGUSR1 handled, time to checkpoint; options on its command line still win."""
    pytest.importorskip("torch")
    from jsruntime.launch import SIGNALS_TO_HANDLE
    from torch.distributed.run import get_args_parser

    assert launch.SIGNALS_TO_HANDLE == SIGNALS_TO_HANDLE
    ctx = ctx_for(write, ["train.py"], TORCHRUN)
    ctx = dataclasses.replace(ctx, placement=dataclasses.replace(ctx.placement, nodes=2, gpus_per_node=4))
    env = launch.environment(ctx)
    runtime = dict(env, MASTER_ADDR="10.0.0.7", MASTER_PORT="23456")
    pet = {k: launch.expand(v, runtime) for k, v in env.items() if k.startswith("PET_")}
    for k in [k for k in os.environ if k.startswith("PET_")]:
        monkeypatch.delenv(k)
    for k, v in pet.items():
        monkeypatch.setenv(k, v)
    parser = get_args_parser()
    from_env = {a.dest for a in parser._actions if type(a).__name__ in ("env", "check_env")}
    assert {k.removeprefix("PET_").lower() for k in pet} <= from_env  # only names torchrun reads
    args = parser.parse_args(["train.py"])
    assert (args.nnodes, args.nproc_per_node, args.rdzv_backend, args.rdzv_endpoint, args.rdzv_id) == \
        ("2", "4", "c10d", "10.0.0.7:23456", "js-t-abcd")
    assert args.signals_to_handle == "SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1" and args.shutdown_timeout == 120
    args = get_args_parser().parse_args(["--nnodes=1", "--nproc_per_node=2", "--rdzv_endpoint=h:1", "train.py"])
    assert (args.nnodes, args.nproc_per_node, args.rdzv_endpoint, args.rdzv_id) == ("1", "2", "h:1", "js-t-abcd")


def test_env_vars_win_over_pet(write):
    env = launch.environment(ctx_for(write, ["train.py"], TORCHRUN + "environment:\n  env_vars: {PET_NNODES: '1', "
                                     "MASTER_ADDR: head}\n"))
    assert env["PET_NNODES"] == "1"
    names = list(env)
    assert names.index("MASTER_ADDR") < names.index("PET_RDZV_ENDPOINT")  # a shell expands it in order


def test_hostile_shell_command_reaches_the_launcher_literally(write, tmp_path):
    """The seed's shape with hostile text: the batch shell passes the -c string on unchanged (only
    run-time `${NAME}`s expand), to a launcher that gets exactly these words."""
    body = "torchrun --nnodes=${JETSTREAM_NNODES} x.py 'a b' \"$(touch pwned)\" `touch pwned2`; echo $HOME"
    ctx = ctx_for(write, ["bash", "-c", body], TORCHRUN)
    text = launch.shell_command(launch.command(ctx), ctx)
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "python").write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\0" "$a"; done\n')
    (stub / "python").chmod(0o755)
    out = subprocess.run(["bash", "-c", text], cwd=tmp_path, capture_output=True, text=True,
                         env={"JETSTREAM_NNODES": "2", "PATH": f"{stub}:/usr/bin:/bin"}).stdout
    assert out.split("\0")[:-1] == ["-m", "jsruntime.launch", "--exec", "bash", "-c", body.replace(
        "${JETSTREAM_NNODES}", "2")]
    assert not list(tmp_path.glob("pwned*"))


def test_environment(write):
    ctx = ctx_for(write, ["true"], "environment:\n  env_vars: {A: '1'}\n  secrets: [TOKEN]\n"
                  "storage:\n  outputs:\n    - {name: my-ckpt, path: /c, policy: {save_frequency: 10steps, keep_latest: 2}}\n")
    env = launch.environment(ctx, {"my-ckpt": "/mapped"})
    assert env["JETSTREAM_MOUNT_MY_CKPT"] == "/mapped" and env["JETSTREAM_CHECKPOINT_DIR"] == "/mapped"
    assert env["JETSTREAM_SAVE_FREQUENCY"] == "10steps" and env["JETSTREAM_KEEP_LATEST"] == "2"
    assert env["A"] == "1" and "TOKEN" not in env and env["JETSTREAM_GPUS_PER_NODE"] == "2"
