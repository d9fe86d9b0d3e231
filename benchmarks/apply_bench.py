"""Apply, then destroy, N queued jobs on the CI Slurm cluster: jsctl's own time per job, per hundred.

    bash scripts/slurm-up.sh up && export SLURM_CONF=/tmp/jsctl-slurm/etc/slurm.conf
    python benchmarks/apply_bench.py [--jobs 1000] [--per 100]

Each job is a one-CPU job that sleeps (two nodes of two CPUs: nearly all of them stay queued);
destroy cancels them. Apply runs in this process through the SDK, under the state lock, as
`jsctl apply` does. Every call of the Slurm client (submit, adopt, cancel, refresh, ... : sbatch,
squeue, scancel) is timed and subtracted: what is left is jsctl's own time (planning excluded:
the plan is made before the clock starts). Printed per group of --per jobs: jsctl ms per job and
the engine's ms per job, and the ratio of the last group to the first (flat: close to 1). Also the
state file's size at the end of apply. Target (issue 14): under 20 ms per job, flat.
"""
from __future__ import annotations

import argparse
import functools
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

TARGET_MS = 20.0
JOB = """version: jetstream.v1
job:
  name: {name}
compute:
  resources:
    cpu:
      count: 1
    memory:
      total: 16Mi
  time_limit: 15m
lifecycle:
  command: [sh, -c, 'sleep 900']
"""
CLIENT_CALLS = ("submit", "adopt", "cancel", "refresh", "probe", "check")


class Clock:
    """Time spent inside the Slurm client's calls, and a mark at each event of apply."""

    def __init__(self) -> None:
        self.engine = 0.0
        self.marks: list[tuple[float, float]] = []  # (wall, engine) at each job's event

    def instrument(self, cls: type) -> None:
        for name in CLIENT_CALLS:
            original = getattr(cls, name, None)
            if original is None or getattr(original, "_timed", False):
                continue

            @functools.wraps(original)
            def timed(*args, _original=original, **kwargs):
                t0 = time.perf_counter()
                try:
                    return _original(*args, **kwargs)
                finally:
                    self.engine += time.perf_counter() - t0
            timed._timed = True  # type: ignore[attr-defined]
            setattr(cls, name, timed)

    def mark(self, event) -> None:
        if event.type in ("submitted", "adopted", "destroyed"):
            self.marks.append((time.perf_counter(), self.engine))


CLOCK = Clock()


def run(verb: str, ws, files: list[str], destroy: bool, per: int) -> tuple[list[tuple[float, float]], float]:
    from jsctl import api
    from jsctl.providers.slurm.client import SlurmClient

    clock = CLOCK
    clock.instrument(SlurmClient)
    clock.marks.clear()
    store = api.store_for(ws)
    with store.locked(verb):
        the_plan = api.plan(files, None, ws, destroy=destroy, refresh=False, holding_lock=True)
        start = (time.perf_counter(), clock.engine)
        result = api.apply(the_plan, ws, clock.mark)
        end = (time.perf_counter(), clock.engine)
    if not result.ok:
        raise SystemExit(f"{verb} failed: {result.not_submitted}")
    points = [start, *clock.marks]
    groups = []
    for i in range(0, len(clock.marks), per):
        a, b = points[i], points[min(i + per, len(clock.marks))]
        n = min(i + per, len(clock.marks)) - i
        groups.append((((b[0] - a[0]) - (b[1] - a[1])) * 1000 / n, (b[1] - a[1]) * 1000 / n))
    tail = (end[0] - points[-1][0]) - (end[1] - points[-1][1])  # after the last job: the final write
    return groups, tail


def report(verb: str, n: int, per: int, groups: list[tuple[float, float]], tail: float) -> None:
    print(f"{verb} of {n} jobs: jsctl's own time per job (ms), sbatch/squeue/scancel excluded")
    for i, (own, engine) in enumerate(groups):
        print(f"  jobs {i * per + 1:>5}-{min((i + 1) * per, n):<5}  jsctl {own:7.2f} ms/job   engine {engine:8.2f} ms/job")
    first, last = groups[0][0], groups[-1][0]
    mean = sum(g[0] for g in groups) / len(groups)
    print(f"  {verb}: mean {mean:.2f} ms/job (target {TARGET_MS:.0f}: ratio {mean / TARGET_MS:.2f}); "
          f"last/first group {last / first if first else float('nan'):.2f} (flat: ~1); final write {tail * 1000:.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--per", type=int, default=100, help="jobs per printed group")
    ap.add_argument("--keep", action="store_true", help="keep the workspace (its path is printed)")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from slurmci import unreachable

    why = unreachable()
    if why:
        raise SystemExit(f"apply_bench: {why}")
    from jsctl import api

    tmp = tempfile.mkdtemp(prefix="jsctl-apply-bench-")
    try:
        inventory = open(os.path.join(ROOT, "examples", "slurm", "jsctl.yaml")).read()
        with open(os.path.join(tmp, "jsctl.yaml"), "w") as fh:
            fh.write(inventory.replace("/tmp/jsctl-slurm/shared", os.path.join(tmp, "shared")))
        files = []
        for i in range(args.jobs):
            path = os.path.join(tmp, f"j{i:05d}.yaml")
            with open(path, "w") as fh:
                fh.write(JOB.format(name=f"bench-{i:05d}"))
            files.append(path)
        os.chdir(tmp)
        ws = api.open_workspace(None)
        per = max(1, min(args.per, args.jobs))
        groups, tail = run("apply", ws, files, False, per)
        report("apply", args.jobs, per, groups, tail)
        state = os.path.join(tmp, ".jsctl", "state.json")
        size = os.path.getsize(state)
        print(f"  state file after apply: {size / 1024:.0f} KiB, {size / args.jobs:.0f} bytes/job")
        groups, tail = run("destroy", ws, files, True, per)
        report("destroy", args.jobs, per, groups, tail)
    finally:
        if args.keep:
            print(f"workspace kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
