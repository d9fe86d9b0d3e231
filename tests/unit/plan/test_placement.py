"""Placement: one test per rule, the issue's 'done when' cases, and golden candidate tables."""
from __future__ import annotations

import dataclasses
import json
import os

import pytest

from jsctl import api
from jsctl.model.spec import Gpu, JobSpec
from jsctl.model.catalog import instance_offers
from jsctl.plan import catalog, placement
from jsctl.plan.placement import candidates_table, format_candidates, infeasible_message, place, shape
from jsctl.model.cluster import Cluster, Offer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EXAMPLE = os.path.join(ROOT, "examples", "finetune-llama.yaml")
GOLDEN = os.path.join(ROOT, "tests", "golden", "placement")
GIB = 2**30
TIB = 2**40


# --- the inventory of the "done when": a Slurm partition of a100-80gb nodes (8 per node,
# InfiniBand, 2 TiB), a spot cloud option and an H100 cloud option ------------------------------

def slurm(pool: str = "gpu-a100", gpu: str | None = "a100-80gb", per_node: int = 8, nodes: int | None = 16,
          cpus: int = 128, memory: int = 2 * TIB, interconnect: str | None = "infiniband", nvlink: bool = True,
          max_time_h: int | None = 72, rate: float | None = 1.10, cluster: str = "hpc",
          capacities: tuple[str, ...] = ("on-demand", "backfill"), available: bool = True) -> Offer:
    """A Slurm partition as the Slurm provider lists it (built directly: that provider is elsewhere)."""
    return Offer(cluster, "slurm", pool, gpu, per_node, nodes, cpus, memory, interconnect, nvlink,
                 max_time_h * 3600 if max_time_h else None, gpu_hour_price=rate, capacities=capacities,
                 available=available, note=None if available else "partition down")


CLOUDS = ((Cluster("gcp", "gcp-batch", {"region": "us-central1", "spot": True, "instance_types": ["a2-ultragpu-8g"]}),
           "gcp"),
          (Cluster("aws", "aws-batch", {"region": "us-east-1", "instance_types": ["p4de.24xlarge", "p5.48xlarge"]}),
           "aws"))


def inventory(*extra: Offer) -> list[Offer]:
    return [slurm(), *extra, *(o for c, cloud in CLOUDS for o in instance_offers(c, catalog.builtin(), cloud))]


@pytest.fixture
def job(write):
    """Load a variant of the seed's finetune-llama.yaml (with a time_limit) through jsctl.api.validate."""
    base = open(EXAMPLE, encoding="utf-8").read()

    def _job(*edits: tuple[str, str], time_limit: str | None = "48h") -> JobSpec:
        text = base
        if time_limit:
            text = text.replace("  topology: interconnect", f"  topology: interconnect\n  time_limit: {time_limit}")
        for old, new in edits:
            assert old in text, old
            text = text.replace(old, new, 1)
        v = api.validate([write("finetune-llama.yaml", text)])
        assert v.ok, v.diagnostics
        (spec,) = v.specs.values()
        return spec
    return _job


def with_compute(spec: JobSpec, **changes) -> JobSpec:
    return dataclasses.replace(spec, compute=dataclasses.replace(spec.compute, **changes))


def gpu(spec: JobSpec, count: int, type: str | None = "a100-80gb", per_node: int | None = None) -> JobSpec:
    return with_compute(spec, gpu=Gpu(type, count, per_node))


def golden(name: str, text: str) -> None:
    path = os.path.join(GOLDEN, name)
    if os.environ.get("JSCTL_UPDATE_GOLDEN"):
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    with open(path, encoding="utf-8") as fh:
        assert text + "\n" == fh.read(), f"{name} differs from the golden file (JSCTL_UPDATE_GOLDEN=1 rewrites it)"


# --- the "done when" ----------------------------------------------------------------------

def test_finetune_llama_plans_to_4_nodes_of_8_on_the_cheapest_feasible_option(job):
    spec = job()
    result = place(spec, inventory())
    p = result.placement
    assert (p.cluster, p.pool, p.nodes, p.gpus_per_node, p.gpu_type) == ("hpc", "gpu-a100", 4, 8, "a100-80gb")
    assert p.interconnect == "infiniband" and p.capacity == "on-demand"
    assert p.price_per_hour == pytest.approx(35.20)
    assert p.cpus_per_task == 96 and p.memory_per_node == 2 * TIB
    chosen = result.candidates[0]
    assert chosen.chosen and chosen.why == "cheapest feasible"
    feasible_prices = [c.price_per_hour for c in result.candidates if c.feasible]
    assert feasible_prices == sorted(feasible_prices) and p.price_per_hour == min(feasible_prices)
    clusters = {c.offer.cluster for c in result.candidates}
    assert clusters == {"hpc", "gcp", "aws"}
    h100 = next(c for c in result.candidates if c.offer.pool == "p5.48xlarge")
    assert h100.reasons == ("gpu type h100-80gb ≠ a100-80gb",)
    golden("finetune_llama.txt", format_candidates(result, "job.llama-7b-sft"))


def test_gpu_type_family_a100_widens_the_candidates(job):
    forty = slurm("gpu-a100-40", gpu="a100-40gb", memory=1 * TIB)
    exact = place(job(), inventory(forty))
    family = place(job(("type: a100-80gb", "type: a100")), inventory(forty))

    def type_ok(result):
        return {c.offer.pool for c in result.candidates if not any("gpu type" in r for r in c.reasons)}

    assert type_ok(exact) < type_ok(family)
    assert "gpu-a100-40" in type_ok(family) - type_ok(exact)
    widened = next(c for c in family.candidates if c.offer.pool == "gpu-a100-40")
    assert widened.feasible and (widened.nodes, widened.gpus_per_node) == (8, 4)
    assert "memory.per_gpu 256Gi on 1Ti nodes allows 4 of 8" in widened.notes[0]
    assert family.placement.pool == "gpu-a100"  # still the cheapest
    golden("finetune_llama_a100_family.txt", format_candidates(family, "job.llama-7b-sft"))


def test_nine_gpus_per_node_on_8_gpu_nodes_explains_why_it_cannot_be_placed(job):
    spec = job(("count: 32", "count: 36\n      per_node: 9"))
    assert spec.compute.gpu.per_node == 9
    result = place(spec, inventory())
    assert not result.feasible and result.placement is None
    assert result.why == "no feasible placement"
    hpc = next(c for c in result.candidates if c.offer.cluster == "hpc")
    assert "needs 9 GPUs per node, nodes have 8" in hpc.reasons
    assert all(any("needs 9 GPUs per node" in r for r in c.reasons) for c in result.candidates)
    assert result.candidates[0].offer.cluster == "hpc"  # nearest miss first: only the GPUs per node fail
    message = infeasible_message(result, "job.llama-7b-sft")
    assert message.startswith("job.llama-7b-sft cannot be placed")
    assert "hpc / gpu-a100: needs 9 GPUs per node, nodes have 8" in message
    golden("finetune_llama_9_per_node.txt", format_candidates(result, "job.llama-7b-sft"))


# --- GPU type or family ---------------------------------------------------------------------------

@pytest.mark.parametrize("asked", ["a100-80gb", "A100-SXM4-80GB", "nvidia-a100-80gb", "a100"])
def test_gpu_type_aliases_and_family_match_the_node_type(job, asked):
    result = place(gpu(job(), 8, asked), [slurm()])
    assert result.feasible and result.placement.gpu_type == "a100-80gb"


def test_gpu_type_mismatch_is_a_reason(job):
    result = place(gpu(job(), 8, "h100"), [slurm()])
    assert result.candidates[0].reasons == ("gpu type a100-80gb ≠ h100",)


def test_a_family_offered_does_not_satisfy_a_model_asked(job):
    mixed = slurm(gpu="a100")  # a partition of A100s of either size
    miss = place(gpu(job(), 8, "a100-80gb"), [mixed])
    assert miss.candidates[0].reasons == (
        "gpu type a100 does not say which model; a100-80gb asked (name the model in the pool's gpu_type)",)
    assert place(gpu(job(), 8, "a100"), [mixed]).feasible


def test_emulated_gpus_accept_any_type(job):
    local = Offer("local", "local", "this machine", "*", 64, 1, 4096, 64 * TIB, "loopback", True, None,
                  node_hour_price=0.0)
    result = place(with_compute(gpu(job(), 32, "h100"), topology="any"), [local])
    assert result.placement.gpu_type == "h100" and result.placement.nodes == 1


def test_offer_without_gpus_is_a_miss_for_a_gpu_job(job):
    cpu = slurm("cpu", gpu=None, per_node=0)
    assert place(job(), [cpu]).candidates[0].reasons == ("no GPUs",)


def test_cpu_only_job_runs_on_one_node(job):
    spec = with_compute(job(), gpu=None, cpu_per_gpu=None, memory_per_gpu=None, cpu_count=16,
                        memory_total=64 * GIB, topology="any")
    result = place(spec, [slurm("cpu", gpu=None, per_node=0, cpus=32, memory=256 * GIB, rate=None)])
    p = result.placement
    assert (p.nodes, p.gpus_per_node, p.gpu_type, p.cpus_per_task) == (1, 0, None, 16)


# --- GPUs per node: fill, pack evenly, or reject with the reason ----------------------------------

@pytest.mark.parametrize("count, expected", [(32, (4, 8, None)), (8, (1, 8, None)), (4, (1, 4, None)),
                                             (12, (2, 6, "packed as 2 × 6: 12 GPUs do not fill 8-GPU nodes")),
                                             (40, (5, 8, None))])
def test_shape_fills_nodes_and_packs_evenly(count, expected):
    assert shape(count, None, 8) == expected


def test_shape_rejects_a_split_that_leaves_most_of_each_node_idle():
    nodes, per_node, note = shape(13, None, 8)
    assert (nodes, per_node) == (13, 1) and note.startswith("cannot split 13 GPUs evenly onto 8-GPU nodes")


def test_packed_shape_is_feasible_with_a_note(job):
    result = place(with_compute(gpu(job(), 12), memory_per_gpu=None), [slurm()])
    cand = result.candidates[0]
    assert cand.feasible and (cand.nodes, cand.gpus_per_node) == (2, 6)
    assert cand.notes == ("packed as 2 × 6: 12 GPUs do not fill 8-GPU nodes",)
    assert cand.price_per_hour == pytest.approx(12 * 1.10)


def test_count_that_cannot_be_packed_is_rejected_with_the_reason(job):
    result = place(with_compute(gpu(job(), 13), memory_per_gpu=None), [slurm()])
    assert not result.feasible
    assert "cannot split 13 GPUs evenly onto 8-GPU nodes" in result.candidates[0].reasons[0]
    assert "ask for a multiple of 8, or set gpu.per_node" in result.candidates[0].reasons[0]


def test_per_node_is_taken_as_asked(job):
    result = place(gpu(job(), 32, per_node=4), [slurm()])
    assert (result.placement.nodes, result.placement.gpus_per_node) == (8, 4)


def test_per_node_that_does_not_divide_the_count_is_a_reason(job):
    result = place(gpu(job(), 32, per_node=6), [slurm()])
    assert "gpu.count 32 is not a multiple of gpu.per_node 6" in result.candidates[0].reasons


def test_pool_without_enough_nodes_is_a_miss(job):
    small = slurm(nodes=2)
    assert place(job(), [small]).candidates[0].reasons == ("needs 4 nodes × 8 GPUs, gpu-a100 has 2 nodes × 8",)


# --- cpu.per_gpu and memory.per_gpu against the node ---------------------------------------------

def test_memory_per_gpu_times_gpus_per_node_must_fit(job):
    spec = gpu(job(), 32, per_node=8)  # per_node fixed: no repacking
    result = place(spec, [slurm(memory=1 * TIB)])
    assert result.candidates[0].reasons == (
        "needs 2Ti memory per node (memory.per_gpu 256Gi × 8), nodes have 1Ti",)
    assert place(spec, [slurm(memory=2 * TIB)]).feasible  # exactly fits


def test_cpu_per_gpu_times_gpus_per_node_must_fit(job):
    spec = with_compute(gpu(job(), 32, per_node=8), cpu_per_gpu=24)
    assert place(spec, [slurm()]).candidates[0].reasons == (
        "needs 192 CPUs per node (cpu.per_gpu 24 × 8), nodes have 128",)


def test_fewer_gpus_per_node_when_cpu_per_gpu_would_not_fit(job):
    result = place(with_compute(job(), cpu_per_gpu=24), [slurm()])
    cand = result.candidates[0]
    assert cand.feasible and (cand.nodes, cand.gpus_per_node) == (8, 4)
    assert cand.notes == ("packed as 8 × 4: cpu.per_gpu 24 on 128-CPU nodes allows 5 of 8 GPUs per node",)


def test_memory_that_fits_not_even_one_gpu_is_a_reason(job):
    result = place(job(), [slurm(memory=128 * GIB)])
    assert any("memory per node" in r and "nodes have 128Gi" in r for r in result.candidates[0].reasons)


# --- topology --------------------------------------------------------------------------------------

def test_interconnect_needs_a_fabric_across_nodes(job):
    result = place(job(), [slurm(interconnect=None)])
    assert result.candidates[0].reasons == ("no multi-node interconnect for 4 nodes (topology: interconnect)",)


def test_interconnect_is_not_needed_within_one_node(job):
    assert place(gpu(job(), 8), [slurm(interconnect=None)]).feasible


def test_nvlink_needs_nvlink_between_the_gpus_of_a_node(job):
    spec = with_compute(gpu(job(), 8), topology="nvlink")
    assert place(spec, [slurm(nvlink=False)]).candidates[0].reasons == (
        "no NVLink between the GPUs of a node (topology: nvlink)",)
    assert place(spec, [slurm(nvlink=True)]).feasible
    assert place(with_compute(gpu(job(), 1), topology="nvlink"), [slurm(nvlink=False)]).feasible


# --- time_limit ------------------------------------------------------------------------------------

def test_time_limit_over_the_partition_max_time_is_a_reason(job):
    result = place(job(time_limit="96h"), [slurm(max_time_h=72)])
    assert result.candidates[0].reasons == ("time_limit 4d over max time 3d",)
    assert place(job(time_limit="72h"), [slurm(max_time_h=72)]).feasible
    assert place(job(time_limit="96h"), [slurm(max_time_h=None)]).feasible  # no limit


# --- capacity --------------------------------------------------------------------------------------

def test_spot_only_where_offered(job):
    spec = with_compute(gpu(job(), 8), capacity="spot", memory_per_gpu=None, topology="any")
    result = place(spec, inventory())
    hpc = next(c for c in result.candidates if c.offer.cluster == "hpc")
    assert hpc.reasons == ("no spot capacity",)
    p = result.placement
    assert (p.cluster, p.pool, p.capacity) == ("gcp", "a2-ultragpu-8g", "spot")
    assert p.price_per_hour == pytest.approx(16.219747, abs=1e-3)  # the spot price, not on-demand
    golden("spot_8_gpus.txt", format_candidates(result, "job.llama-7b-sft"))


def test_spot_priced_but_not_allowed_by_the_cluster_says_so(job):
    no_spot = Cluster("gcp", "gcp-batch", {"instance_types": ["a2-ultragpu-8g"]})
    spec = with_compute(gpu(job(), 8), capacity="spot", memory_per_gpu=None)
    result = place(spec, instance_offers(no_spot, catalog.builtin(), "gcp"))
    assert result.candidates[0].reasons == ("no spot capacity: the cluster does not allow spot (spot: true)",)


def test_backfill_only_where_offered(job):
    spec = with_compute(job(), capacity="backfill")
    assert place(spec, [slurm()]).placement.capacity == "backfill"
    assert place(spec, [slurm(capacities=("on-demand",))]).candidates[0].reasons == ("no backfill capacity",)


def test_unavailable_pool_is_a_miss(job):
    assert place(job(), [slurm(available=False)]).candidates[0].reasons == (
        "gpu-a100 is not available (partition down)",)


# --- compute.target, prefer: order, cheapest feasible wins ---------------------------------------

def test_cheapest_feasible_wins(job):
    dear = slurm("gpu-a100-dear", rate=2.0)
    result = place(job(), [dear, slurm()])
    assert result.placement.pool == "gpu-a100"
    assert [c.offer.pool for c in result.candidates] == ["gpu-a100", "gpu-a100-dear"]


def test_prefer_order_beats_price(job):
    other = slurm(cluster="lab", rate=2.0)
    result = place(job(), [slurm(), other], prefer=["lab"])
    assert result.placement.cluster == "lab"
    assert result.candidates[0].why == "first in prefer order"
    assert "chosen: first in prefer order" in candidates_table(result)[1]
    assert place(job(), [slurm(), other], prefer=["hpc"]).placement.cluster == "hpc"


def test_prefer_names_a_pool(job):
    result = place(job(), [slurm(), slurm("gpu-a100-b", rate=1.5)], prefer=["hpc/gpu-a100-b"])
    assert result.placement.pool == "gpu-a100-b"


def test_target_narrows_to_one_cluster(job):
    result = place(with_compute(job(), target="aws"), inventory())
    assert {c.offer.cluster for c in result.candidates} == {"aws"}
    assert result.placement.pool == "p4de.24xlarge"


def test_target_names_a_pool(job):
    result = place(with_compute(job(), target="hpc/gpu-a100"), inventory(slurm("other", rate=0.5)))
    assert [c.offer.pool for c in result.candidates] == ["gpu-a100"]


def test_target_that_matches_nothing_says_so(job):
    result = place(with_compute(job(), target="nowhere"), inventory())
    assert not result.feasible and result.candidates == ()
    assert result.why == "compute.target 'nowhere' matches no cluster in the inventory (clusters: aws, gcp, hpc)"
    assert infeasible_message(result, "job.x") == f"job.x cannot be placed: {result.why}"


# --- nearest misses and output ---------------------------------------------------------------------

def test_nearest_misses_come_first(job):
    wrong_type = slurm("h100", gpu="h100-80gb")
    too_short = slurm("short", max_time_h=24)
    no_fabric = slurm("eth", interconnect=None, max_time_h=24)
    result = place(job(), [wrong_type, no_fabric, too_short])
    assert [c.offer.pool for c in result.candidates] == ["short", "eth", "h100"]


def test_table_limits_rows_and_says_how_many_more(job):
    many = [slurm(f"p{i}", rate=1 + i / 10) for i in range(10)]
    lines = candidates_table(place(job(), many), limit=3)
    assert len(lines) == 5 and lines[-1] == "… and 7 more candidates (--json lists all)"


def test_result_is_json_ready(job):
    data = place(job(), inventory()).to_dict()
    json.dumps(data)
    assert data["placement"]["nodes"] == 4 and data["candidates"][0]["chosen"]
    assert data["candidates"][0]["why"] == "cheapest feasible"


def test_candidate_table_survives_rebuilding_the_result(job):
    """The plan stores candidates and rebuilds PlacementResult(placement, candidates) to print them."""
    result = place(job(), [slurm(), slurm(cluster="lab", rate=2.0)], prefer=["lab"])
    rebuilt = placement.PlacementResult(result.placement, result.candidates)
    assert candidates_table(rebuilt) == candidates_table(result)


def test_a_cpu_job_prefers_a_pool_without_gpus_at_the_same_price(job):
    """A CPU-only job on a pool priced per GPU-hour costs nothing either way: it goes to the CPU pool
    rather than occupy a GPU node (whatever the pools are called)."""
    cpu_job = with_compute(job(), gpu=None, memory_per_gpu=None, cpu_per_gpu=None, topology=None)
    gpus, cpus = slurm("a-gpus", interconnect=None), slurm("z-cpus", gpu=None, per_node=0, interconnect=None)
    assert place(cpu_job, [gpus, cpus]).placement.pool == "z-cpus"
