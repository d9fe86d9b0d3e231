"""Shell text from user values is always quoted; run-time names expand, nothing else does."""
import subprocess

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


def test_torchrun_wrapping(write):
    ctx = ctx_for(write, ["train.py", "--lr", "1"], "strategy: {launcher: torchrun}\n")
    argv = launch.command(ctx)
    assert argv[:3] == ("python", "-m", "jsruntime.launch") and argv[-3:] == ("train.py", "--lr", "1")
    assert "--nproc_per_node=${JETSTREAM_GPUS_PER_NODE}" in argv
    ctx = ctx_for(write, ["python", "-m", "pkg.train"], "strategy: {launcher: torchrun}\n")
    assert launch.command(ctx)[-2:] == ("-m", "pkg.train")
    ctx = ctx_for(write, ["mybinary"], "strategy: {launcher: torchrun}\n")
    assert launch.command(ctx)[-2:] == ("--no-python", "mybinary")
    ctx = ctx_for(write, ["torchrun", "x.py"], "strategy: {launcher: torchrun}\n")
    assert launch.command(ctx) == ("torchrun", "x.py")


def test_environment(write):
    ctx = ctx_for(write, ["true"], "environment:\n  env_vars: {A: '1'}\n  secrets: [TOKEN]\n"
                  "storage:\n  outputs:\n    - {name: my-ckpt, path: /c, policy: {save_frequency: 10steps, keep_latest: 2}}\n")
    env = launch.environment(ctx, {"my-ckpt": "/mapped"})
    assert env["JETSTREAM_MOUNT_MY_CKPT"] == "/mapped" and env["JETSTREAM_CHECKPOINT_DIR"] == "/mapped"
    assert env["JETSTREAM_SAVE_FREQUENCY"] == "10steps" and env["JETSTREAM_KEEP_LATEST"] == "2"
    assert env["A"] == "1" and "TOKEN" not in env and env["JETSTREAM_GPUS_PER_NODE"] == "2"
