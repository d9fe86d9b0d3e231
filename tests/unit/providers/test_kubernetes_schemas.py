"""The rendered objects are what the apiserver and the controllers accept: JobSet, Volcano Job and
TrainJob against their CRDs' openAPIV3Schema (../shared/data/crds), batch/v1 Job, Service and
ConfigMap through the kubernetes client's models; and every YAML reader reads the same values."""
from __future__ import annotations

import functools
import io
import os

import pytest

from hostile import hostile_job
from kubekit import GPU_JOB, documents, plan_one

CRDS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared", "data", "crds")
CRD_FILES = {"JobSet": "jobset.x-k8s.io_jobsets.yaml", "Volcano": "volcano-batch.volcano.sh_jobs.yaml",
             "TrainJob": "kubeflow-trainer.kubeflow.org_trainjobs.yaml"}
FLAVOR_OF = {"JobSet": "jobset", "Volcano": "volcano", "TrainJob": "kubeflow"}
HOOKS_JOB = GPU_JOB.replace("  command:", "  pre_run:\n    - command: [python, check.py]\n  post_success:\n"
                            "    - command: [python, export.py, '${RUN_DIR}']\n    - command: [echo, done]\n  command:")
DEEPSPEED_JOB = GPU_JOB.replace("parallelism: ddp", "parallelism: deepspeed\n  config: {zero_stage: 2}")


def _crd_schema(kind: str, version: str) -> dict:
    path = os.path.join(CRDS, CRD_FILES[kind])
    if not os.path.exists(path):
        pytest.skip(f"the CRDs are not here ({os.path.normpath(CRDS)} is absent): cannot check {kind} objects")
    return _load_schema(path, version)


@functools.lru_cache(maxsize=None)
def _load_schema(path: str, version: str) -> dict:
    import yaml

    with open(path, encoding="utf-8") as fh:
        crd = yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    (v,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    return _strict(v["schema"]["openAPIV3Schema"])


def _strict(schema):
    """OpenAPI v3 → JSON Schema: unknown fields are errors (as the apiserver's pruning would drop them),
    `x-kubernetes-int-or-string` accepts both."""
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _strict(v) for k, v in schema.items()}
    if out.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out \
            and not out.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


@pytest.mark.parametrize("kind", ["JobSet", "Volcano", "TrainJob"])
@pytest.mark.parametrize("job", ["gpu", "deepspeed", "hostile", "hooks"])
def test_custom_resources_match_their_crd(tmp_path, kind, job):
    import jsonschema

    text = {"gpu": GPU_JOB, "deepspeed": DEEPSPEED_JOB, "hooks": HOOKS_JOB,
            "hostile": hostile_job("", (), "  image: python:3.12\n")}[job]
    extra = "queue: team-a\npriority_classes: {normal: ml-normal}\n"
    c = plan_one(tmp_path, text, flavor=FLAVOR_OF[kind], extra=extra)
    obj = documents(c)[-1]
    schema = _crd_schema(kind, obj["apiVersion"].split("/")[1])
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(obj), key=str)
    assert not errors, "\n".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:10])


@pytest.mark.parametrize("flavor", ["job", "jobset", "volcano", "kubeflow"])
def test_core_objects_read_as_kubernetes_models(tmp_path, flavor):
    kubernetes = pytest.importorskip("kubernetes", reason="the kubernetes package (extra k8s) is not installed")
    import json

    api = kubernetes.client.ApiClient()

    class Response:  # what older clients' deserialize reads (newer ones take the text and a content type)
        def __init__(self, obj):
            self.data = json.dumps(obj)

    def read(obj, model):
        try:
            return api.deserialize(json.dumps(obj), model, "application/json")
        except TypeError:
            return api.deserialize(Response(obj), model)

    c = plan_one(tmp_path, DEEPSPEED_JOB.replace("  command:", "  pre_run:\n    - command: [python, check.py]\n"
                                                 "  command:"), flavor=flavor)
    models = {"Job": "V1Job", "Service": "V1Service", "ConfigMap": "V1ConfigMap"}
    seen = 0
    for obj in documents(c):
        if obj["apiVersion"] not in ("v1", "batch/v1"):
            continue
        model = read(obj, models[obj["kind"]])
        assert api.sanitize_for_serialization(model) == obj  # nothing unknown, nothing lost
        seen += 1
    assert seen == {"job": 3, "jobset": 1, "volcano": 1, "kubeflow": 1}[flavor]


def test_yaml_1_1_and_1_2_readers_read_the_same_manifest(tmp_path):
    from ruamel.yaml import YAML

    c = plan_one(tmp_path, hostile_job('    ON: "on"\n    YES: "yes"\n    OCT: "0755"\n    NUM: "1_000"', (),
                                       "  image: python:3.12\n"))
    text = c.artifact.files[0][1]
    assert list(YAML(typ="safe").load_all(io.StringIO(text))) == documents(c)
    env = {e["name"]: e.get("value") for e in documents(c)[-1]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert (env["ON"], env["YES"], env["OCT"], env["NUM"]) == ("on", "yes", "0755", "1_000")
