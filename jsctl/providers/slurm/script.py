"""The batch script for one job: `#SBATCH` options and the shell body, from a JobContext (pure).

Values reach the script in two dialects, each quoted for its reader:
- `#SBATCH` lines are parsed by sbatch itself (whitespace separates, "double quotes" group,
  backslash escapes); `sbatch_value` writes that dialect and refuses what it cannot hold.
- the body is bash; every user value goes through `shquote` or `launch.shell_word`.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import posixpath
import re
from dataclasses import dataclass
from typing import Any

from jsctl.model.spec import JobSpec, Mount
from jsctl.errors import RenderError
from jsctl.model.job import JobContext
from jsctl.model.status import REQUEUE_EXIT_CODE
from jsctl.providers.slurm.inventory import format_slurm_time
from jsctl.providers.slurm.settings import SlurmSettings
from jsctl.render import launch, shquote

SAFE_SBATCH = re.compile(r"[A-Za-z0-9_.:/@=+,%-]+")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
PER_TASK_NAMES = ("SLURM_PROCID", "SLURM_NODEID", "SLURM_LOCALID", "NODE_RANK")
LOW_PRIORITY_NICE = 10000
COMMENT_PREFIX = "jsctl:"
TEMPLATE = "sbatch.sh.j2"  # in this package's templates/


def sbatch_value(value: Any) -> str:
    """One value of an `#SBATCH --opt=VALUE` line, as sbatch's own parser reads it."""
    text = str(value)
    if CONTROL.search(text):
        raise RenderError(f"{text!r} cannot appear in an #SBATCH line (control character or newline)")
    if SAFE_SBATCH.fullmatch(text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def slurm_path(path: str) -> str:
    """A literal path in a Slurm filename pattern: `%` must be written `%%`."""
    return path.replace("%", "%%")


def format_mem(n: int) -> str:
    """Bytes → `--mem` text in Slurm's binary units (G = GiB), rounded up to a MiB."""
    if n % 2**30 == 0:
        return f"{n // 2**30}G"
    return f"{-(-n // 2**20)}M"


HASH_SENTINEL = "@@script-hash@@"


def comment(address: str, generation: int, script_hash: str = HASH_SENTINEL) -> str:
    """`jsctl:<address>@<generation>:<hash>`: refresh and adopt find jsctl's jobs by it; the hash (of the
    script without it) makes adopt take only a job submitted from exactly this script."""
    return f"{COMMENT_PREFIX}{address}@{generation}:{script_hash}"


def seal(text: str) -> tuple[str, str]:
    """Put the script's own hash into its --comment line: (text, comment hash)."""
    digest = hashlib.sha256(text.replace(HASH_SENTINEL, "").encode()).hexdigest()[:12]
    return text.replace(HASH_SENTINEL, digest), digest


def parse_comment(text: str | None) -> tuple[str, int, str] | None:
    m = re.fullmatch(r"jsctl:(\S+)@(\d+):([0-9a-f]+)", (text or "").strip())
    return (m.group(1), int(m.group(2)), m.group(3)) if m else None


@dataclass(frozen=True)
class Container:
    runtime: str  # pyxis | apptainer | none
    image: str | None
    mounts: tuple[tuple[str, str], ...]  # (host path, path in the job)
    runtime_dir: str | None = None  # the staged jsruntime, mounted read-only at the same path
    files: tuple[str, ...] = ()  # files the script writes for the job (DeepSpeed config), mounted read-only


def container(settings: SlurmSettings, spec: JobSpec, runtime_dir: str | None = None) -> Container:
    image = spec.environment.image
    runtime = settings.container_runtime if image else "none"
    mounts: list[tuple[str, str]] = []
    if runtime != "none":
        for m in (*spec.inputs, *spec.outputs):
            mounts.append((m.path, m.mount_path or m.path))
    return Container(runtime, image, tuple(mounts), runtime_dir if runtime != "none" else None)


def runtime_dir(log_root: str, package: launch.RuntimePackage) -> str:
    """Where submit stages jsruntime for the job (SlurmClient.submit): beside the log directory, so on
    a file system every node sees, in a directory named by the package's content hash."""
    return _runtime_dir(log_root, package.name)


@functools.lru_cache(maxsize=256)
def _runtime_dir(log_root: str, name: str) -> str:  # the same for every job of a cluster
    path = posixpath.join(posixpath.dirname(log_root), "runtime", name)
    if any(c in path for c in ",:") or any(ord(c) < 32 for c in path):
        raise RenderError(f"the jsruntime directory {path!r} cannot hold ',', ':' or control characters "
                          "(it is mounted into containers and put on PYTHONPATH)",
                          hint="set shared_dir for the cluster in jsctl.yaml to a plain path")
    return path


DEEPSPEED_EOF = "JSCTL_DEEPSPEED_JSON"


def deepspeed_file(log_root: str, job_id: str) -> str:
    """Where the script writes the job's DeepSpeed config: beside its log, on a file system every node sees."""
    path = posixpath.join(log_root, f"{job_id}.{launch.DEEPSPEED_CONFIG_FILE}")
    if any(c in path for c in ",:") or any(ord(c) < 32 for c in path):
        raise RenderError(f"the DeepSpeed config path {path!r} cannot hold ',', ':' or control characters "
                          "(it is mounted into containers)", hint="set log_dir for the cluster to a plain path")
    return path


def job_path(m: Mount, c: Container) -> str:
    """Where a storage entry is, as the job sees it: its mount_path in a container, else its host path."""
    return (m.mount_path or m.path) if c.runtime != "none" else m.path


def pyxis_image(image: str) -> str:
    """Docker reference → enroot's `[REGISTRY#]IMAGE[:TAG]`: `reg.io/ai/pt:1` → `reg.io#ai/pt:1`."""
    if "://" in image or image.startswith(("/", "./")) or image.endswith(".sqsh") or "#" in image:
        return image
    first, sep, rest = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return f"{first}#{rest}"
    return image


def apptainer_image(image: str) -> str:
    if "://" in image or image.startswith(("/", "./")) or image.endswith(".sif"):
        return image
    return f"docker://{image}"


def container_words(ctx: JobContext, c: Container) -> list[str]:
    """Shell words of the script's `jsctl_container` array: srun options (pyxis) or the words that
    run a command in the image (apptainer); none without a container."""
    if c.runtime == "none":
        return []
    binds = ",".join([f"{src}:{dst}" for src, dst in c.mounts] + ([f"{c.runtime_dir}:{c.runtime_dir}:ro"]
                                                                   if c.runtime_dir else [])
                     + [f"{f}:{f}:ro" for f in c.files])
    if c.runtime == "pyxis":
        words = [shquote(f"--container-image={pyxis_image(c.image or '')}")]
        if binds:
            words.append("--container-mounts=" + launch.shell_word(binds, ctx))
        return words
    words = ["apptainer", "exec"]
    if ctx.placement.gpus_per_node:
        words.append("--nv")
    if binds:
        words += ["--bind", launch.shell_word(binds, ctx)]
    words.append(shquote(apptainer_image(c.image or "")))
    return words


def sbatch_options(ctx: JobContext, settings: SlurmSettings, log_file: str, checkpoints: bool,
                   workdir: str | None) -> list[str]:
    p = ctx.placement
    spec = ctx.spec
    opts = [f"--job-name={sbatch_value(ctx.job_id)}", f"--comment={sbatch_value(comment(ctx.address, ctx.generation))}",
            f"--partition={sbatch_value(p.pool)}", f"--nodes={p.nodes}", "--ntasks-per-node=1"]
    if p.gpus_per_node:
        opts.append(f"--gpus-per-node={p.gpus_per_node}")
    if p.cpus_per_task:
        opts.append(f"--cpus-per-task={p.cpus_per_task}")
    if p.memory_per_node:
        opts.append(f"--mem={format_mem(p.memory_per_node)}")
    if spec.compute.time_limit_s:
        opts.append(f"--time={format_slurm_time(spec.compute.time_limit_s)}")
    opts += [f"--output={sbatch_value(log_file)}", f"--error={sbatch_value(log_file)}", "--open-mode=append"]
    if workdir:
        opts.append(f"--chdir={sbatch_value(workdir)}")
    if checkpoints:
        opts.append("--requeue")
    if checkpoints:
        opts.append(f"--signal=B:USR1@{settings.signal_grace_s}")
    qos = ((settings.partition(p.pool) or {}).get("qos") or {}).get(spec.priority)
    if qos:
        opts.append(f"--qos={sbatch_value(qos)}")
    elif spec.priority == "low":
        opts.append(f"--nice={LOW_PRIORITY_NICE}")
    return opts


def task_command(ctx: JobContext, argv: tuple[str, ...]) -> str:
    """The command each node runs, as shell text; names that differ per task expand on the task."""
    text = launch.shell_command(argv, ctx)
    if not any(f"${{{n}}}" in a for a in argv for n in PER_TASK_NAMES):
        return text
    return "/bin/sh -c " + shquote(f'export NODE_RANK="$SLURM_NODEID"; exec {text}')


def context(ctx: JobContext, settings: SlurmSettings) -> dict[str, Any]:
    """Everything the template needs, computed and quoted here so that the template stays layout."""
    spec = ctx.spec
    p = ctx.placement
    log_root = settings.log_root(ctx.workdir)
    runtime = runtime_dir(log_root, launch.runtime_package())
    c = container(settings, spec, runtime)
    ds_text = launch.deepspeed_config(ctx)
    ds_path = deepspeed_file(log_root, ctx.job_id) if ds_text else None
    if ds_path and c.runtime != "none":
        c = dataclasses.replace(c, files=(ds_path,))
    if ds_text and any(line == DEEPSPEED_EOF for line in ds_text.splitlines()):
        raise RenderError("the DeepSpeed config holds the script's here-document delimiter")  # JSON never does
    mounts = {m.name: job_path(m, c) for m in (*spec.inputs, *spec.outputs)}
    env = launch.environment(ctx, mounts, ds_path)
    checkpoints = spec.checkpoint_output is not None
    if settings.access.remote:
        workdir = settings.shared_dir
    else:
        workdir = ctx.workdir if ctx.workdir not in ("", ".") else None
    log_file = f"{slurm_path(log_root)}/{ctx.job_id}-%j.log"
    in_container = ['"${jsctl_container[@]}"'] if c.runtime != "none" else []
    # the allocation's node count at run time: `jsctl scale` may change it while the job is held
    nodes = f'"${{SLURM_JOB_NUM_NODES:-{p.nodes}}}"'
    step = ["srun", f"--nodes={nodes}", f"--ntasks={nodes}", "--ntasks-per-node=1"]
    if p.cpus_per_task:
        step.append(f"--cpus-per-task={p.cpus_per_task}")  # 22.05: steps do not inherit it from sbatch
    step.append("--kill-on-bad-exit=1")
    if p.nodes > 1:
        step.append("--label")
    step += in_container + [task_command(ctx, launch.command(ctx))]
    hook_run = (["srun", "--nodes=1", "--ntasks=1"] if c.runtime == "pyxis" else []) + in_container

    def hooks(items: tuple[tuple[str, ...], ...]) -> list[str]:
        return [" ".join(hook_run + [launch.shell_command(h, ctx)]) for h in items]

    words = {name: launch.shell_word(value, ctx) for name, value in env.items()}
    if p.gpus_per_node:
        for name, (planned, word) in _run_time_shapes(p.nodes, p.gpus_per_node).items():
            if name in words and env[name] == planned:
                words[name] = word
    exports = list(words.items())
    user_env = dict(spec.environment.env_vars)
    restart_codes = " ".join(str(x) for x in spec.recovery.restart_on_exit_codes)
    return {
        "address": ctx.address, "generation": ctx.generation, "job_id": ctx.job_id,
        "placement": p.describe(),
        "sbatch": sbatch_options(ctx, settings, log_file, checkpoints, workdir),
        "master_addr": user_env.get("MASTER_ADDR"), "master_port": user_env.get("MASTER_PORT"),
        "exports": exports,
        "secrets": list(spec.environment.secrets),
        "output_dirs": [launch.shell_word(m.path, ctx) for m in spec.outputs],
        "pre_run": hooks(spec.lifecycle.pre_run),
        "post_success": hooks(spec.lifecycle.post_success),
        "post_failure": hooks(spec.lifecycle.post_failure),
        "step": " ".join(step),
        "checkpoints": checkpoints,
        "gpus_per_node": p.gpus_per_node,
        "requeue_exit_code": REQUEUE_EXIT_CODE,
        "max_restarts": spec.recovery.max_restarts,
        "restart_codes": restart_codes,
        "container": c,
        "container_words": container_words(ctx, c),
        "log_root": log_root,
        "runtime_dir": runtime,
        "deepspeed_file": ds_path, "deepspeed_config": ds_text, "deepspeed_eof": DEEPSPEED_EOF,
        "log_file": log_file,
        "workdir": workdir,
    }


@functools.lru_cache(maxsize=256)
def _run_time_shapes(nodes: int, gpus_per_node: int) -> dict[str, tuple[str, str]]:
    """The shape variables, read from the allocation when the job starts (unless the job's env_vars set
    them): `jsctl scale` changes a held job's nodes and GPUs per node, and the script must follow.
    name → (the value planned, the word that reads it from the allocation); shared: read only."""
    return {"JETSTREAM_NNODES": (str(nodes), f'"${{SLURM_JOB_NUM_NODES:-{nodes}}}"'),
            "JETSTREAM_GPUS_PER_NODE": (str(gpus_per_node), f'"${{SLURM_GPUS_ON_NODE:-{gpus_per_node}}}"'),
            "JETSTREAM_WORLD_SIZE": (str(nodes * gpus_per_node), '"$((JETSTREAM_NNODES * JETSTREAM_GPUS_PER_NODE))"')}
