"""A provider outside jsctl (tests/providers/jsctl-testcloud, found through its entry point alone)
plugs into the core: its settings are checked against its schema, it plans onto its own offers at
its catalog prices, and the run-time names it declares wait for run time."""
from __future__ import annotations

import json
from importlib import resources

import pytest

from contractkit import TestCloudHarness
from jsctl.providers import registry

pytestmark = pytest.mark.skipif("testcloud" not in registry.names(),
                                reason="jsctl-testcloud is not installed (scripts/test.sh installs it: "
                                       "pip install -e tests/providers/jsctl-testcloud)")

BIG = """\
version: jetstream.v1
job:
  name: big
compute:
  resources:
    gpu:
      type: a100-80gb
      count: 8
  time_limit: 2h
lifecycle:
  command: [python, train.py, --node, "${TESTCLOUD_NODE_INDEX}"]
"""


def inventory(extra: str = "", cloud: str = "aws") -> str:
    return (f"version: jetstream.v1\nclusters:\n  - name: tc\n    provider: testcloud\n    cloud: {cloud}\n"
            f"    region: us-east-1\n    root: .testcloud\n{extra}")


@pytest.fixture
def ws(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "big.yaml").write_text(BIG)
    return tmp_path


def price(cloud: str, name: str, key: str = "on_demand") -> float:
    """The built-in catalog's list price (jsctl/data/catalog.json), read without jsctl's loader."""
    doc = json.loads(resources.files("jsctl").joinpath("data", "catalog.json").read_text("utf-8"))
    (item,) = [i for i in doc["instances"] if i["cloud"] == cloud and i["name"] == name]
    return item[key]


def test_the_entry_point_is_the_only_registration():
    provider = registry.get("testcloud")
    assert type(provider).__module__ == "jsctl_testcloud"
    from jsctl.providers.registry import BUILTIN

    assert "testcloud" not in BUILTIN


def test_plans_onto_its_own_offers_at_catalog_prices(ws, jsctl):
    (ws / "jsctl.yaml").write_text(inventory("    instance_types: [g5.xlarge, p4de.24xlarge]\n"))
    code, out, err = jsctl("plan", "-f", "big.yaml", "--json")
    assert code == 0, out + err
    (rc,) = json.loads(out)["resource_changes"]
    after = rc["change"]["after"]
    assert rc["provider"] == "testcloud" and rc["cluster"] == "tc"
    placement = after["placement"]
    assert placement["pool"] == "p4de.24xlarge" and placement["nodes"] == 1 and placement["gpus_per_node"] == 8
    assert placement["price_per_hour"] == pytest.approx(price("aws", "p4de.24xlarge"), abs=1e-3)
    assert after["artifact"]["kind"] == "testcloud-job"
    assert after["artifact"]["request"]["instance_type"] == "p4de.24xlarge"

    code, out, err = jsctl("plan", "-f", "big.yaml")
    assert code == 0, out + err
    assert "tc / p4de.24xlarge" in out, out


def test_without_an_allow_list_every_gpu_type_of_its_cloud_competes(ws, jsctl):
    (ws / "jsctl.yaml").write_text(inventory())
    code, out, err = jsctl("plan", "-f", "big.yaml", "--json")
    assert code == 0, out + err
    (rc,) = json.loads(out)["resource_changes"]
    placement = rc["change"]["after"]["placement"]
    assert placement["pool"] == "p4de.24xlarge"  # aws's only 8 × A100-80GB type
    (ws / "jsctl.yaml").write_text(inventory(cloud="gcp"))
    code, out, err = jsctl("plan", "-f", "big.yaml", "--json")
    assert code == 0, out + err
    (rc,) = json.loads(out)["resource_changes"]
    placement = rc["change"]["after"]["placement"]
    assert placement["pool"] == "a2-ultragpu-8g", placement
    assert placement["price_per_hour"] == pytest.approx(price("gcp", "a2-ultragpu-8g"), abs=1e-3)


def test_its_settings_schema_is_checked_with_positions(ws, jsctl):
    (ws / "jsctl.yaml").write_text(inventory("    spot: maybe\n", cloud="mars"))
    code, out, err = jsctl("plan", "-f", "big.yaml")
    assert code == 1 and "Traceback" not in err, out + err
    assert "jsctl.yaml:5:" in err and "mars" in err, err  # cloud: mars (line 5)
    assert "jsctl.yaml:8:" in err, err  # spot: maybe (line 8)


def test_an_unknown_provider_is_named_with_the_installed_ones(ws, jsctl):
    (ws / "jsctl.yaml").write_text(inventory().replace("provider: testcloud", "provider: testclod"))
    code, out, err = jsctl("plan", "-f", "big.yaml")
    assert code == 1 and "Traceback" not in err, out + err
    assert "testcloud" in err, err  # did you mean, or the installed list


def test_its_run_time_names_wait_for_run_time(ws, jsctl):
    (ws / "jsctl.yaml").write_text(inventory())
    code, out, err = jsctl("validate", "big.yaml")
    assert code == 0, out + err
    code, out, err = jsctl("plan", "-f", "big.yaml", "--json")
    assert code == 0, out + err
    (rc,) = json.loads(out)["resource_changes"]
    assert rc["change"]["after"]["artifact"]["request"]["command"][-1] == "${TESTCLOUD_NODE_INDEX}"


def test_it_runs_a_two_node_job(tmp_path, monkeypatch, jsctl):
    """Each node of a multi-node job starts, with its index, and they share one MASTER_ADDR:PORT."""
    monkeypatch.chdir(tmp_path)
    h = TestCloudHarness(tmp_path)
    h.setup()
    text, prefix = h.dump_job("two", ["TESTCLOUD_NODE_INDEX", "MASTER_PORT", "JETSTREAM_NNODES"],
                              args=["${TESTCLOUD_NODE_INDEX}"])
    text = text.replace("compute:\n  resources:\n    cpu:\n      count: 1\n    memory:\n      total: 128Mi\n",
                        "compute:\n  resources:\n    gpu:\n      type: a100-80gb\n      count: 16\n")
    (tmp_path / "two.yaml").write_text(text)
    code, out, err = jsctl("apply", "-f", "two.yaml", "--auto-approve")
    assert code == 0, out + err
    state = json.loads((tmp_path / ".jsctl" / "state.json").read_text())
    rec = state["resources"]["job.two"]
    assert rec["placement"]["nodes"] == 2
    from jsctl.model.status import JobHandle

    handle = JobHandle.parse(rec["handle"])
    live = h.wait(h.client(), handle)
    assert live.phase == "SUCCEEDED", live
    dumps = sorted(prefix.parent.glob("two.*"))
    assert len(dumps) == 2, dumps
    got = [json.loads(p.read_text()) for p in dumps]
    assert sorted(d["argv"][0] for d in got) == ["0", "1"]
    assert {d["env"]["MASTER_PORT"] for d in got} == {got[0]["env"]["MASTER_PORT"]}
    assert {d["env"]["JETSTREAM_NNODES"] for d in got} == {"2"}


def test_a_misspelt_instance_type_is_named(ws, jsctl):
    (ws / "jsctl.yaml").write_text(inventory("    instance_types: [p4de.24xlage]\n"))
    code, out, err = jsctl("plan", "-f", "big.yaml")
    assert code == 1 and "Traceback" not in err, out + err
    assert "p4de.24xlage" in err and "did you mean 'p4de.24xlarge'" in err, err
