"""The GPU list, the instance catalog (built-in and user file) and cloud offers built from it."""
from __future__ import annotations

import json
import re

import pytest

from jsctl.errors import ConfigError
from jsctl.model import gpus
from jsctl.model.catalog import check_cluster, instance_offers
from jsctl.model.cluster import Cluster
from jsctl.plan import catalog

GIB = 2**30


# --- GPU models, families, aliases ----------------------------------------------------------------

REQUIRED_GPUS = ["v100-16gb", "v100-32gb", "a10g", "l4", "l40s", "a100-40gb", "a100-80gb", "h100-80gb", "h200",
                 "b200", "mi300x", "ascend-910b"]


def test_every_required_gpu_has_memory_tflops_and_nvlink():
    by_name = {m.name: m for m in gpus.models()}
    for name in REQUIRED_GPUS:
        m = by_name[name]
        assert m.memory_gib > 0 and isinstance(m.nvlink, bool)
        assert m.bf16_tflops is None or m.bf16_tflops > 0
    assert by_name["v100-16gb"].bf16_tflops is None  # V100 has no bf16 tensor cores
    assert by_name["a100-80gb"].bf16_tflops == 312 and by_name["h100-80gb"].memory_gib == 80
    assert by_name["ascend-910b"].vendor == "huawei" and not by_name["ascend-910b"].nvlink
    assert not by_name["l4"].nvlink and by_name["a100-80gb"].nvlink


@pytest.mark.parametrize("alias", ["a100-80gb", "A100-SXM4-80GB", "nvidia-a100-80gb", "A100 80GB", "a100_80gb"])
def test_aliases_resolve_to_one_model(alias):
    assert [m.name for m in gpus.resolve(alias)] == ["a100-80gb"]
    assert gpus.canonical(alias) == "a100-80gb"


def test_family_means_every_member():
    assert {m.name for m in gpus.resolve("a100")} == {"a100-40gb", "a100-80gb"}
    assert {m.name for m in gpus.resolve("v100")} == {"v100-16gb", "v100-32gb"}
    assert gpus.is_family("a100") and not gpus.is_family("a100-80gb")
    assert gpus.model("a100") is None and gpus.model("910b").name == "ascend-910b"


def test_matches_family_request_and_model_offer():
    assert gpus.matches("a100", "a100-40gb") and gpus.matches("a100", "A100-SXM4-80GB")
    assert not gpus.matches("a100-80gb", "a100-40gb")
    assert not gpus.matches("a100-80gb", "a100")  # nodes of either size cannot promise 80 GB
    assert not gpus.matches("h100", "a100-80gb")


# --- the built-in instance catalog ----------------------------------------------------------------

REQUIRED_TYPES = {
    "aws": ["p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "g5.48xlarge", "g5.xlarge", "g6.xlarge"],
    "gcp": ["a2-highgpu-8g", "a2-ultragpu-8g", "a3-highgpu-8g", "a2-highgpu-1g"],
    "azure": ["Standard_ND96asr_v4", "Standard_ND96amsr_A100_v4", "Standard_ND96isr_H100_v5"],
}


def test_builtin_catalog_has_the_instance_types_of_the_three_clouds():
    cat = catalog.builtin()
    for cloud, names in REQUIRED_TYPES.items():
        for name in names:
            item = cat.get(cloud, name)
            assert item is not None, (cloud, name)
            assert item.gpus > 0 and item.vcpus > 0 and item.memory_bytes > 0
            assert gpus.model(item.gpu_type) is not None
            assert item.region and item.on_demand and item.on_demand > 0


def test_every_price_has_a_source_and_a_date_or_says_why_not():
    for item in catalog.builtin().instances:
        assert item.source.startswith("http"), item.name
        assert (item.date and re.match(r"\d{4}-\d{2}-\d{2}$", item.date)) or item.note, item.name
        assert item.spot is None or 0 < item.spot < item.on_demand


def test_builtin_shapes_and_fabrics():
    cat = catalog.builtin()
    p4de = cat.get("aws", "p4de.24xlarge")
    assert (p4de.gpu_type, p4de.gpus, p4de.vcpus, p4de.memory_bytes, p4de.interconnect) == (
        "a100-80gb", 8, 96, 1152 * GIB, "efa")
    assert cat.get("gcp", "a3-highgpu-8g").interconnect == "gpudirect-tcpx"
    assert cat.get("azure", "standard_nd96isr_h100_v5").interconnect == "infiniband"  # names ignore case
    assert cat.get("gcp", "a2-ultragpu-8g").spot == pytest.approx(16.219747)
    assert {i.interconnect for i in cat.instances} <= set(catalog.INTERCONNECTS) | {None}


# --- a user catalog file adds or overrides entries ------------------------------------------------

USER = """\
instances:
  - cloud: aws
    name: p4de.24xlarge
    spot: 12.5
    date: 2026-11-28
    source: our AWS bill
  - cloud: aws
    name: p5e.48xlarge
    gpu: H200
    gpus: 8
    vcpus: 192
    memory: 2048Gi
    interconnect: efa
    nvlink: true
    region: us-east-1
    on_demand: 60.0
    date: 2026-11-28
    source: https://aws.amazon.com/ec2/pricing/on-demand/
"""


def test_user_catalog_overrides_fields_and_adds_entries(write):
    cat = catalog.load(write("catalog.yaml", USER))
    p4de = cat.get("aws", "p4de.24xlarge")
    assert p4de.spot == 12.5 and p4de.on_demand == pytest.approx(27.44705)  # untouched field kept
    assert p4de.source == "our AWS bill" and p4de.date == "2026-11-28"
    assert p4de.gpus == 8 and p4de.interconnect == "efa"
    new = cat.get("aws", "p5e.48xlarge")
    assert (new.gpu_type, new.gpus, new.memory_bytes, new.nvlink) == ("h200", 8, 2048 * GIB, True)
    assert new.origin.endswith("catalog.yaml")
    assert len(cat.instances) == len(catalog.builtin().instances) + 1


def test_user_catalog_in_json(write):
    doc = {"instances": [{"cloud": "gcp", "name": "a2-highgpu-8g", "on_demand": 20.0, "date": "2026-11-01",
                          "source": "negotiated rate"}]}
    cat = catalog.load(write("catalog.json", json.dumps(doc, indent=2)))
    assert cat.get("gcp", "a2-highgpu-8g").on_demand == 20.0
    assert cat.get("gcp", "a2-highgpu-8g").spot == pytest.approx(10.34684)


def test_no_catalog_file_is_the_builtin_catalog():
    assert catalog.load(None) is catalog.builtin()


BAD = """\
instances:
  - cloud: aws
    name: p4de.24xlarge
    spto: 9.0
  - cloud: aws
    name: p9.96xlarge
    gpu: a100-81gb
  - cloud: oracle
    name: BM.GPU4.8
  - cloud: gcp
    name: a2-highgpu-8g
    interconnect: infiniband-hdr
    on_demand: -3
    source: x
  - cloud: gcp
    name: a2-highgpu-8g
"""


def test_bad_user_catalog_gives_every_problem_with_its_position(write):
    path = write("catalog.yaml", BAD)
    with pytest.raises(ConfigError) as info:
        catalog.load(path)
    diags = info.value.diagnostics
    found = {(d.line, d.col): d.message for d in diags}
    assert found[(4, 5)] == "unknown field 'spto' in instance type (did you mean 'spot'?)"
    assert found[(7, 10)].startswith("unknown GPU type 'a100-81gb' (did you mean 'a100-80gb'?)")
    assert found[(6, 11)] == "new instance type aws/p9.96xlarge needs gpus, vcpus, region, memory, on_demand or spot"
    assert found[(8, 12)] == "'cloud' must be one of aws, gcp, azure, got 'oracle'"
    assert found[(12, 19)].startswith("unknown interconnect 'infiniband-hdr' (did you mean 'infiniband'?)")
    assert found[(13, 16)] == "'on_demand' must be a price in $/hour (a number ≥ 0), got -3"
    assert found[(16, 11)] == "instance type gcp/a2-highgpu-8g is listed twice (first at line 11)"
    assert len(diags) == 7
    assert all(d.file == path and d.severity == "error" for d in diags)
    assert path in info.value.sources


def test_a_price_needs_its_source(write):
    text = "instances:\n  - cloud: aws\n    name: p5.48xlarge\n    on_demand: 50\n"
    with pytest.raises(ConfigError) as info:
        catalog.load(write("c.yaml", text))
    (d,) = info.value.diagnostics
    assert (d.line, d.col) == (4, 5) and d.message == "a price needs its 'source' (and a 'date')"


def test_family_is_not_an_instance_gpu(write):
    text = ("instances:\n  - cloud: aws\n    name: x.large\n    gpu: a100\n    gpus: 1\n    vcpus: 4\n"
            "    memory: 16Gi\n    region: us-east-1\n    on_demand: 1\n    source: s\n")
    with pytest.raises(ConfigError) as info:
        catalog.load(write("c.yaml", text))
    assert "is a GPU family" in info.value.diagnostics[0].message


def test_yaml_syntax_errors_are_positioned(write):
    with pytest.raises(ConfigError) as info:
        catalog.load(write("c.yaml", "instances:\n  - cloud: aws\n   name: [\n"))
    assert info.value.diagnostics[0].line >= 2


# --- offers for cloud clusters (a cloud provider builds them from the catalog it is given) ---------------------------------------------------------------------

def test_a_cloud_cluster_offers_every_gpu_instance_type_of_its_cloud():
    cat = catalog.builtin()
    found = instance_offers(Cluster("aws", "aws-batch", {"region": "us-east-1"}), cat, "aws")
    assert {o.pool for o in found} == {i.name for i in cat.for_cloud("aws")}
    for o in found:
        assert o.max_nodes is None and o.capacities == ("on-demand",) and o.provider == "aws-batch"
        assert o.region == "us-east-1" and o.note is None
    p5 = next(o for o in found if o.pool == "p5.48xlarge")
    assert (p5.gpu_type, p5.gpus_per_node, p5.cpus_per_node, p5.memory_per_node) == ("h100-80gb", 8, 192, 2048 * GIB)
    assert p5.interconnect == "efa" and p5.nvlink and p5.node_hour_price == 55.04


def test_instance_types_allow_list_and_spot():
    cluster = Cluster("gcp", "gcp-batch", {"instance_types": ["a3-highgpu-8g", "a2-highgpu-1g"], "spot": True})
    found = instance_offers(cluster, catalog.builtin(), "gcp")
    assert [o.pool for o in found] == ["a3-highgpu-8g", "a2-highgpu-1g"]
    assert all(o.capacities == ("on-demand", "spot") for o in found)
    assert found[0].spot_node_hour_price == pytest.approx(35.39575)


def test_spot_only_where_a_spot_price_exists():
    cluster = Cluster("aws", "aws-batch", {"spot": True, "instance_types": ["p5.48xlarge"]})
    (p5,) = instance_offers(cluster, catalog.builtin(), "aws")
    assert p5.capacities == ("on-demand",)
    (warning,) = check_cluster(cluster, catalog.builtin(), "aws")
    assert warning.severity == "warning" and "no spot price for p5.48xlarge" in warning.message


def test_region_other_than_the_reference_region_is_noted():
    (o,) = instance_offers(Cluster("az", "azure-ml", {"region": "westeurope",
                                                      "instance_types": ["Standard_ND96isr_H100_v5"]}),
                           catalog.builtin(), "azure")
    assert o.region == "westeurope" and o.note == "prices are for the catalog's reference region eastus"


def test_unknown_instance_type_is_reported_not_offered():
    cluster = Cluster("aws", "aws-batch", {"instance_types": ["p4de.24xlarg"]})
    assert instance_offers(cluster, catalog.builtin(), "aws") == []
    (problem,) = check_cluster(cluster, catalog.builtin(), "aws")
    assert problem.severity == "error"
    assert "instance type 'p4de.24xlarg' is not in the aws catalog (did you mean 'p4de.24xlarge'?)" in problem.message


def test_every_cluster_asks_its_provider_and_the_catalog_is_input(monkeypatch):
    """No provider is special: one that prices from the catalog gets offers through the same call as
    local and Slurm, which ignore the catalog."""
    from jsctl.config.workspace import Workspace
    from jsctl.plan import planner
    from jsctl.providers import registry

    class CatalogPriced:
        def offers(self, cluster, facts, cat):
            return instance_offers(cluster, cat, cluster.settings["cloud"])

    real = registry.get
    monkeypatch.setattr(registry, "get", lambda name: CatalogPriced() if name == "some-cloud" else real(name))
    ws = Workspace("/w", None, (Cluster("here", "local", {"max_workers": 2}),
                                Cluster("hpc", "slurm", {"partitions": [{"name": "debug", "gpus_per_node": 4}]}),
                                Cluster("c", "some-cloud", {"cloud": "aws", "instance_types": ["p5.48xlarge"]})),
                   "/w/state.json")
    found = planner.offers_for(ws, {}, catalog.builtin())
    assert [(o.cluster, o.pool) for o in found] == [("here", "this machine"), ("hpc", "debug"), ("c", "p5.48xlarge")]
    assert found[2].node_hour_price == 55.04 and found[2].provider == "some-cloud"
    assert planner.offers_for(Workspace("/w", None, ws.clusters[:2], "/w/state.json"), {}, catalog.Catalog(())) \
        == found[:2]


def test_user_catalog_entry_becomes_an_offer(write):
    cat = catalog.load(write("catalog.yaml", USER))
    found = instance_offers(Cluster("aws", "aws-batch", {"spot": True,
                                                         "instance_types": ["p4de.24xlarge", "p5e.48xlarge"]}), cat, "aws")
    assert found[0].capacities == ("on-demand", "spot") and found[0].spot_node_hour_price == 12.5
    assert found[1].gpu_type == "h200" and found[1].capacities == ("on-demand",)
