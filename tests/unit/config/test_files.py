"""Which files the command line stands for (-f with several paths, directories, -R), job files
checked as templates, names after variables, and where YAML's own errors point (issue 10)."""
import os

from paths import EXAMPLES

JOB = "version: jetstream.v1\njob:\n  name: {name}\nlifecycle:\n  command: [echo, {name}]\n"
USES_A = ("version: jetstream.v1\njob:\n  name: b\nstorage:\n  inputs:\n    - name: x\n"
          "      path: \"{{jobs.a.outputs.out}}\"\nlifecycle:\n  command: [echo, b]\n")
A_WITH_OUTPUT = ("version: jetstream.v1\njob:\n  name: a\nstorage:\n  outputs:\n    - name: out\n"
                 "      path: /data/${JOB_ID}/out\nlifecycle:\n  command: [echo, a]\n")
WF = "version: jetstream.v1\nworkflow:\n  name: wf\n  jobs:\n    - {name: a, spec: a.yaml}\n    - {name: b, spec: b.yaml}\n"


# -- which files: find_files and the -f spreading -------------------------------------------------

def test_directory_is_its_yaml_files_not_recursive_unless_asked(write, tmp_path):
    from jsctl.config.loader import find_files

    write("jobs/a.yaml", JOB.format(name="a"))
    write("jobs/b.yml", JOB.format(name="b"))
    write("jobs/notes.txt", "not yaml")
    write("jobs/jsctl.yaml", "version: jetstream.v1\nclusters: []\n")  # the workspace file is not a job
    write("jobs/deeper/c.yaml", JOB.format(name="c"))
    d = str(tmp_path / "jobs")
    files, diags = find_files([d])
    assert not diags and [os.path.basename(f) for f in files] == ["a.yaml", "b.yml"]
    files, diags = find_files([d], recursive=True)
    assert not diags and [os.path.basename(f) for f in files] == ["a.yaml", "b.yml", "c.yaml"]


def test_each_file_once_in_the_order_given(write, tmp_path):
    from jsctl.config.loader import find_files

    a = write("jobs/a.yaml", JOB.format(name="a"))
    b = write("jobs/b.yaml", JOB.format(name="b"))
    files, diags = find_files([b, str(tmp_path / "jobs"), "./" + os.path.relpath(a)])
    assert not diags and files == [b, os.path.join(str(tmp_path / "jobs"), "a.yaml")]


def test_each_file_once_through_links_and_linked_directories(write, tmp_path):
    from jsctl.config.loader import find_files

    a = write("jobs/a.yaml", JOB.format(name="a"))
    os.symlink(a, str(tmp_path / "jobs" / "also-a.yaml"))  # the same file by a link in the same directory
    os.symlink(str(tmp_path / "jobs"), str(tmp_path / "linked"))  # the same directory by a link
    write("other/b.yaml", JOB.format(name="b"))
    os.symlink(str(tmp_path / "other" / "b.yaml"), str(tmp_path / "jobs" / "b.yaml"))
    files, diags = find_files([str(tmp_path / "linked"), str(tmp_path / "jobs"), str(tmp_path / "other")])
    assert not diags and files == [str(tmp_path / "linked" / "a.yaml"), str(tmp_path / "linked" / "b.yaml")]


def test_missing_path_and_empty_directory_are_clear_errors(jsctl, write, tmp_path):
    (tmp_path / "empty").mkdir()
    write("nested/below/a.yaml", JOB.format(name="a"))
    code, _, err = jsctl("validate", str(tmp_path / "nope.yaml"), str(tmp_path / "empty"),
                           str(tmp_path / "nested"), str(tmp_path / "jobs" / "*.yaml"))
    assert code == 1 and "Traceback" not in err
    assert f"{tmp_path / 'nope.yaml'}: error: no such file or directory" in err
    assert f"{tmp_path / 'empty'}: error: directory holds no .yaml or .yml files\n" in err
    assert f"{tmp_path / 'nested'}: error: directory holds no .yaml or .yml files (only the directories below it do)" in err
    assert "hint: pass -R" in err
    assert "hint: the shell found no file for this pattern" in err
    code, out, err = jsctl("validate", "-R", str(tmp_path / "nested"))
    assert code == 0 and "1 file valid" in out, err


def test_one_f_takes_every_path_up_to_the_next_option():
    from jsctl.cli.common import spread_files

    assert spread_files(["-f", "a.yaml", "b.yaml", "--target", "x", "c.yaml"]) == \
        ["-f", "a.yaml", "-f", "b.yaml", "--target", "x", "c.yaml"]
    assert spread_files(["--file=a.yaml", "b.yaml", "-f", "c.yaml"]) == ["--file=a.yaml", "-f", "b.yaml", "-f", "c.yaml"]
    assert spread_files(["-f", "a.yaml", "plan.json"]) == ["-f", "a.yaml", "plan.json"]  # a saved plan is no job file
    assert spread_files(["-f", "a.yaml", "--", "b"]) == ["-f", "a.yaml", "--", "b"]


def test_validate_and_graph_take_several_paths_after_one_f_and_directories(jsctl, write, tmp_path):
    write("a.yaml", A_WITH_OUTPUT)
    write("b.yaml", USES_A)
    wf = write("wf.yaml", WF)
    code, out, err = jsctl("validate", "-f", str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"), wf)
    assert code == 0, err
    assert "3 files valid: 2 jobs in 1 workflow." in out  # a and b once each: as the workflow's jobs
    code, out, err = jsctl("validate", str(tmp_path))
    assert code == 0 and "3 files valid: 2 jobs in 1 workflow." in out, err
    code, out, err = jsctl("graph", "-f", str(tmp_path), "--format", "json")
    assert code == 0, err
    import json

    assert sorted(json.loads(out)["jobs"]) == ["workflow.wf.job.a", "workflow.wf.job.b"]


def test_a_job_given_by_another_spelling_of_its_path_is_still_the_workflows(write, tmp_path, monkeypatch):
    from jsctl import api

    write("a.yaml", A_WITH_OUTPUT)
    write("b.yaml", USES_A)
    wf = write("wf.yaml", WF)
    monkeypatch.chdir(tmp_path)
    r = api.validate([wf, "b.yaml", "./a.yaml"])  # absolute workflow, relative job files
    assert r.ok, r.diagnostics
    assert sorted(r.specs) == ["workflow.wf.job.a", "workflow.wf.job.b"]


# -- a job file that is part of a workflow, on its own ------------------------------------------------

def test_seed_job_of_a_workflow_validates_alone_as_a_template(jsctl):
    code, out, err = jsctl("validate", os.path.join(EXAMPLES, "fine-tune-job.yaml"))
    assert code == 0, err
    assert "Success! 1 file valid: 1 job." in out
    assert ("fine-tune-job.yaml:31:13: note: {{jobs.data-prep.outputs.processed_data}} resolves only inside a "
            "workflow: checked as a template") in err
    assert "workflow 'llama-full-pipeline' (" in err and "pipeline.yaml) includes this file" in err


def test_the_note_names_the_workflow_given_and_nothing_is_said_twice(jsctl):
    files = sorted(os.path.join(EXAMPLES, f) for f in os.listdir(EXAMPLES) if f.endswith(".yaml"))
    code, out, err = jsctl("validate", *files)
    assert code == 0 and "Success!" in out, err
    line = "fine-tune-job.yaml: note: {{jobs.data-prep.outputs.processed_data}} resolved by workflow 'llama-full-pipeline'"
    assert err.count(line) == 1, err
    assert "resolves only inside a workflow" not in err


def test_template_without_any_workflow_and_plan_still_refuses(jsctl, write):
    path = write("b.yaml", USES_A)
    code, _, err = jsctl("validate", path)
    assert code == 0, err
    assert "note: {{jobs.a.outputs.out}} resolves only inside a workflow" in err
    assert "give the workflow file that includes this job" in err
    from jsctl.config.variables import Variables
    from jsctl.plan.resolve import load_sources

    _, diags = load_sources([path], Variables({}))  # planning needs the workflow: an error there
    assert [d.code for d in diags if d.severity == "error"] == ["R001"]


def test_malformed_reference_is_an_error(jsctl, write):
    path = write("b.yaml", USES_A.replace("jobs.a.outputs.out", "jobs.a.output.out"))
    code, _, err = jsctl("validate", path)
    assert code == 1
    assert "b.yaml:7:14: error: malformed reference '{{jobs.a.output.out}}'" in err


# -- names and addresses after variables -----------------------------------------------------------

def test_name_from_a_variable_gives_the_address_and_id(write):
    from jsctl import api
    from jsctl.config.variables import Variables
    from jsctl.model.address import job_id

    path = write("job.yaml", JOB.format(name='"${NAME}"'))
    r = api.validate([path], Variables({"NAME": "abc"}))
    assert r.ok, r.diagnostics
    assert list(r.specs) == ["job.abc"] and r.specs["job.abc"].name == "abc"
    (source,) = r.sources.jobs
    assert (source.address, source.name) == ("job.abc", "abc")
    assert job_id(source.name, source.address, 1).startswith("js-abc-")


def test_workflow_job_names_from_variables(write):
    from jsctl import api
    from jsctl.config.variables import Variables

    write("a.yaml", JOB.format(name="a"))
    path = write("wf.yaml", "version: jetstream.v1\nworkflow:\n  name: ${W}\n  jobs:\n    - {name: '${J}', spec: a.yaml}\n")
    r = api.validate([path], Variables({"W": "nightly", "J": "prep"}))
    assert r.ok, r.diagnostics
    assert list(r.specs) == ["workflow.nightly.job.prep"]


# -- where YAML's own errors point ---------------------------------------------------------------

def test_duplicate_key_names_the_first_occurrence(jsctl, write):
    path = write("job.yaml", "version: jetstream.v1\njob:\n  priority: high\n  name: a\n  labels: {}\n  name: b\n"
                 "lifecycle: {command: [x]}\n")
    code, _, err = jsctl("validate", path)
    assert code == 1
    assert "job.yaml:6:3: error: duplicate key 'name' (first at line 4, column 3)" in err
    assert "      name: b\n      ^^^^\n" in err  # the duplicate quoted, with a caret
    path = write("flow.yaml", "version: jetstream.v1\njob: {priority: high, name: a, name: b}\n")
    code, _, err = jsctl("validate", path)
    assert "flow.yaml:2:32: error: duplicate key 'name' (first at line 2, column 23)" in err


def test_unclosed_bracket_is_reported_where_it_opens_with_the_source_line(jsctl, write):
    path = write("job.yaml", "version: jetstream.v1\njob:\n  name: a\nlifecycle:\n  command: [python, train.py\n"
                 "storage:\n  inputs: []\n")
    code, _, err = jsctl("validate", path)
    assert code == 1
    assert ("job.yaml:5:12: error: YAML syntax error: '[' opened here is never closed (the parser gave up at "
            "line 6, column 8: expected ',' or ']', but got ':')") in err
    assert "      command: [python, train.py\n               ^\n" in err
    assert "hint: close it with ']'" in err
