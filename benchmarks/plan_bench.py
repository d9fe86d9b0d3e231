"""Plan, state list and status at scale: prints seconds per command and the growth from the smallest size to the largest.

    python benchmarks/plan_bench.py [--sizes 500,1000,2000,5000] [--repeat 1] [--keep DIR]

For each size N: a workspace with one Slurm cluster (the CI cluster's shape; nothing is submitted),
N job files (a sweep of small Slurm jobs: CPU and GPU counts, memory, time limits, variables,
outputs), then, each as the `jsctl` command a user runs (a fresh Python process, start-up included):

  plan new        `jsctl plan -f jobs --refresh=false` against an empty state (N to add)
  plan no-change  the same with a state that records all N jobs as submitted (no changes)
  state list      `jsctl state list` over that state
  status          `jsctl status` over that state: with $SLURM_CONF naming the CI cluster
                  (scripts/slurm-up.sh), its one batched squeue is included (the made-up job ids are
                  not there: every job is recorded as vanished); else no engine answers and the
                  figure includes the NO_ENGINE_WAIT_S it is given

The state is made the way apply records jobs (jsctl.apply.new_record on the plan's changes, with
made-up handles). Targets (issue 14): plans under 3 s and state list / status under 1 s at 5,000
jobs, growing close to linearly: the growth line prints time(largest)/time(smallest) beside the
size ratio. The figure is the best of --repeat runs. Beside each wall-clock figure: the CPU seconds
(user + system) of the same run, which the load of other processes on the machine changes much
less; a second table gives them per size.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

TARGETS = {"plan new": 3.0, "plan no-change": 3.0, "state list": 1.0, "status": 1.0}

WORKSPACE = """version: jetstream.v1
clusters:
  - name: ci
    provider: slurm
    access:
      mode: local
    container_runtime: none
    shared_dir: /tmp/jsctl-slurm/shared
    partitions:
      - name: debug
        gpus_per_node: 4
        nodes: 2
        cpus_per_node: 2
        memory_per_node: 16Gi
        interconnect: loopback
        max_time: 1h
        gpu_hour_rate: 0.5
"""


def job_text(i: int) -> str:
    """One small job of the sweep (GPU count, memory, time limit and learning rate vary)."""
    return (f"version: jetstream.v1\njob:\n  name: sweep-{i:05d}\n  labels:\n    sweep: lr-{i % 10}\n"
            f"compute:\n  resources:\n    gpu:\n      count: {1 + i % 4}\n    memory:\n"
            f"      per_gpu: {256 * (1 + i % 3)}Mi\n  time_limit: {5 + i % 20}m\n"
            f"storage:\n  outputs:\n    - name: results\n      path: ${{OUT:-out}}/${{JOB_ID}}/results\n"
            f"lifecycle:\n  command: [sh, -c, 'echo lr={0.001 * (1 + i % 7):.3f}; sleep ${{SECONDS_TO_SLEEP:-60}}']\n")


def make_workspace(base: str, n: int) -> None:
    os.makedirs(os.path.join(base, "jobs"), exist_ok=True)
    with open(os.path.join(base, "jsctl.yaml"), "w") as fh:
        fh.write(WORKSPACE)
    for i in range(n):
        with open(os.path.join(base, "jobs", f"sweep-{i:05d}.yaml"), "w") as fh:
            fh.write(job_text(i))


def make_state(base: str) -> int:
    """Record every job of the plan as submitted (as apply does), in one write."""
    from jsctl import api
    from jsctl.apply import new_record
    from jsctl.api.live import store_for
    from jsctl.config.loader import find_files
    from jsctl.config.workspace import load as load_workspace
    from jsctl.model.status import JobHandle

    cwd = os.getcwd()
    os.chdir(base)
    try:
        ws = load_workspace(os.path.join(base, "jsctl.yaml"))
        files, _ = find_files(["jobs"])
        the_plan = api.plan(files, ws=ws, refresh=False)
        store = store_for(ws)
        state = store.read()
        now = time.time()
        for k, c in enumerate(the_plan.changes):
            state.put(c.address, new_record(c, JobHandle.parse(f"slurm://{c.cluster}/{100000 + k}"), now))
        store.write(state)
        return len(the_plan.changes)
    finally:
        os.chdir(cwd)


NO_ENGINE_WAIT_S = 0.2


def engine_env(base: str) -> tuple[dict[str, str], str]:
    """The environment status runs in: the CI Slurm cluster when $SLURM_CONF names one (its one
    squeue for all jobs is part of the figure), else no engine, given NO_ENGINE_WAIT_S to answer."""
    conf = os.environ.get("SLURM_CONF", "")
    if conf and os.path.isfile(conf):
        return {"SLURM_CONF": conf}, "one squeue on the CI Slurm cluster included"
    return ({"SLURM_CONF": os.path.join(base, "no-such-slurm.conf"), "JSCTL_PROBE_TIMEOUT": str(NO_ENGINE_WAIT_S)},
            f"no engine: includes {NO_ENGINE_WAIT_S} s waiting for it")


CPU: dict[float, float] = {}  # wall figure -> CPU seconds of that run


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(base: str, args: list[str], repeat: int, extra: dict[str, str] | None = None) -> tuple[float, str]:
    env = {**os.environ, "SLURM_CONF": os.path.join(base, "no-such-slurm.conf"), "PYTHONPATH": ROOT, **(extra or {})}
    best, out = float("inf"), ""
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), _children_cpu()
        proc = subprocess.run([sys.executable, "-m", "jsctl", *args], cwd=base, env=env,
                              capture_output=True, text=True)
        wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
        if wall < best:
            best = wall
            CPU[best] = cpu
        out = proc.stdout + proc.stderr
        if proc.returncode not in (0, 2):
            raise SystemExit(f"jsctl {' '.join(args)} failed ({proc.returncode}):\n{out[-2000:]}")
    return best, out


def cpu(figure: float) -> str:
    return f"(cpu {CPU.get(figure, float('nan')):6.3f} s)"


def summary(out: str) -> str:
    lines = [ln for ln in out.splitlines() if ln.startswith(("Plan:", "No changes"))]
    return lines[-1].split("   ")[0] if lines else f"{len(out.splitlines())} lines"


def run_size(n: int, repeat: int, keep: str | None) -> dict[str, float]:
    base = os.path.join(keep, str(n)) if keep else tempfile.mkdtemp(prefix=f"plan-bench-{n}-")
    try:
        make_workspace(base, n)
        figures: dict[str, float] = {}
        figures["plan new"], out = timed(base, ["plan", "-f", "jobs", "--refresh=false"], repeat)
        print(f"  {n:>6} plan new        {figures['plan new']:7.3f} s {cpu(figures['plan new'])}  ({summary(out)})",
              flush=True)
        recorded = make_state(base)
        figures["plan no-change"], out = timed(base, ["plan", "-f", "jobs", "--refresh=false"], repeat)
        print(f"  {n:>6} plan no-change  {figures['plan no-change']:7.3f} s {cpu(figures['plan no-change'])}  "
              f"({summary(out)}; {recorded} in state)", flush=True)
        figures["state list"], out = timed(base, ["state", "list"], repeat)
        print(f"  {n:>6} state list      {figures['state list']:7.3f} s {cpu(figures['state list'])}  "
              f"({len(out.splitlines())} lines)", flush=True)
        extra, how = engine_env(base)
        figures["status"], out = timed(base, ["status"], repeat, extra)
        print(f"  {n:>6} status          {figures['status']:7.3f} s {cpu(figures['status'])}  "
              f"({len(out.splitlines())} lines; {how})", flush=True)
        return figures
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="500,1000,2000,5000", help="comma-separated job counts")
    ap.add_argument("--jobs", type=int, help="one size only (the reduced run the tests make)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--keep", help="build the workspaces under this directory and keep them")
    args = ap.parse_args(argv)
    sizes = [args.jobs] if args.jobs else [int(s) for s in args.sizes.split(",") if s.strip()]
    results: dict[int, dict[str, float]] = {}
    for n in sizes:
        results[n] = run_size(n, args.repeat, args.keep)
    small, large = sizes[0], sizes[-1]
    print(f"\n{'command':<16}" + "".join(f"{n:>9}" for n in sizes) + "   target  growth")
    for name, target in TARGETS.items():
        row = "".join(f"{results[n][name]:9.3f}" for n in sizes)
        growth = results[large][name] / results[small][name] if results[small][name] else float("nan")
        verdict = "within" if results[large][name] <= target else "OVER"
        print(f"{name:<16}{row}   {target:4.1f} s  {growth:5.2f}x for {large / small:.1f}x the jobs ({verdict})")
    print(f"\n{'cpu seconds':<16}" + "".join(f"{n:>9}" for n in sizes) + "           growth")
    for name in TARGETS:
        row = [CPU.get(results[n][name], float("nan")) for n in sizes]
        growth = row[-1] / row[0] if row[0] else float("nan")
        print(f"{name:<16}" + "".join(f"{x:9.3f}" for x in row) + f"           {growth:5.2f}x")
    try:
        load = os.getloadavg()[0]
        print(f"\nload average (1 min) at the end: {load:.2f}: wall-clock figures are "
              f"{'comparable' if load < 1.5 else 'inflated by other processes'}")
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
