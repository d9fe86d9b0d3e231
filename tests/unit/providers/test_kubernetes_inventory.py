"""The Kubernetes inventory: settings validated by the schema, one offer per pool, live capacity from
the nodes a probe reads (facts_from_nodes), what `jsctl cluster status` shows, and validate()."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kubekit import GPU_JOB, plan_one
from jsctl.api.live import open_workspace
from jsctl.errors import ConfigError
from jsctl.model.catalog import Catalog
from jsctl.model.cluster import Cluster
from jsctl.providers import registry
from jsctl.providers.kubernetes import KubernetesProvider
from jsctl.providers.kubernetes.inventory import facts_from_nodes, offers, quantity
from jsctl.providers.kubernetes.settings import KubernetesSettings

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")


def node(name, pool, gpus=8, ready=True, unschedulable=False, cpu="96", memory="1Ti"):
    alloc = {"cpu": cpu, "memory": memory}
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
    labels = {"jsctl.dev/pool": pool, **({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"} if gpus else {})}
    return {"metadata": {"name": name, "labels": labels},
            "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}] if gpus else [],
                     **({"unschedulable": True} if unschedulable else {})},
            "status": {"allocatable": alloc, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


NODES = [node("a100-0", "a100"), node("a100-1", "a100"), node("a100-2", "a100", ready=False),
         node("a100-3", "a100", unschedulable=True), node("cpu-0", "cpu", gpus=0, cpu="32", memory="128Gi"),
         node("cpu-1", "cpu", gpus=0, cpu="31500m", memory="131072Mi")]


def ci_settings() -> KubernetesSettings:
    ws = open_workspace(os.path.join(ROOT, "examples", "kubernetes", "jsctl.yaml"))
    (cluster,) = ws.clusters
    return KubernetesSettings.of(cluster)


def test_the_ci_inventory_loads_and_offers_one_place_per_pool():
    s = ci_settings()
    assert (s.cluster, s.namespace, s.flavor, s.kubeconfig) == ("k8s", "jsctl-ci", "job", "/tmp/jsctl-k8s/kubeconfig")
    a100, cpu = offers(s, None)
    assert (a100.pool, a100.gpu_type, a100.gpus_per_node, a100.max_nodes, a100.cpus_per_node) == \
        ("a100", "a100-80gb", 8, 4, 96)
    assert a100.memory_per_node == 2 * 2**40 and a100.interconnect == "infiniband" and a100.gpu_hour_price == 2.0
    assert (cpu.pool, cpu.gpu_type, cpu.gpus_per_node, cpu.max_nodes) == ("cpu", None, 0, 2)


def test_the_schema_rejects_bad_settings(tmp_path):
    path = tmp_path / "jsctl.yaml"
    path.write_text("version: jetstream.v1\nclusters:\n  - name: k\n    provider: kubernetes\n    flavor: argo\n"
                    "    pools: [{name: a, gpu_per_node: 8}]\n")
    with pytest.raises(ConfigError) as info:
        open_workspace(str(path))
    text = str([d.message for d in info.value.diagnostics])
    assert "flavor" in text and "gpu_per_node" in text


def test_facts_from_nodes():
    f = facts_from_nodes("k8s", NODES, {"gpus_requested": {"a100-0": 8, "a100-1": 2, "a100-2": 4}, "gpus_queued": 16,
                                        "crds": ["jobsets.jobset.x-k8s.io"]})
    assert f.data["gpus_total"] == 32 and f.data["gpus_free"] == 6 and f.data["gpus_queued"] == 16
    assert f.data["crds"] == ["jobsets.jobset.x-k8s.io"]
    assert f.data["nodes"]["cpu-1"]["cpus"] == 31 and f.data["nodes"]["cpu-1"]["memory"] == 128 * 2**30
    assert f.data["nodes"]["a100-0"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present",
                                                    "effect": "NoSchedule"}]
    assert f.warnings == ("node a100-2 is not ready", "node a100-3 is cordoned")


def test_live_nodes_bound_the_offers():
    f = facts_from_nodes("k8s", NODES, {"gpus_requested": {"a100-0": 8}})
    a100, cpu = offers(ci_settings(), f)
    assert a100.max_nodes == 2 and a100.available and "only 2 of 4 nodes ready" in a100.note
    assert "8 of 16 GPUs free now" in a100.note
    assert cpu.max_nodes == 2
    down = facts_from_nodes("k8s", [n for n in NODES if n["metadata"]["name"].startswith("cpu")])
    assert not offers(ci_settings(), down)[0].available


def test_pools_without_declared_shapes_take_them_from_the_nodes():
    s = KubernetesSettings.of(Cluster("k", "kubernetes", {"pools": [{"name": "a100", "gpu_type": "a100-80gb",
                                                                     "node_selector": {"jsctl.dev/pool": "a100"}}]}))
    (o,) = offers(s, facts_from_nodes("k", NODES))
    assert (o.gpus_per_node, o.cpus_per_node, o.memory_per_node, o.max_nodes) == (8, 96, 2**40, 2)


def test_quantities():
    assert quantity("95500m") == 95.5 and quantity("1Ti") == 2**40 and quantity("1e3") == 1000
    assert quantity("junk") == 0 and quantity(None) == 0


def test_capabilities_and_runtime_names():
    p = registry.get("kubernetes")
    assert isinstance(p, KubernetesProvider)
    caps = p.capabilities()
    assert (caps.pause, caps.resume, caps.scale, caps.node_logs, caps.check_remote, caps.dependencies) == \
        (True, True, False, True, True, False)
    assert "JOB_COMPLETION_INDEX" in p.runtime_names() and "HOSTNAME" in p.runtime_names()
    assert p.offers(Cluster("k", "kubernetes", {"pools": [{"name": "p", "gpus_per_node": 4, "nodes": 1}]}), None,
                    Catalog(())) [0].max_nodes == 1


def test_validate_warns_about_what_kubernetes_cannot_do(tmp_path):
    job = GPU_JOB.replace("  name: train\n", "  name: train\n  priority: high\n")
    job = job.replace("  command:", "  post_success:\n    - command: [echo, done]\n  command:")
    c = plan_one(tmp_path, job.replace("/data/sets/a", "/nowhere"), flavor="kubeflow")
    notes = " | ".join(c.artifact.notes)
    assert "not mounted" in notes and "post_success" in notes


def test_the_cli_does_not_import_kubernetes():
    code = ("import sys, jsctl.cli; from jsctl.providers import registry; p = registry.get('kubernetes'); "
            "p.settings_schema(); assert 'kubernetes' not in sys.modules, 'kubernetes imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
