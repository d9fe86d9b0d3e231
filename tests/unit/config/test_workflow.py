import json
import os

from paths import EXAMPLES

JOB = """version: jetstream.v1
job:
  name: {name}
storage:
  inputs: {inputs}
  outputs:
    - name: out
      path: /data/${{JOB_ID}}/out
lifecycle:
  command: [echo, {name}]
"""


def wf(write, jobs, inputs=None):
    inputs = inputs or {}
    for name in {j[0] for j in jobs}:
        write(f"{name}.yaml", JOB.format(name=name, inputs=inputs.get(name, "[]")))
    lines = ["version: jetstream.v1", "workflow:", "  name: wf", "  jobs:"]
    for name, deps in jobs:
        lines += [f"    - name: {name}", "      type: job", f"      spec: {name}.yaml"]
        if deps:
            lines.append(f"      dependsOn: {json.dumps(deps)}")
    return write("wf.yaml", "\n".join(lines) + "\n")


def test_seed_pipeline_graph(jsctl):
    code, out, err = jsctl("graph", "-f", os.path.join(EXAMPLES, "pipeline.yaml"), "--format", "json")
    assert code == 0, err
    g = json.loads(out)
    assert [[a.rsplit(".", 1)[1] for a in layer] for layer in g["layers"]] == [["data-prep"], ["fine-tune"], ["evaluate"]]
    ft = g["jobs"]["workflow.llama-full-pipeline.job.fine-tune"]
    dp_id = g["jobs"]["workflow.llama-full-pipeline.job.data-prep"]["job_id"]
    assert ft["references"][0]["resolved"] == f"/lustre/llm/datasets/alpaca/{dp_id}/processed"


def test_dot_and_text(jsctl):
    code, out, _ = jsctl("graph", "-f", os.path.join(EXAMPLES, "pipeline.yaml"), "--format", "dot")
    assert code == 0 and '"workflow.llama-full-pipeline.job.data-prep" -> "workflow.llama-full-pipeline.job.fine-tune"' in out
    code, out, _ = jsctl("graph", "-f", os.path.join(EXAMPLES, "pipeline.yaml"))
    assert "layer 3: evaluate" in out


def test_reference_implies_dependency(jsctl, write):
    path = wf(write, [("a", []), ("b", [])], {"b": '[{name: x, path: "{{jobs.a.outputs.out}}"}]'})
    code, out, _ = jsctl("graph", "-f", path, "--format", "json")
    assert code == 0
    assert json.loads(out)["jobs"]["workflow.wf.job.b"]["depends_on"] == ["workflow.wf.job.a"]


def test_unquoted_reference_is_accepted(jsctl, write):
    write("a.yaml", JOB.format(name="a", inputs="[]"))
    write("b.yaml", JOB.format(name="b", inputs="\n    - name: x\n      path: {{jobs.a.outputs.out}}"))
    path = write("wf.yaml", "version: jetstream.v1\nworkflow:\n  name: wf\n  jobs:\n    - {name: a, spec: a.yaml}\n"
                 "    - {name: b, spec: b.yaml}\n")
    code, out, err = jsctl("validate", path)
    assert code == 0, err


def test_cycle_prints_the_cycle(jsctl, write):
    path = wf(write, [("a", ["c"]), ("b", ["a"]), ("c", ["b"])])
    code, _, err = jsctl("validate", path)
    assert code == 1 and "Traceback" not in err
    assert "dependency cycle: " in err
    cyc = err.split("dependency cycle: ")[1].split("\n")[0].split(" -> ")
    assert set(cyc) == {"a", "b", "c"} and cyc[0] == cyc[-1]


def test_unknown_dependency(jsctl, write):
    path = wf(write, [("prep", []), ("train", ["perp"])])
    code, _, err = jsctl("validate", path)
    assert code == 1
    assert "wf.yaml:11:19: error: 'train' depends on unknown job 'perp' (did you mean 'prep'?)" in err


def test_unknown_reference_job_and_output(jsctl, write):
    path = wf(write, [("a", []), ("b", [])], {"b": '[{name: x, path: "{{jobs.aa.outputs.out}}"}, {name: y, path: "{{jobs.a.outputs.oot}}"}]'})
    code, _, err = jsctl("validate", path)
    assert code == 1
    assert "b.yaml:5:29: error: reference to unknown job 'aa' (did you mean 'a'?)" in err
    assert "error: job 'a' has no output 'oot' (did you mean 'out'?)" in err


def test_missing_spec_file(jsctl, write):
    path = write("wf.yaml", "version: jetstream.v1\nworkflow:\n  name: wf\n  jobs:\n    - name: a\n      spec: nope.yaml\n")
    code, _, err = jsctl("validate", path)
    assert code == 1 and "wf.yaml:6:13: error: job file 'nope.yaml' not found" in err


def test_per_job_variables(write):
    from jsctl import api

    write("a.yaml", JOB.format(name="a", inputs="[]").replace("/data/", "/data/${WHO}/"))
    path = write("wf.yaml", "version: jetstream.v1\nworkflow:\n  name: wf\n  jobs:\n"
                 "    - {name: a, spec: a.yaml, variables: {WHO: alice}}\n")
    r = api.validate([path])
    assert r.ok, r.diagnostics
    assert r.specs["workflow.wf.job.a"].outputs[0].path.startswith("/data/alice/js-a-")
