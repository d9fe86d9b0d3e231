"""A learning-rate sweep with the jsctl SDK: eight quickstart jobs, one per learning rate, planned and
applied together, waited for, and the best final loss printed.

    python examples/sdk/sweep.py --workdir /tmp/sweep --steps 300

The work directory is the workspace (its jsctl.yaml if it has one, else the local default: the jobs
run on this machine) and gets one job file per learning rate, beside a copy of the quickstart's
train.py. Run it again with the same arguments and nothing is rerun (the plan has no changes): the
results are read again. Exit 0 when every job succeeded, 1 otherwise (the best of those that did is
still printed), 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
from pathlib import Path

import jsctl

EXAMPLES = Path(__file__).resolve().parent.parent
LEARNING_RATES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1)


def job_document(template: Path, name: str, lr: float, steps: int, gpus: int | None) -> str:
    """The quickstart job with its own name, a fixed number of steps and its learning rate."""
    import io

    from ruamel.yaml import YAML  # jsctl's own YAML library: keeps the template's comments

    yaml = YAML()
    doc = yaml.load(template.read_text())
    doc["job"]["name"] = name
    doc["job"].setdefault("labels", {})["sweep"] = "learning-rate"
    command = [str(steps) if "STEPS" in str(arg) else arg for arg in doc["lifecycle"]["command"]]
    doc["lifecycle"]["command"] = [*command, "--lr", repr(lr)]
    # a metric line on the last step, so the job's final loss is what `jsctl metrics` reports last
    doc["environment"]["env_vars"]["JETSTREAM_LOG_EVERY"] = math.gcd(steps, 10)
    if gpus is not None:
        doc["compute"]["resources"]["gpu"]["count"] = gpus
    out = io.StringIO()
    yaml.dump(doc, out)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300, help="training steps per job (default 300)")
    ap.add_argument("--workdir", default="sweep", help="the workspace directory (default ./sweep)")
    ap.add_argument("--gpus", type=int, default=None, help="GPUs (local: worker processes) per job; "
                                                           "default: the quickstart's")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds to wait for the jobs (default 3600)")
    args = ap.parse_args(argv)
    if args.steps < 1 or (args.gpus is not None and args.gpus < 1) or args.timeout <= 0:
        ap.error("--steps and --gpus must be at least 1, --timeout more than 0")

    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(EXAMPLES / "quickstart", workdir / "quickstart", dirs_exist_ok=True)
    files = []
    for i, lr in enumerate(LEARNING_RATES):
        path = workdir / f"sweep-lr{i}.yaml"
        path.write_text(job_document(EXAMPLES / "quickstart.yaml", f"sweep-lr{i}", lr, args.steps, args.gpus))
        files.append(str(path))
    os.chdir(workdir)  # the workspace: ./jsctl.yaml, else the local default with its state in ./.jsctl

    try:
        ws = jsctl.open_workspace()
        the_plan = jsctl.plan(files, ws=ws, echo=lambda line: print(line, file=sys.stderr))
        add, change, destroy = the_plan.count()
        print(f"Plan: {add} to add, {change} to change, {destroy} to destroy.")
        result = jsctl.apply(the_plan, ws, on_event=lambda event: print(f"  {event.type}: {event.address}"))
        if not result.ok:
            for address, why in result.not_submitted.items():
                print(f"not submitted: {address}: {why}", file=sys.stderr)
        jobs = [f"job.sweep-lr{i}" for i in range(len(LEARNING_RATES))]
        print(f"Waiting for {len(jobs)} jobs...")
        finals = jsctl.wait_all(ws, jobs, timeout_s=args.timeout)
        losses: dict[str, float] = {}
        print(f"{'JOB':<16}{'LR':>8}  {'PHASE':<10}{'STEP':>6}  FINAL LOSS")
        for lr, row in zip(LEARNING_RATES, finals):
            loss = step = None
            if row.phase == "SUCCEEDED":
                summary = jsctl.metrics(ws, row.address)
                loss, step = summary.latest("loss"), summary.step
                if loss is not None and step == args.steps:
                    losses[row.address] = loss
            print(f"{row.name:<16}{lr:>8g}  {row.phase:<10}{step if step is not None else '-':>6}  "
                  f"{loss if loss is not None else '-'}")
    except jsctl.JsctlError as exc:
        print(f"Error: {exc.message}" + (f"\n  {exc.hint}" if exc.hint else ""), file=sys.stderr)
        return 1
    if not losses:
        print("Error: no job of the sweep finished with a loss", file=sys.stderr)
        return 1
    best = min(losses, key=losses.__getitem__)
    lr = LEARNING_RATES[int(best.removeprefix("job.sweep-lr"))]
    print(f"best final loss: {losses[best]!r} (lr {lr:g}, {best})")
    return 0 if len(losses) == len(LEARNING_RATES) else 1


if __name__ == "__main__":
    sys.exit(main())
