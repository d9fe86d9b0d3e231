"""The Kubernetes manifest: the launch contract in Kubernetes' own expansion syntax, resources,
scheduling, storage, recovery, queues and names, for every flavor (pure: no apiserver)."""
from __future__ import annotations

import json

import pytest

from hostile import HOSTILE, hostile_job
from kubekit import GPU_JOB, documents, plan_one, pod_specs
from kubelet import argv_of, env_of
from jsctl.errors import ConfigError
from jsctl.model.status import REQUEUE_EXIT_CODE

FLAVORS = ["job", "jobset", "volcano", "kubeflow"]


def main_container(obj):
    if obj["kind"] == "TrainJob":
        t = obj["spec"]["trainer"]
        return {"command": t["command"], "args": t.get("args", []), "env": t["env"], "resources": t["resourcesPerNode"]}
    return pod_specs(obj)[0]["containers"][0]


@pytest.mark.parametrize("flavor", FLAVORS)
def test_the_launch_contract_reaches_every_pod(tmp_path, flavor):
    c = plan_one(tmp_path, flavor=flavor)
    docs = documents(c)
    workload = docs[-1]
    job_id = c.job_id
    main = main_container(workload)
    env = env_of(main, {"NODE_RANK": "2", "JETSTREAM_NODE_RANK": "2", "HF_TOKEN": "s3cret"})
    assert env["JOB_ID"] == job_id and env["JETSTREAM_NNODES"] == "2" and env["JETSTREAM_GPUS_PER_NODE"] == "8"
    assert env["MASTER_PORT"] == "29500"
    assert env["MASTER_ADDR"].startswith(job_id + "-") and env["MASTER_ADDR"].endswith(".jsctl-ci.svc")
    assert env["PET_RDZV_ENDPOINT"] == f"{env['MASTER_ADDR']}:29500"
    assert env["RUN_DIR"] == f"/shared/runs/{job_id}"
    assert env["LOG_FILE"] == f"/shared/runs/{job_id}/rank-2.log"  # names above it, in order
    assert env["JETSTREAM_CHECKPOINT_DIR"] == "/ckpt" and env["JETSTREAM_MOUNT_DATASET"] == "/in"
    argv = argv_of(main, env)
    assert argv[:3] == ["python", "-m", "jsruntime.launch"]
    assert argv[-5:] == ["train.py", "--out", f"/shared/runs/{job_id}", "--rank", "2"]
    assert f"--rdzv_endpoint={env['MASTER_ADDR']}:29500" in argv
    if flavor == "kubeflow":  # Trainer sets these itself (and refuses them in trainer.env)
        assert "PET_NNODES" not in env and "PET_NPROC_PER_NODE" not in env
        assert workload["spec"]["trainer"]["numNodes"] == 2
    else:
        assert env["PET_NNODES"] == "2"
    rank = next(e for e in main["env"] if e["name"] == "NODE_RANK")
    assert "fieldRef" in rank["valueFrom"]


@pytest.mark.parametrize("flavor", FLAVORS)
def test_secrets_are_references_never_values(tmp_path, flavor):
    c = plan_one(tmp_path, flavor=flavor)
    main = main_container(documents(c)[-1])
    (secret,) = [e for e in main["env"] if e["name"] == "HF_TOKEN"]
    assert secret["valueFrom"] == {"secretKeyRef": {"name": f"{c.job_id}-secrets", "key": "HF_TOKEN"}}
    assert c.artifact.request.secret == f"{c.job_id}-secrets"
    assert c.artifact.secrets == ("HF_TOKEN",)


def test_each_env_value_names_only_variables_above_it(tmp_path):
    c = plan_one(tmp_path)
    for obj in documents(c):
        for spec in pod_specs(obj):
            for container in [*spec.get("initContainers", ()), *spec["containers"]]:
                seen: set[str] = set()
                for e in container["env"]:
                    text = e.get("value", "").replace("$$", "")
                    for name in [p.split(")")[0] for p in text.split("$(")[1:]]:
                        assert name in seen, (e["name"], name)
                    seen.add(e["name"])


@pytest.mark.parametrize("flavor", FLAVORS)
def test_hostile_values_arrive_literally(tmp_path, flavor):
    job = hostile_job('    RUNTIME: "nodes=${JETSTREAM_NNODES}"\n    LITERAL: "$${HOME} stays"', ("RUNTIME",),
                      "  image: python:3.12\n")
    c = plan_one(tmp_path, job, flavor=flavor)
    main = main_container(documents(c)[-1])
    env = env_of(main, {})
    for i, value in enumerate(HOSTILE):
        assert env[f"V{i}"] == value
    assert env["RUNTIME"] == "nodes=1"
    assert env["LITERAL"] == "${HOME} stays"
    argv = argv_of(main, env)
    assert argv[-len(HOSTILE):] == HOSTILE


def test_pre_run_runs_in_an_init_container_on_the_first_pod(tmp_path):
    job = hostile_job("", (), "  image: python:3.12\n")
    c = plan_one(tmp_path, job)
    spec = pod_specs(documents(c)[-1])[0]
    (init,) = spec["initContainers"]
    argv = argv_of(init, env_of(init, {}))
    assert argv[:2] == ["/bin/sh", "-c"]
    assert argv[4:] == ["sh", "-c", 'printf "%s" "$0" > pre.txt', "it's $(touch PWNED_pre); `id`"]
    assert '"${NODE_RANK:-0}" != 0' in argv[2]


def test_resources_scheduling_and_storage(tmp_path):
    c = plan_one(tmp_path)
    assert c.placement.pool == "a100" and (c.placement.nodes, c.placement.gpus_per_node) == (2, 8)
    spec = pod_specs(documents(c)[-1])[0]
    res = spec["containers"][0]["resources"]
    assert res["requests"] == {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "rdma/ib": "1"}
    assert res["limits"] == {"memory": "512Gi", "nvidia.com/gpu": "8", "rdma/ib": "1"}
    assert spec["nodeSelector"] == {"jsctl.dev/pool": "a100"}
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert spec["restartPolicy"] == "Never" and spec["subdomain"] == c.job_id
    mounts = {m["mountPath"]: m for m in spec["containers"][0]["volumeMounts"]}
    assert mounts["/in"]["readOnly"] is True
    assert mounts["/ckpt"]["subPath"] == f"team/ckpt/{c.job_id}"
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["pvc-shared-rwx"]["persistentVolumeClaim"] == {"claimName": "shared-rwx"}
    host = next(v for v in volumes.values() if "hostPath" in v)
    assert host["hostPath"] == {"path": "/mnt/data/sets/a"}


def test_recovery_and_time_limit(tmp_path):
    c = plan_one(tmp_path)
    service, job = documents(c)
    assert service["kind"] == "Service" and service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {"jsctl.dev/job-id": c.job_id}
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] == 2
    assert spec["activeDeadlineSeconds"] == 7200 and spec["backoffLimit"] == 4
    rules = spec["podFailurePolicy"]["rules"]
    assert rules[0] == {"action": "Ignore", "onExitCodes": {"containerName": "node", "operator": "In",
                                                           "values": [REQUEUE_EXIT_CODE]}}
    assert rules[-1]["action"] == "FailJob" and rules[-1]["onExitCodes"]["values"] == [1, 75, 137]
    assert spec["template"]["spec"]["terminationGracePeriodSeconds"] == 180


@pytest.mark.parametrize("flavor", ["job", "jobset", "kubeflow"])
def test_a_kueue_queue_suspends_the_workload(tmp_path, flavor):
    c = plan_one(tmp_path, flavor=flavor, extra="queue: team-a\n")
    workload = documents(c)[-1]
    assert workload["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
    assert workload["spec"]["suspend"] is True
    c2 = plan_one(tmp_path, GPU_JOB.replace("  name: train\n", "  name: train\n  queue: urgent\n"), flavor=flavor,
                  extra="queue: team-a\n")
    assert documents(c2)[-1]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "urgent"
    assert any("Kueue" in n for n in c2.artifact.notes)


def test_labels_and_annotations_on_every_object(tmp_path):
    job = GPU_JOB.replace("  name: train\n", "  name: train\n  labels: {team: nlp, 'bad key!': x, note: 'a b'}\n")
    c = plan_one(tmp_path, job, flavor="jobset")
    (js,) = documents(c)
    for meta in (js["metadata"], js["spec"]["replicatedJobs"][0]["template"]["metadata"]):
        assert meta["labels"]["jsctl.dev/job-id"] == c.job_id and meta["labels"]["jsctl.dev/generation"] == "1"
        assert meta["annotations"]["jsctl.dev/address"] == "job.train"
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]
    assert pod["labels"]["team"] == "nlp" and "bad key!" not in pod["labels"] and "note" not in pod["labels"]
    assert json.loads(pod["annotations"]["jsctl.dev/labels"]) == {"bad key!": "x", "note": "a b", "team": "nlp"}


def test_jobset_writes_what_its_webhook_would_default(tmp_path):
    c = plan_one(tmp_path, flavor="jobset")
    (js,) = documents(c)
    spec = js["spec"]
    assert spec["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True, "subdomain": c.job_id}
    assert spec["successPolicy"] == {"operator": "All", "targetReplicatedJobs": ["node"]}
    assert spec["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    assert spec["failurePolicy"]["maxRestarts"] == 2
    env = env_of(main_container(js), {})
    assert env["MASTER_ADDR"] == f"{c.job_id}-node-0-0.{c.job_id}.jsctl-ci.svc"


def test_volcano_gang_plugins_and_policies(tmp_path):
    c = plan_one(tmp_path, flavor="volcano", extra="volcano: {queue: research}\n")
    (vj,) = documents(c)
    spec = vj["spec"]
    assert spec["schedulerName"] == "volcano" and spec["minAvailable"] == 2 and spec["queue"] == "research"
    assert set(spec["plugins"]) == {"svc", "env"}
    assert {"exitCode": REQUEUE_EXIT_CODE, "action": "RestartJob"} in spec["policies"]
    assert spec["tasks"][0]["replicas"] == 2
    assert any("only where a Volcano controller runs" in n for n in c.artifact.notes)


def test_a_deepspeed_plan_mounts_its_config_from_a_config_map(tmp_path):
    job = GPU_JOB.replace("parallelism: ddp", "parallelism: deepspeed\n  config: {zero_stage: 2}")
    c = plan_one(tmp_path, job)
    cm, _, workload = documents(c)
    assert cm["kind"] == "ConfigMap" and cm["metadata"]["name"] == f"{c.job_id}-deepspeed"
    assert json.loads(cm["data"]["deepspeed_config.json"])
    env = env_of(main_container(workload), {})
    assert env["JETSTREAM_DEEPSPEED_CONFIG"] == "/etc/jsctl/deepspeed/deepspeed_config.json"
    assert c.artifact.request.objects[0] == {"api_version": "v1", "kind": "ConfigMap", "name": cm["metadata"]["name"]}


def test_a_cpu_job_on_the_cpu_pool(tmp_path):
    job = hostile_job("", (), "  image: python:3.12\n")
    c = plan_one(tmp_path, job, prefer="prefer: [k8s/cpu, k8s]\n")
    spec = pod_specs(documents(c)[-1])[0]
    assert c.placement.pool == "cpu"
    assert spec["containers"][0]["resources"] == {"requests": {"cpu": "1"}}
    assert "tolerations" not in spec


def test_rendering_is_deterministic(tmp_path):
    a = plan_one(tmp_path, flavor="jobset")
    b = plan_one(tmp_path, flavor="jobset")
    assert a.artifact.digest == b.artifact.digest


def test_request_names_every_object_in_apply_order(tmp_path):
    c = plan_one(tmp_path)
    r = c.artifact.request
    assert r.manifest == f"{c.job_id}.yaml" and r.namespace == "jsctl-ci" and r.flavor == "job"
    assert [o["kind"] for o in r.objects] == ["Service", "Job"]
    assert r.workload == {"api_version": "batch/v1", "kind": "Job", "name": c.job_id}
    assert r.selector == {"jsctl.dev/job-id": c.job_id}
    assert r.kubeconfig == "/tmp/jsctl-k8s/kubeconfig"


def test_storage_outside_the_mapping_warns_and_an_image_is_required(tmp_path):
    job = GPU_JOB.replace("/data/sets/a", "/elsewhere/a")
    c = plan_one(tmp_path, job)
    assert any("not mounted" in n for n in c.artifact.notes)
    with pytest.raises(ConfigError) as info:
        plan_one(tmp_path, GPU_JOB.replace("  image: ghcr.io/example/train:1\n", ""))
    assert "K8S04" in str(info.value.diagnostics if hasattr(info.value, "diagnostics") else info.value) or \
        "environment.image" in str(info.value)


def test_jobset_runs_post_success_hooks_after_the_training(tmp_path):
    job = GPU_JOB.replace("  command:", "  post_success:\n    - command: [python, export.py, '${RUN_DIR}']\n"
                                        "    - command: [echo, done]\n  command:")
    c = plan_one(tmp_path, job, flavor="jobset")
    (js,) = documents(c)
    node, post = js["spec"]["replicatedJobs"]
    assert post["name"] == "post-success" and post["dependsOn"] == [{"name": "node", "status": "Complete"}]
    assert js["spec"]["successPolicy"]["targetReplicatedJobs"] == ["node", "post-success"]
    assert js["spec"]["failurePolicy"]["rules"][0] == {"name": "post-success-failed", "action": "FailJobSet",
                                                       "targetReplicatedJobs": ["post-success"]}
    pod = post["template"]["spec"]["template"]["spec"]
    (first,), (last,) = pod["initContainers"], pod["containers"]
    env = env_of(first, {})
    assert argv_of(first, env) == ["python", "export.py", f"/shared/runs/{c.job_id}"]
    assert argv_of(last, env) == ["echo", "done"] and "resources" not in last
    other = plan_one(tmp_path, job, flavor="job")
    assert any("not run on Kubernetes (job): post_success" in n for n in other.artifact.notes)
