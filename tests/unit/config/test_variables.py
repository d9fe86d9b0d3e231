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


# --- names set when the job runs: the core's, and those the installed providers declare ----------------

RUNTIME_JOB = """version: jetstream.v1
job:
  name: exp
lifecycle:
  command: [sh, -c, 'echo $0 $1 $2', '${SLURM_JOB_ID}', '${JETSTREAM_NNODES}', '${FOO}']
"""


def test_provider_runtime_names_wait_for_run_time_and_unknown_names_are_errors(write):
    r = api.validate([write("job.yaml", RUNTIME_JOB)])
    (d,) = [d for d in r.diagnostics if d.severity == "error"]
    assert (d.line, d.col, d.message) == (5, 81, "undefined variable 'FOO'")
    r = api.validate([write("job.yaml", RUNTIME_JOB.replace(", '${FOO}'", ""))])
    assert r.ok, r.diagnostics
    assert r.specs["job.exp"].lifecycle.command[-2:] == ("${SLURM_JOB_ID}", "${JETSTREAM_NNODES}")


def test_the_core_knows_only_engine_neutral_names(write):
    from jsctl.config.loader import load_file
    from jsctl.config.variables import interpolate, is_runtime_name
    from jsctl.model.runtime_names import RuntimeNames
    from jsctl.providers import registry

    assert is_runtime_name("JETSTREAM_ANYTHING") and is_runtime_name("MASTER_PORT")
    assert not is_runtime_name("SLURM_JOB_ID")  # the Slurm provider declares it
    assert "SLURM_JOB_ID" in registry.get("slurm").runtime_names()
    doc, _ = load_file(write("job.yaml", RUNTIME_JOB.replace(", '${FOO}'", "")))
    _, diags = interpolate(doc, doc.data, Variables({}), None)
    assert [d.message for d in diags] == ["undefined variable 'SLURM_JOB_ID'"]
    engine = RuntimeNames(frozenset({"SLURM_JOB_ID"}))
    data, diags = interpolate(doc, doc.data, Variables({}), None, runtime=engine)
    assert not diags and data["lifecycle"]["command"][3] == "${SLURM_JOB_ID}"
    data, diags = interpolate(doc, doc.data, Variables({}), None, runtime=RuntimeNames(prefixes=("SLURM_",)))
    assert not diags


# ---- issue 10: unused -v, did-you-mean for undefined names, var files that are not a mapping ----

def test_cli_variable_no_file_uses_is_a_warning(write):
    path = write("job.yaml", JOB)
    v, diags = collect(["EXPERIMENT_NAME=x", "EXPERIMENT_NAM=y"], [write("vars.yaml", "FROM_FILE: 1\n")],
                       {"JSCTL_VAR_FROM_ENV": "1"})
    assert not diags
    r = api.validate([path], v)
    assert r.ok, r.diagnostics
    warnings = [d for d in r.diagnostics if d.severity == "warning" and d.code == "V011"]
    assert len(warnings) == 1  # only -v: var files and JSCTL_VAR_* are shared by many jobs
    w = warnings[0]
    assert w.message == "-v EXPERIMENT_NAM=... is set but no file given uses ${EXPERIMENT_NAM} " \
                        "(did you mean 'EXPERIMENT_NAME'?)"
    assert w.file == "<command line>" and "EXPERIMENT_NAME, GPUS, MODE" in w.hint  # not MASTER_ADDR, JOB_ID
    assert "MASTER_ADDR" not in w.hint and "JOB_ID" not in w.hint


def test_undefined_variable_did_you_mean_against_given_names(write):
    path = write("job.yaml", JOB)
    for cli, env in ((["EXPERIMENT_NAM=x"], {}), ([], {"JSCTL_VAR_EXPERIMENTNAME": "x"})):
        v, _ = collect(cli, [], env)
        r = api.validate([path], v)
        undefined = [d for d in r.diagnostics if d.code == "V010"]
        assert len(undefined) == 1 and "undefined variable 'EXPERIMENT_NAME' (did you mean" in undefined[0].message
    v, _ = collect([], [], {})
    undefined = [d for d in api.validate([path], v).diagnostics if d.code == "V010"]
    assert undefined[0].message == "undefined variable 'EXPERIMENT_NAME'"  # nothing close was given


def test_var_file_that_is_not_a_yaml_mapping_says_what_it_expects(write):
    for name, text, where in (("vars.env", "EXPERIMENT_NAME=llama\nGPUS=4\n", (1, 1)),
                              ("list.yaml", "- EXPERIMENT_NAME: llama\n", (1, 1)),
                              ("broken.yaml", "EXPERIMENT_NAME: [llama\nGPUS: 4\n", None)):
        _, diags = collect([], [write(name, text)], {})
        errors = [d for d in diags if d.severity == "error"]
        assert len(errors) == 1, (name, diags)
        d = errors[0]
        assert d.file.endswith(name) and d.line >= 1 and d.col >= 1
        if where:
            assert (d.line, d.col) == where and "mapping" in d.message
        assert "YAML mapping of NAME: value" in d.hint, d
    _, diags = collect([], [write("empty.yaml", "")], {})
    assert not diags  # an empty var file sets nothing


def test_validate_quotes_the_var_files_line_like_plan(write, jsctl):
    job = write("job.yaml", "version: jetstream.v1\njob: {name: j}\nlifecycle: {command: [echo, hi]}\n")
    code, _, err = jsctl("validate", job, "--var-file", write("vars.env", "EXPERIMENT_NAME=llama\n"))
    assert code == 1 and "vars.env:1:1: error" in err
    assert "    EXPERIMENT_NAME=llama\n    ^" in err, err
