"""Every command shape launches one group of workers across all nodes (issue 9, item 4), on every
provider: a shell running torchrun with only --nnodes and --nproc_per_node (the product
description's shape), a torchrun the user writes, and a script jsctl wraps in torchrun
(strategy.launcher). The workers do not import torch: each writes what torchrun told it (RANK,
WORLD_SIZE, GROUP_RANK, the rendezvous id); one group means ranks 0..W-1 with one run id."""
from __future__ import annotations

import json

import pytest

from contractkit import Harness, record, wait_record, write_job

WORKER = """\
import json, os
keys = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID")
with open(os.path.join(os.environ["OUT"], "rank%s.json" % os.environ["RANK"]), "w") as fh:
    json.dump({k: os.environ.get(k) for k in keys}, fh)
"""

SHAPES = {
    "shell-torchrun": ["bash", "-c",
                       "torchrun --nnodes=$JETSTREAM_NNODES --nproc_per_node=$JETSTREAM_GPUS_PER_NODE worker.py"],
    "user-torchrun": ["torchrun", "--nnodes=${JETSTREAM_NNODES}", "--nproc_per_node=${JETSTREAM_GPUS_PER_NODE}",
                      "worker.py"],
    "jsctl-torchrun": ["worker.py"],
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_command_shape_forms_one_group(harness: Harness, jsctl, shape):
    pytest.importorskip("torch", reason="torchrun comes with torch (scripts/test.sh installs it)")
    h = harness
    (h.ws / "worker.py").write_text(WORKER)
    out = h.ws / "ranks"
    out.mkdir()
    extra = "strategy:\n  framework: pytorch\n  parallelism: ddp\n  launcher: torchrun\n" \
        if shape == "jsctl-torchrun" else ""
    name = "shape"
    job = write_job(h, name, h.job(name, SHAPES[shape], env={"OUT": str(out)}, compute=h.multinode_compute(),
                                   extra=extra))
    code, stdout, stderr = jsctl("apply", "-f", str(job), "--auto-approve")
    assert code == 0, stdout + stderr
    handle, live = wait_record(h, f"job.{name}", timeout=max(h.timeout, 180))
    rec = record(h, f"job.{name}")
    assert live.phase == "SUCCEEDED", (live, "".join(h.client().logs(handle)))
    p = rec["placement"]
    world = p["nodes"] * max(p["gpus_per_node"], 1)
    ranks = {int(f.stem[4:]): json.loads(f.read_text()) for f in out.glob("rank*.json")}
    assert sorted(ranks) == list(range(world)), ranks
    assert {r["WORLD_SIZE"] for r in ranks.values()} == {str(world)}
    assert {r["GROUP_RANK"] for r in ranks.values()} == {str(n) for n in range(p["nodes"])}
    assert len({r["TORCHELASTIC_RUN_ID"] for r in ranks.values()}) == 1
