from jsctl import api
from jsctl.config.variables import Variables, collect
from jsctl.model.address import job_id

JOB = """version: jetstream.v1
job:
  name: exp
compute:
  resources:
    gpu: {count: '${GPUS:-2}'}
environment:
  env_vars:
    MODE: fast
storage:
  outputs:
    - name: ckpt
      path: /data/${EXPERIMENT_NAME}/${JOB_ID}/ckpt
lifecycle:
  command: [torchrun, '--nnodes=${JETSTREAM_NNODES}', '--master=${MASTER_ADDR}:${MASTER_PORT}', '$${HOME}', '${MODE}']
"""


def test_sources_later_wins(write):
    vf = write("vars.yaml", "EXPERIMENT_NAME: from-file\nGPUS: 4\n")
    v, diags = collect(["EXPERIMENT_NAME=from-cli"], [vf], {"JSCTL_VAR_EXPERIMENT_NAME": "from-env", "JSCTL_VAR_X": "1"})
    assert not diags
    assert v.values["EXPERIMENT_NAME"] == "from-cli" and v.values["GPUS"] == "4" and v.values["X"] == "1"


def test_resolution(write):
    path = write("job.yaml", JOB)
    r = api.validate([path], Variables({"EXPERIMENT_NAME": "llama"}))
    assert r.ok, r.diagnostics
    spec = r.specs["job.exp"]
    assert spec.compute.gpu.count == 2  # a whole-value variable takes its YAML type
    the_id = job_id("exp", "job.exp", 1)
    assert spec.outputs[0].path == f"/data/llama/{the_id}/ckpt"
    assert spec.lifecycle.command[1:] == ("--nnodes=${JETSTREAM_NNODES}", "--master=${MASTER_ADDR}:${MASTER_PORT}",
                                          "${HOME}", "${MODE}")


def test_job_id_is_deterministic():
    assert job_id("exp", "job.exp", 1) == job_id("exp", "job.exp", 1)
    assert job_id("exp", "job.exp", 1) != job_id("exp", "job.exp", 2)
    assert job_id("exp", "job.exp", 1).startswith("js-exp-") and len(job_id("exp", "job.exp", 1)) == len("js-exp-") + 4


def test_bad_cli_variable():
    _, diags = collect(["NOEQUALS"], [], {})
    assert diags and "NAME=VALUE" in diags[0].message


def test_undefined_has_hint(jsctl, write):
    code, _, err = jsctl("validate", write("job.yaml", JOB))
    assert code == 1
    assert "job.yaml:13:19: error: undefined variable 'EXPERIMENT_NAME'" in err
    assert "-v EXPERIMENT_NAME=VALUE" in err
    code, out, _ = jsctl("validate", write("job.yaml", JOB), "-v", "EXPERIMENT_NAME=x")
    assert code == 0, out
