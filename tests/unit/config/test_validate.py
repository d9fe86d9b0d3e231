"""The configuration language: every bad input gets a positioned diagnostic, exit 1, no traceback."""
import os
import time

import pytest

from paths import EXAMPLES

GOOD = """version: jetstream.v1
job:
  name: train
compute:
  resources:
    gpu:
      type: a100
      count: 2
lifecycle:
  command: [python, train.py]
"""


def errors_of(jsctl, path, *extra):
    code, out, err = jsctl("validate", path, *extra)
    assert code == 1, (out, err)
    assert "Traceback" not in err
    return err


def test_examples_validate(jsctl):
    files = sorted(os.path.join(EXAMPLES, f) for f in os.listdir(EXAMPLES) if f.endswith(".yaml"))
    code, out, err = jsctl("validate", *files)
    assert code == 0, err
    assert "Success!" in out


def test_seed_finetune_validates_as_written(jsctl):
    code, out, _ = jsctl("validate", os.path.join(EXAMPLES, "finetune-llama.yaml"))
    assert code == 0 and "1 job" in out


@pytest.mark.parametrize("text,line,col,message", [
    ("version: jetstream.v1\njob: [1\n", 2, 6, "YAML syntax error: '[' opened here is never closed (the file ends first)"),
    ("version: jetstream.v1\njob:\n\tname: x\n", 3, 1, "tab character in indentation"),
    ("version: jetstream.v1\njob:\n  name: a\n  name: b\nlifecycle: {command: [x]}\n", 4, 3, "duplicate key 'name'"),
    (GOOD.replace("count: 2", "count: thirty-two"), 8, 14, "'count' must be a positive integer, got 'thirty-two'"),
    (GOOD.replace("count: 2", "count: -3"), 8, 14, "'count' must be a positive integer, got -3"),
    (GOOD.replace("count: 2", "count: 0"), 8, 14, "'count' must be a positive integer, got 0"),
    (GOOD.replace("compute:", "comptue:"), 4, 1, "unknown field 'comptue' in the document (did you mean 'compute'?)"),
    (GOOD + "strategy:\n  parallelism: fdsp\n", 12, 16, "'parallelism' must be one of ddp, fsdp, deepspeed, auto, none; got 'fdsp' (did you mean 'fsdp'?)"),
    (GOOD.replace("  name: train\n", "  priority: high\n"), 2, 1, "missing required field 'name' in job"),
    (GOOD.replace("name: train", "name: Train_Job"), 3, 9, "'name' must be a DNS-label-like name"),
    (GOOD.replace("name: train", "name: x; rm -rf /"), 3, 9, "'name' must be a DNS-label-like name"),
    (GOOD.replace("type: a100", "type: a1000"), 7, 13, "unknown GPU type 'a1000' (did you mean"),
    (GOOD.replace("train.py]", "train.py, '${UNDEFINED_THING}']"), 10, 32, "undefined variable 'UNDEFINED_THING'"),
])
def test_bad_input_is_positioned(jsctl, write, text, line, col, message):
    err = errors_of(jsctl, write("job.yaml", text))
    assert f"job.yaml:{line}:{col}: error: {message}" in err, err


def test_all_problems_in_a_file_are_collected(jsctl, write):
    text = GOOD.replace("count: 2", "count: thirty-two").replace("compute:", "compute:\n  topology: mesh")
    err = errors_of(jsctl, write("job.yaml", text))
    assert "'count' must be a positive integer" in err and "'topology' must be one of" in err
    assert "2 errors in 1 file." in err


def test_source_line_and_caret(jsctl, write):
    err = errors_of(jsctl, write("job.yaml", GOOD.replace("count: 2", "count: thirty-two")))
    assert "      count: thirty-two\n" in err and "             ^^^^^^^^^^" in err


def test_not_utf8(jsctl, write):
    err = errors_of(jsctl, write("job.yaml", b"version: jetstream.v1\njob:\n  name: caf\xe9\n"))
    assert "job.yaml:3:12: error: file is not UTF-8" in err


def test_empty_file(jsctl, write):
    assert "job.yaml:1:1: error: file is empty" in errors_of(jsctl, write("job.yaml", "# nothing\n\n"))


def test_alias_bomb_refused_quickly(jsctl, write):
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        p, c = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]")
    started = time.process_time()
    err = errors_of(jsctl, write("bomb.yaml", "\n".join(lines) + "\n"))
    assert "through YAML aliases" in err
    assert time.process_time() - started < 5  # bounded work, not a benchmark


def test_file_over_size_limit(jsctl, write):
    err = errors_of(jsctl, write("big.yaml", "version: jetstream.v1\n" + "# pad\n" * 300_000))
    assert "over the limit" in err


def test_values_are_data_never_code(write):
    from jsctl import api

    path = write("job.yaml", GOOD.replace("[python, train.py]", "[echo, 'x; rm -rf /', '$(touch pwned)']"))
    result = api.validate([path])
    assert result.ok
    assert result.specs["job.train"].lifecycle.command == ("echo", "x; rm -rf /", "$(touch pwned)")


def test_json_diagnostics(jsctl, write):
    import json

    code, out, _ = jsctl("validate", "--format", "json", write("job.yaml", GOOD.replace("count: 2", "count: x")))
    assert code == 1
    d = json.loads(out)["diagnostics"][0]
    assert (d["line"], d["col"], d["severity"]) == (8, 14, "error")


def test_debug_shows_a_traceback(jsctl, write):
    path = write("job.yaml", GOOD.replace("count: 2", "count: x"))
    code, _, err = jsctl("validate", path)
    assert code == 1 and "Traceback" not in err
    code, _, err = jsctl("--debug", "validate", path)
    assert code == 1 and "Traceback" in err and "'count' must be a positive integer" in err
