"""Offers: one per inventory partition, or per partition the cluster reports (sinfo), with the
cluster's view (down partitions, drained nodes) folded in."""
from __future__ import annotations

import json

from jsctl.model.spec import Compute, Gpu
from jsctl.plan.placement import place
from jsctl.model.catalog import Catalog
from jsctl.model.cluster import Cluster
from jsctl.providers.slurm import SlurmProvider
from jsctl.providers.slurm.inventory import UNKNOWN_CPUS, facts_from_probe, parse_gres


def node(name, state="idle", gres="gpu:4", cpus=2, mem=23081, parts=("debug",), flags=()):
    return {"name": name, "state": state, "state_flags": list(flags), "cpus": cpus, "real_memory": mem,
            "gres": gres, "partitions": list(parts)}


SCONTROL = ("PartitionName=debug AllowGroups=ALL Default=YES MaxTime=UNLIMITED Nodes=jsn[1-2] State=UP "
            "TotalCPUs=4 TotalNodes=2\n"
            "PartitionName=a100 Default=NO MaxTime=2-00:00:00 Nodes=g[1-3] State=UP TotalNodes=3\n"
            "PartitionName=old Default=NO MaxTime=1:00:00 Nodes=o1 State=DOWN TotalNodes=1\n")


def sinfo(*nodes):
    return json.dumps({"meta": {"Slurm": {"release": "22.05.8"}}, "nodes": list(nodes)})


def probed():
    return facts_from_probe("ci", sinfo(
        node("jsn1"), node("jsn2"),
        node("g1", gres="gpu:a100:8(S:0-1)", cpus=128, mem=2_000_000, parts=("a100",)),
        node("g2", gres="gpu:a100:8(S:0-1)", cpus=128, mem=2_000_000, parts=("a100",)),
        node("g3", state="down", gres="gpu:a100:8", cpus=128, mem=2_000_000, parts=("a100",)),
        node("o1", parts=("old",))), SCONTROL)


def test_facts_from_probe():
    f = probed()
    assert set(f.data["partitions"]) == {"debug", "a100", "old"}
    assert f.data["partitions"]["a100"]["max_time_s"] == 2 * 86400
    assert f.data["partitions"]["debug"]["nodes"] == ["jsn1", "jsn2"]
    assert "partition old is DOWN" in f.warnings
    assert any(w.startswith("partition a100: 2 of 3 nodes usable (down)") for w in f.warnings)


def test_facts_from_text_sinfo():
    text = "jsn1|debug*|idle|2|23081|gpu:4\njsn2|debug*|drained|2|23081|gpu:4\n"
    f = facts_from_probe("ci", text, SCONTROL)
    assert f.data["nodes"]["jsn2"]["flags"] == ["DRAIN"]
    assert f.data["partitions"]["debug"]["usable_nodes"] == 1


def test_offers_from_probe_only():
    offers = {o.pool: o for o in SlurmProvider().offers(Cluster("ci", "slurm", {}), probed(), Catalog(()))}
    d = offers["debug"]
    assert (d.gpu_type, d.gpus_per_node, d.max_nodes, d.cpus_per_node, d.memory_per_node, d.max_time_s) == \
        ("*", 4, 2, 2, 23081 * 2**20, None)
    assert "GPU type not declared" in d.note
    a = offers["a100"]
    assert (a.gpu_type, a.gpus_per_node, a.max_nodes, a.available) == ("a100", 8, 2, True)
    assert offers["old"].available is False and "DOWN" in offers["old"].note


def test_offers_from_inventory():
    settings = {"gpu_hour_rate": 1.0, "partitions": [
        {"name": "a100", "gpu_type": "a100-80gb", "gpus_per_node": 8, "nodes": 4, "cpus_per_node": 128,
         "memory_per_node": "2Ti", "interconnect": "infiniband", "nvlink": True, "max_time": "72h",
         "gpu_hour_rate": 2.5, "capacities": ["on-demand", "backfill"]},
        {"name": "cpu", "nodes": 10}]}
    cluster = Cluster("hpc", "slurm", settings)
    a, cpu = SlurmProvider().offers(cluster, None, Catalog(()))
    assert (a.pool, a.gpu_type, a.gpus_per_node, a.max_nodes, a.memory_per_node, a.max_time_s) == \
        ("a100", "a100-80gb", 8, 4, 2 * 2**40, 72 * 3600)
    assert (a.interconnect, a.nvlink, a.gpu_hour_price, a.capacities) == \
        ("infiniband", True, 2.5, ("on-demand", "backfill"))
    assert (cpu.gpu_type, cpu.gpus_per_node, cpu.cpus_per_node, cpu.gpu_hour_price) == (None, 0, UNKNOWN_CPUS, 1.0)


def test_inventory_meets_the_cluster():
    """The cluster's view limits the inventory's: fewer usable nodes, a down partition, a missing one."""
    settings = {"partitions": [{"name": "a100", "gpu_type": "a100-80gb", "gpus_per_node": 8, "nodes": 3},
                               {"name": "old", "gpus_per_node": 4}, {"name": "ghost", "gpus_per_node": 1}]}
    a, old, ghost = SlurmProvider().offers(Cluster("hpc", "slurm", settings), probed(), Catalog(()))
    assert a.max_nodes == 2 and "only 2 of 3 nodes usable now" in a.note
    assert old.available is False
    assert ghost.available is True and "lists no such partition" in ghost.note  # advisory: sbatch decides


def test_finetune_llama_places_4_by_8():
    from jsctl.model.spec import Environment, JobSpec, Lifecycle, Recovery, Strategy

    settings = {"partitions": [{"name": "a100", "gpu_type": "a100-80gb", "gpus_per_node": 8, "nodes": 4,
                                "cpus_per_node": 128, "memory_per_node": "2Ti", "interconnect": "infiniband"}]}
    offers = SlurmProvider().offers(Cluster("hpc", "slurm", settings), None, Catalog(()))
    spec = JobSpec("llama", "high", None, (), Compute(Gpu("a100-80gb", 32), 12, None, 256 * 2**30, None,
                                                      "interconnect", None, "on-demand", None),
                   Environment(None, (), (), (), ()), Strategy("pytorch", "fsdp", (), "torchrun", ()), (), (),
                   Lifecycle(("train.py",), (), (), ()), None, Recovery(0, ()), "x.yaml", {})
    p = place(spec, offers).placement
    assert (p.nodes, p.gpus_per_node, p.cpus_per_task, p.memory_per_node) == (4, 8, 96, 2 * 2**40)


def test_parse_gres():
    assert parse_gres("gpu:4") == (None, 4)
    assert parse_gres("gpu:a100:8(S:0-1)") == ("a100", 8)
    assert parse_gres("nic:1,gpu:h100:4") == ("h100", 4)
    assert parse_gres("") == (None, 0) and parse_gres("(null)") == (None, 0)
