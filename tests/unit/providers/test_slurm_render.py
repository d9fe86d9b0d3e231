"""The batch script: #SBATCH options from the job and its placement, the body's behaviour (run
under bash with srun/scontrol stand-ins), determinism, containers, notes, validate and diff."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys

import pytest

from jsctl.model.cluster import Facts
from jsctl.providers.slurm import SlurmProvider
from jsctl.providers.slurm.script import format_mem, parse_comment, pyxis_image
from jsctl.providers.slurm.inventory import format_slurm_time, parse_slurm_time
from paths import EXAMPLES
from slurmkit import plan_changes, run_script, script_of, write_workspace

GPU_JOB = """\
version: jetstream.v1
job:
  name: train
  priority: {priority}
compute:
  resources:
    gpu:
      count: {gpus}
    cpu:
      per_gpu: 2
    memory:
      per_gpu: 3Gi
  time_limit: 90m
strategy:
  parallelism: ddp
  launcher: torchrun
environment:
  image: nvcr.io/nvidia/pytorch:24.01-py3
  env_vars:
    FOO: bar
  secrets: [HF_TOKEN]
storage:
  inputs:
    - name: data
      path: /datasets/set-a
      mount_path: /data
  outputs:
    - name: ckpt
      path: /scratch/${{JOB_ID}}/ckpt
      mount_path: /ckpt
      policy:
        save_frequency: 100steps
lifecycle:
  command: [train.py, --data, /data]
"""

CPU_JOB = """\
version: jetstream.v1
job:
  name: prep
  priority: low
compute:
  resources:
    cpu:
      count: 3
    memory:
      total: 1536Mi
lifecycle:
  command: [sh, -c, "{body}"]
{hooks}
"""


def options(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) or "" for m in re.finditer(r"^#SBATCH --([a-z-]+)(?:=(.*))?$", text, re.M)}


def gpu_change(tmp_path, gpus=8, priority="high", runtime="none"):
    (c,) = plan_changes(tmp_path, {"job.yaml": GPU_JOB.format(gpus=gpus, priority=priority)}, ["job.yaml"],
                        runtime=runtime)
    return c


def test_sbatch_options_follow_job_and_placement(tmp_path):
    c = gpu_change(tmp_path)
    text = script_of(c)
    o = options(text)
    assert o["job-name"] == c.job_id
    address, generation, script_hash = parse_comment(o["comment"])
    assert (address, generation) == ("job.train", c.generation)
    assert o["comment"] == c.artifact.request.options["comment"]
    assert hashlib.sha256(text.replace(script_hash, "").encode()).hexdigest()[:12] == script_hash
    assert (o["partition"], o["nodes"], o["ntasks-per-node"], o["gpus-per-node"]) == ("debug", "2", "1", "4")
    assert o["cpus-per-task"] == "8"  # cpu.per_gpu × GPUs per node
    assert o["mem"] == "12G"  # memory.per_gpu × GPUs per node
    assert o["time"] == "1:30:00"
    assert o["output"] == o["error"] == f"{tmp_path}/shared/logs/{c.job_id}-%j.log"
    assert o["open-mode"] == "append"
    assert o["chdir"] == str(tmp_path)
    assert "requeue" in o and o["signal"] == "B:USR1@120"
    assert o["qos"] == "urgent"
    assert "dependency" not in o and "HF_TOKEN=" not in text  # both arrive at submit


def test_srun_launches_the_launcher_on_every_node(tmp_path):
    from jsctl.render import launch

    c = gpu_change(tmp_path)
    text = script_of(c)
    step = next(line.strip() for line in text.splitlines() if line.strip().startswith("srun --nodes="))
    ctx = _ctx(c)
    assert step == ("srun --nodes=\"${SLURM_JOB_NUM_NODES:-2}\" --ntasks=\"${SLURM_JOB_NUM_NODES:-2}\" --ntasks-per-node=1 --cpus-per-task=8 --kill-on-bad-exit=1 --label "
                    + launch.shell_command(launch.command(ctx), ctx) + " &")
    assert '--rdzv_endpoint="${MASTER_ADDR}":"${MASTER_PORT}"' in step
    assert step.endswith("train.py --data /data &")
    assert 'export MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))' in text
    assert 'scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1' in text


def test_no_checkpoint_no_requeue_and_low_priority_is_nice(tmp_path):
    (c,) = plan_changes(tmp_path, {"job.yaml": CPU_JOB.format(body="true", hooks="")}, ["job.yaml"])
    o = options(script_of(c))
    assert "requeue" not in o and "signal" not in o and "gpus-per-node" not in o
    assert o["nice"] == "10000" and "qos" not in o
    assert o["cpus-per-task"] == "3" and o["mem"] == "1536M"
    assert "time" not in o


def test_render_is_deterministic_and_follows_generation(tmp_path):
    c = gpu_change(tmp_path)
    provider = SlurmProvider()
    ctx = _ctx(c)
    a, b = provider.render(ctx, None), provider.render(ctx, None)
    assert a == b and a.digest == b.digest
    nxt = provider.render(dataclasses.replace(ctx, generation=2, job_id="js-train-zzzz"), None)
    assert nxt.digest != a.digest
    assert "#SBATCH --comment=jsctl:job.train@2:" in nxt.files[0][1]


def _ctx(change):
    from jsctl.config.spec import build
    from jsctl.model.job import JobContext

    return JobContext(change.address, change.job_id, change.generation, build(change.spec, change.file),
                      change.placement, change.depends_on, change.strategy, os.path.dirname(change.file))


def test_scripts_are_valid_bash(tmp_path):
    for runtime in ("none", "pyxis", "apptainer"):
        text = script_of(gpu_change(tmp_path, runtime=runtime))
        res = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True)
        assert res.returncode == 0, (runtime, res.stderr)


def test_containers(tmp_path):
    pyxis = gpu_change(tmp_path, runtime="pyxis")
    text = script_of(pyxis)
    staged = pyxis.artifact.request.runtime_dir  # jsruntime, mounted where it is on the host, read-only
    assert ("jsctl_container=('--container-image=nvcr.io#nvidia/pytorch:24.01-py3' "
            f"--container-mounts=/datasets/set-a:/data,/scratch/{pyxis.job_id}/ckpt:/ckpt,{staged}:{staged}:ro)") in text
    assert '--label "${jsctl_container[@]}" ' in text
    assert "export JETSTREAM_CHECKPOINT_DIR=/ckpt" in text
    assert any("via pyxis" in n for n in pyxis.artifact.notes)
    app = script_of(gpu_change(tmp_path, runtime="apptainer"))
    assert ("jsctl_container=(apptainer exec --nv --bind /datasets/set-a:/data,"
            "/scratch/") in app and "docker://nvcr.io/nvidia/pytorch:24.01-py3)" in app
    host = gpu_change(tmp_path, runtime="none")
    assert "jsctl_container" not in script_of(host)
    assert f"export JETSTREAM_CHECKPOINT_DIR=/scratch/{host.job_id}/ckpt" in script_of(host)
    assert any("no container runtime" in n and "runs on the host" in n for n in host.artifact.notes)
    assert any("data /datasets/set-a (not /data)" in n for n in host.artifact.notes)


@pytest.mark.parametrize("image, enroot", [
    ("nvcr.io/nvidia/pytorch:24.01-py3", "nvcr.io#nvidia/pytorch:24.01-py3"),
    ("localhost:5000/x/y", "localhost:5000#x/y"),
    ("pytorch/pytorch:2.1", "pytorch/pytorch:2.1"),
    ("ubuntu", "ubuntu"),
    ("/images/x.sqsh", "/images/x.sqsh"),
])
def test_pyxis_image(image, enroot):
    assert pyxis_image(image) == enroot


def test_units():
    assert format_mem(2 * 2**40) == "2048G" and format_mem(1536 * 2**20) == "1536M" and format_mem(1000) == "1M"
    assert format_slurm_time(5400) == "1:30:00" and format_slurm_time(3 * 86400 + 61) == "3-00:02:00"
    assert parse_slurm_time("3-00:02:00") == 3 * 86400 + 120 and parse_slurm_time("UNLIMITED") is None
    assert parse_slurm_time("30") == 1800 and parse_slurm_time("1:30") == 90 and parse_slurm_time("2-12") == 216000


def test_dependencies_are_recorded_not_scripted(tmp_path):
    files = {
        "wf.yaml": """\
            version: jetstream.v1
            workflow:
              name: wf
              jobs:
                - {name: a, type: job, spec: a.yaml}
                - {name: b, type: job, spec: b.yaml, dependsOn: [a]}
            """,
        "a.yaml": CPU_JOB.format(body="true", hooks="").replace("name: prep", "name: a"),
        "b.yaml": CPU_JOB.format(body="true", hooks="").replace("name: prep", "name: b"),
    }
    a, b = plan_changes(tmp_path, files, ["wf.yaml"])
    assert a.artifact.upstream == () and "dependency" not in a.artifact.request.options
    assert b.artifact.upstream == ("workflow.wf.job.a",) and "dependency" not in b.artifact.request.options
    assert "#SBATCH --dependency" not in script_of(b)
    assert any("after workflow.wf.job.a" in n for n in b.artifact.notes)


def run_cpu(tmp_path, body, hooks="", env=None):
    (c,) = plan_changes(tmp_path, {"job.yaml": CPU_JOB.format(body=body, hooks=hooks)}, ["job.yaml"])
    return run_script(tmp_path, script_of(c), env), (tmp_path / "slurm.log")


HOOKS = """\
  pre_run:
    - command: [sh, -c, 'echo pre >> order.txt']
  post_success:
    - command: [sh, -c, 'echo success >> order.txt']
  post_failure:
    - command: [sh, -c, 'echo failure >> order.txt']
"""


def test_hooks_and_exit_codes(tmp_path):
    res, _ = run_cpu(tmp_path, "echo cmd >> order.txt", HOOKS)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "order.txt").read_text().split() == ["pre", "cmd", "success"]
    (tmp_path / "order.txt").unlink()
    res, _ = run_cpu(tmp_path, "echo cmd >> order.txt; exit 7", HOOKS)
    assert res.returncode == 7
    assert (tmp_path / "order.txt").read_text().split() == ["pre", "cmd", "failure"]
    assert "jsctl: the command ended with exit 7" in res.stderr


def test_failed_pre_run_skips_the_command(tmp_path):
    hooks = HOOKS.replace("echo pre >> order.txt", "exit 5")
    res, _ = run_cpu(tmp_path, "echo cmd >> order.txt", hooks)
    assert res.returncode == 5
    assert (tmp_path / "order.txt").read_text().split() == ["failure"]
    assert "pre_run hook 1 failed with exit 5" in res.stderr


CKPT_JOB = """\
version: jetstream.v1
job:
  name: ckpt
compute:
  resources:
    cpu:
      count: 1
storage:
  outputs:
    - name: ckpt
      path: ckpt
      policy:
        keep_latest: 2
lifecycle:
  command: [{python}, -c, "{code}"]
  post_failure:
    - command: [sh, -c, 'echo failure >> order.txt']
"""


def run_ckpt(tmp_path, code, env=None, signal_after=None):
    (c,) = plan_changes(tmp_path, {"job.yaml": CKPT_JOB.format(python=sys.executable, code=code)}, ["job.yaml"])
    return run_script(tmp_path, script_of(c), env)


def test_exit_75_requeues(tmp_path):
    res = run_ckpt(tmp_path, "raise SystemExit(75)")
    log = (tmp_path / "slurm.log").read_text()
    assert "scontrol requeue 4242" in log
    assert res.returncode == 75 and "requeueing Slurm job 4242" in res.stderr
    assert not (tmp_path / "order.txt").exists()  # a preemption is not a failure


def test_failed_requeue_is_a_failure(tmp_path):
    res = run_ckpt(tmp_path, "raise SystemExit(75)", {"FAKE_REQUEUE_RC": "1"})
    assert res.returncode == 75
    assert "scontrol requeue failed" in res.stderr
    assert (tmp_path / "order.txt").read_text().split() == ["failure"]


def test_usr1_reaches_the_command_and_requeues(tmp_path):
    # the command signals the batch shell (its grandparent: srun stand-in execs, so its parent) as
    # Slurm's --signal=B:USR1 would, then waits for the forwarded signal and exits like the runtime
    code = ("import os, signal, sys, time; got = []; signal.signal(signal.SIGUSR1, lambda *a: got.append(1)); "
            "os.kill(os.getppid(), signal.SIGUSR1); t = time.time(); "
            "[time.sleep(0.05) for _ in range(200) if not got]; "
            "open('got_usr1', 'w').write(str(bool(got))); sys.exit(75 if got else 3)")
    res = run_ckpt(tmp_path, code)
    assert (tmp_path / "got_usr1").read_text() == "True", res.stderr
    assert "SIGUSR1: preemption notice" in res.stderr
    assert "scontrol requeue 4242" in (tmp_path / "slurm.log").read_text()


def test_secret_must_reach_the_job(tmp_path):
    c = gpu_change(tmp_path)
    text = script_of(c)
    assert ': "${HF_TOKEN?secret HF_TOKEN did not reach the job}"' in text
    assert c.artifact.secrets == ("HF_TOKEN",)


def test_per_task_names_expand_on_each_task(tmp_path):
    job = CPU_JOB.format(body="true", hooks="").replace(
        'command: [sh, -c, "true"]', "command: [sh, -c, 'echo rank $0 > rank.txt', '${SLURM_PROCID}']")
    (c,) = plan_changes(tmp_path, {"job.yaml": job}, ["job.yaml"])
    text = script_of(c)
    assert "/bin/sh -c 'export NODE_RANK=\"$SLURM_NODEID\"; exec sh -c" in text
    res = run_script(tmp_path, text, {"SLURM_PROCID": "3", "SLURM_NODEID": "3"})
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "rank.txt").read_text().strip() == "rank 3"


def test_user_master_port_wins(tmp_path):
    job = GPU_JOB.format(gpus=4, priority="normal").replace("    FOO: bar", "    MASTER_PORT: '29555'")
    (c,) = plan_changes(tmp_path, {"job.yaml": job}, ["job.yaml"])
    text = script_of(c)
    assert "SLURM_JOB_ID % 20000" not in text and "export MASTER_PORT=29555" in text


def test_validate(tmp_path):
    from jsctl.model.cluster import Cluster

    provider = SlurmProvider()
    c = gpu_change(tmp_path, runtime="pyxis")
    ctx = _ctx(c)

    def facts(settings):
        return Facts("ci", {"cluster_settings": settings})

    ok = {"container_runtime": "pyxis", "partitions": [{"name": "debug", "qos": {"high": "q"}}]}
    assert [d for d in provider.validate(ctx, facts(ok)) if d.severity == "error"] == []
    ssh = dict(ok, access={"mode": "ssh", "host": "login"})
    assert any(d.code == "SLURM03" for d in provider.validate(ctx, facts(ssh)))
    rest = dict(ok, access={"mode": "slurmrestd", "url": "http://x"})
    assert any(d.code == "SLURM02" for d in provider.validate(ctx, facts(rest)))
    colon = dataclasses.replace(ctx, spec=dataclasses.replace(ctx.spec, inputs=(
        dataclasses.replace(ctx.spec.inputs[0], path="/a:b"),)))
    assert any(d.code == "SLURM04" for d in provider.validate(colon, facts(ok)))
    no_qos = dict(ok, partitions=[{"name": "debug"}])
    assert any(d.code == "SLURM06" and d.severity == "warning" for d in provider.validate(ctx, facts(no_qos)))
    assert Cluster  # imported for readers: settings come from the cluster entry


def test_diff(tmp_path):
    provider = SlurmProvider()
    c = gpu_change(tmp_path)
    art = c.artifact
    assert provider.diff(art.to_dict(), art).action == "no-op"
    other = gpu_change(tmp_path, gpus=4)
    verdict = provider.diff(art.to_dict(), other.artifact)
    assert verdict.action == "replace"
    assert "request.options.nodes" in verdict.fields and "request.options.nodes forces replacement" in verdict.reasons
    assert "script body changed (forces replacement)" in verdict.reasons


def test_diff_against_the_record_state_keeps(tmp_path):
    """State keeps each file's digest, not its text (the batch script is most of a record); the diff
    still finds the same job unchanged, and a changed script still forces replacement. A record an older
    jsctl wrote (the script's text, no artifact digest) compares the same way."""
    provider = SlurmProvider()
    art = gpu_change(tmp_path).artifact
    record = art.to_record()
    assert all(text.startswith("sha256:") and len(text) == 71 for _, text in record["files"])
    assert len(json.dumps(record)) < len(json.dumps(art.to_dict())) / 2
    assert provider.diff(record, art, art.digest).action == "no-op"
    assert provider.diff(record, art).action == "no-op"
    assert provider.diff(art.to_dict(), art).action == "no-op"  # an older record: the text itself
    edited = dataclasses.replace(art, files=tuple((n, t + "# edited by hand\n") for n, t in art.files))
    for prior, digest in ((record, art.digest), (record, None), (art.to_dict(), None)):
        verdict = provider.diff(prior, edited, digest)
        assert verdict.action == "replace" and verdict.fields == tuple(f"files.{n}" for n, _ in art.files), verdict


def test_finetune_llama_summary(tmp_path):
    inv = os.path.join(os.path.dirname(__file__), "..", "..", "golden", "slurm", "jsctl.yaml")
    (c,) = plan_changes(tmp_path, {}, [os.path.join(EXAMPLES, "finetune-llama.yaml")], inventory=inv)
    assert c.artifact.summary == "sbatch script: 4 nodes × 8 GPUs on a100"
    assert (c.placement.nodes, c.placement.gpus_per_node, c.placement.gpu_type) == (4, 8, "a100-80gb")
    assert json.loads(json.dumps(c.artifact.request.to_dict()))["log_dir"] == "/lustre/users/alice/jsctl/logs"
    assert write_workspace  # the helper also writes CI inventories


RESTART_JOB = """\
version: jetstream.v1
job:
  name: flaky
compute:
  resources:
    cpu:
      count: 1
lifecycle:
  command: [sh, -c, 'n=$(cat n 2>/dev/null || echo 0); echo $((n + 1)) > n; echo "try $n restart $JETSTREAM_RESTART_COUNT" >> tries; [ "$n" -ge 2 ] || exit {code}']
recovery:
  max_restarts: 2
{codes}
"""


def test_recovery_restarts_in_the_allocation(tmp_path):
    (c,) = plan_changes(tmp_path, {"job.yaml": RESTART_JOB.format(code=3, codes="")}, ["job.yaml"])
    assert "requeue" not in options(script_of(c))  # failures restart in place; only preemption requeues
    res = run_script(tmp_path, script_of(c))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "tries").read_text().splitlines() == ["try 0 restart 0", "try 1 restart 1", "try 2 restart 2"]
    assert "jsctl: restart 2 of 2 after exit 3" in res.stderr


def test_recovery_only_for_listed_exit_codes(tmp_path):
    job = RESTART_JOB.format(code=4, codes="  restart_on_exit_codes: [3]")
    (c,) = plan_changes(tmp_path, {"job.yaml": job}, ["job.yaml"])
    res = run_script(tmp_path, script_of(c))
    assert res.returncode == 4
    assert (tmp_path / "tries").read_text().splitlines() == ["try 0 restart 0"]


SHAPE_JOB = """\
version: jetstream.v1
job:
  name: shapes
compute:
  resources:
    gpu:
      count: 8
strategy:
  launcher: torchrun
storage:
  outputs:
    - name: ckpt
      path: ckpt
      policy:
        keep_latest: 1
lifecycle:
  command: {command}
"""
SEED_SHELL = ["/bin/bash", "-c", "cd /workspace\ntorchrun --nnodes=${JETSTREAM_NNODES} "
              "--nproc_per_node=${JETSTREAM_GPUS_PER_NODE} train.py --bf16\n"]


def shape_change(tmp_path, command, runtime="none"):
    (c,) = plan_changes(tmp_path, {"job.yaml": SHAPE_JOB.format(command=json.dumps(command))}, ["job.yaml"],
                        runtime=runtime)
    return c


@pytest.mark.parametrize("command", [SEED_SHELL, ["torchrun", "--nnodes=2", "--nproc_per_node=4", "train.py"]],
                         ids=["shell", "torchrun"])
def test_a_command_that_runs_torchrun_runs_under_the_launcher_on_every_node(tmp_path, command):
    from jsctl.render import launch

    c = shape_change(tmp_path, command)
    text = script_of(c)
    ctx = _ctx(c)
    step = next(line.strip() for line in text.splitlines() if line.strip().startswith("srun --nodes="))
    assert step.startswith("srun --nodes=\"${SLURM_JOB_NUM_NODES:-2}\" --ntasks=\"${SLURM_JOB_NUM_NODES:-2}\" --ntasks-per-node=1 --kill-on-bad-exit=1 --label "
                           "python -m jsruntime.launch --exec " + launch.shell_command(command[:1], ctx) + " ")
    assert text.count("python -m jsruntime.launch --exec") == 1
    exports = [line for line in text.splitlines() if line.startswith("export PET_")]
    assert exports == ['export PET_NNODES="${JETSTREAM_NNODES}"',
                       'export PET_NPROC_PER_NODE="${JETSTREAM_GPUS_PER_NODE}"',
                       "export PET_RDZV_BACKEND=c10d", 'export PET_RDZV_ENDPOINT="${MASTER_ADDR}":"${MASTER_PORT}"',
                       'export PET_RDZV_ID="${JOB_ID}"', "export PET_SHUTDOWN_TIMEOUT=120",
                       "export PET_SIGNALS_TO_HANDLE=SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1"]
    assert text.index("export MASTER_PORT=") < text.index("export PET_RDZV_ENDPOINT=")


def test_the_job_environment_when_it_runs(tmp_path):
    """What the launcher's command finds on a node (under the srun stand-in): PET_* expanded from the
    allocation, jsruntime first on PYTHONPATH, and the launcher's status file."""
    c = shape_change(tmp_path, ["bash", "-c", "env > env.txt"])
    res = run_script(tmp_path, script_of(c), {"PYTHONPATH": "/elsewhere"})
    assert res.returncode == 0, res.stderr
    env = dict(line.split("=", 1) for line in (tmp_path / "env.txt").read_text().splitlines() if "=" in line)
    assert (env["PET_NNODES"], env["PET_NPROC_PER_NODE"], env["PET_RDZV_BACKEND"]) == ("2", "4", "c10d")
    assert env["PET_RDZV_ENDPOINT"] == "10.0.0.1:24242" and env["PET_RDZV_ID"] == c.job_id
    assert env["PYTHONPATH"] == f"{c.artifact.request.runtime_dir}:/elsewhere"
    assert env["JSRUNTIME_STATUS_FILE"]  # the launcher ran it


def test_jsruntime_is_staged_at_submit_and_mounted(tmp_path):
    from jsctl.providers.slurm.client import SlurmClient
    from jsctl.model.cluster import Cluster
    from jsctl.errors import ProviderError
    from jsctl.render import launch

    pkg = launch.runtime_package()
    c = gpu_change(tmp_path, runtime="apptainer")
    staged = c.artifact.request.runtime_dir
    assert staged == f"{tmp_path}/shared/runtime/jsruntime-{pkg.digest}"
    assert f"export PYTHONPATH={staged}${{PYTHONPATH:+:$PYTHONPATH}}" in script_of(c)
    assert f"/ckpt:/ckpt,{staged}:{staged}:ro docker://" in script_of(c)
    assert any(f"staged at submit in {staged}" in n for n in c.artifact.notes)
    client = SlurmClient(Cluster("ci", "slurm", {"access": {"mode": "local"}}), str(tmp_path))
    target = str(tmp_path / "a dir; $(touch pwned)" / pkg.name)
    for _ in range(2):  # the second time: already there
        client._stage_runtime(target)
    assert sorted(os.listdir(os.path.join(target, "jsruntime"))) == sorted(pkg.files)
    assert not list(tmp_path.glob("pwned")) and len(os.listdir(os.path.dirname(target))) == 1
    res = subprocess.run([sys.executable, "-c", "import jsruntime.launch; print(jsruntime.launch.__file__)"],
                         capture_output=True, text=True, env={"PYTHONPATH": target, "PATH": os.environ["PATH"]},
                         cwd=tmp_path)
    assert res.stdout.startswith(target), res.stderr
    with pytest.raises(ProviderError, match="the plan was rendered with jsruntime-0000000000000000"):
        client._stage_runtime(str(tmp_path / "jsruntime-0000000000000000"))
