"""The fast schema check agrees with jsonschema: True only where jsonschema finds no error, and the
diagnostics (found by jsonschema, positioned) are those of the slow path."""
import copy
import glob
import json
import os
import random

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from jsctl.config import schema, schemacheck
from jsctl.config.loader import load_text
from paths import EXAMPLES

ROOT = os.path.dirname(EXAMPLES)
PROVIDER_SCHEMAS = sorted(glob.glob(os.path.join(ROOT, "jsctl", "providers", "*", "settings.schema.json")))


def shipped() -> list[tuple[str, dict]]:
    found = [(name, schema.schema(name)) for name in schema.SCHEMAS]
    found += [(os.path.basename(os.path.dirname(p)), json.load(open(p))) for p in PROVIDER_SCHEMAS]
    return found


def documents() -> list[dict]:
    """Every YAML document of the examples and goldens (jobs, workflows, workspaces)."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "**", "*.yaml"), recursive=True)
                       + glob.glob(os.path.join(ROOT, "tests", "golden", "**", "*.yaml"), recursive=True)):
        doc, _ = load_text(path, open(path, encoding="utf-8").read())
        if doc is not None and isinstance(doc.data, dict):
            out.append(doc.data)
    return out


ODD = [None, True, False, 0, 1, -1, 1.0, 1.5, -0.5, 10 ** 12, "", "x", "a100", "Train_Job", "5m", "bad value",
       "a" * 300, [], ["a"], ["a", "a"], [1, True], [1, 1.0], [{}], {}, {"zz": 1}, {"name": "n"}]


def paths(node, at=()):
    yield at
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, at + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths(v, at + (i,))


def mutate(data, rng: random.Random):
    data = copy.deepcopy(data)
    at = rng.choice([p for p in paths(data) if p])
    parent = data
    for k in at[:-1]:
        parent = parent[k]
    key = at[-1]
    how = rng.random()
    if how < 0.15 and isinstance(parent, dict):
        del parent[key]
    elif how < 0.25 and isinstance(parent, dict):
        parent[rng.choice(["extra", "nmae", "labels", "count"])] = rng.choice(ODD)
    elif how < 0.3 and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[key]))
    else:
        parent[key] = copy.deepcopy(rng.choice(ODD))
    return data


@pytest.mark.parametrize("name,found", shipped(), ids=[n for n, _ in shipped()])
def test_every_shipped_schema_compiles(name, found):
    assert schemacheck.compile_schema(found) is not None, name
    Draft202012Validator.check_schema(found)


def test_agrees_with_jsonschema_on_examples_and_their_mutations():
    rng = random.Random(14)
    docs = documents()
    assert len(docs) > 20
    compared = invalid = 0
    for name, found in shipped():
        check = schemacheck.compile_schema(found)
        slow = Draft202012Validator(found)
        for data in docs:
            parts = [data] + [dict(c) for c in data.get("clusters", []) if isinstance(c, dict)]
            for part in parts:
                for candidate in [part] + [mutate(part, rng) for _ in range(40)]:
                    expected = slow.is_valid(candidate)
                    assert check(candidate) == expected, (name, candidate, list(slow.iter_errors(candidate))[:2])
                    compared += 1
                    invalid += not expected
    assert compared > 10_000 and invalid > compared // 4


@pytest.mark.parametrize("sch,instances", [
    ({"type": "integer"}, [1, 1.0, 1.5, True, "1", None, 10 ** 30]),
    ({"type": ["string", "null"]}, ["", None, 0, False]),
    ({"type": "number", "minimum": 1, "maximum": 3}, [0, 1, 3, 3.5, True, "2"]),
    ({"exclusiveMinimum": 0}, [0, 0.1, -1, "x", None]),
    ({"enum": ["a", 1, True, None, [1]]}, ["a", "b", 1, 1.0, True, False, 0, None, [1], [True], [1.0]]),
    ({"const": 0}, [0, 0.0, False, None, ""]),
    ({"pattern": "^[a-z]+$", "minLength": 2, "maxLength": 4}, ["ab", "a", "abcde", "AB", 5, ["ab"]]),
    ({"pattern": "b"}, ["abc", "xyz"]),  # search, not match
    ({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2, "uniqueItems": True},
     [[], ["a"], ["a", "a"], ["a", "b", "c"], [1], "ab", [True]]),
    ({"uniqueItems": True}, [[1, True], [1, 1.0], [0, False], [{"a": 1}, {"a": 1}], [[1], [True]], ["a", "b"]]),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"},
      "required": ["a"]}, [{"a": "x"}, {"a": "x", "b": 1}, {"a": "x", "b": "y"}, {}, {"a": 1}, [], {1: 2, "a": "x"}]),
    ({"propertyNames": {"pattern": "^[A-Z_]+$"}}, [{"OK": 1}, {"no": 1}, {}, "x"]),
    ({"if": {"properties": {"k": {"const": "s3"}}}, "then": {"required": ["bucket"]},
      "else": {"required": ["path"]}},
     [{"k": "s3"}, {"k": "s3", "bucket": "b"}, {"k": "local"}, {"path": "p"}, 5]),
    ({"then": {"required": ["x"]}}, [{}, {"x": 1}]),  # `then` without `if` does nothing
    (True, [1, None, {}]),
    ({"items": False}, [[], [1], "x"]),
    ({"oneOf": [{"required": ["pvc"]}, {"required": ["host_path"]}]}, [{}, {"pvc": 1}, {"pvc": 1, "host_path": 2}, 3]),
    ({"anyOf": [{"type": "string"}, {"minimum": 2}]}, ["x", 1, 3, None]),
    ({"allOf": [{"type": "string"}, {"minLength": 2}]}, ["x", "xy", 1]),
    ({"not": {"type": "string"}}, ["x", 1, None]),
])
def test_keywords_agree(sch, instances):
    check = schemacheck.compile_schema(sch)
    assert check is not None
    slow = Draft202012Validator(sch)
    for x in instances:
        if schemacheck._plain(x):  # JSON data: the same answer
            assert check(x) == slow.is_valid(x), (sch, x)
        else:  # anything else (a YAML key that is a number): True only if valid
            assert not check(x) or slow.is_valid(x), (sch, x)


@pytest.mark.parametrize("sch", [
    {"$ref": "#/$defs/x"}, {"oneOf": []}, {"anyOf": [{"$ref": "#"}]}, {"format": "email"}, {"type": "int"},
    {"type": []}, {"type": ["string", "string"]}, {"pattern": "("}, {"minimum": "1"}, {"minLength": -1},
    {"required": ["a", "a"]}, {"title": 5}, {"$id": "not a uri"}, {"items": [{"type": "string"}]},
    {"properties": {"a": {"x-unknown": 1}}}, {"uniqueItems": "yes"}, {"then": {"$ref": "#"}}, 5,
])
def test_anything_else_goes_to_jsonschema(sch):
    assert schemacheck.compile_schema(sch) is None


def test_a_broken_provider_schema_still_raises_for_ws03():
    doc, _ = load_text("jsctl.yaml", "version: jetstream.v1\nclusters:\n  - name: a\n    provider: x\n")
    with pytest.raises(SchemaError):
        schema.validate_part(doc, {"type": "no-such-type"}, {}, ("clusters", 0))
    assert schema.validate_part(doc, {"type": "object"}, {}, ("clusters", 0)) == []


def test_invalid_documents_get_jsonschema_diagnostics_positioned():
    text = ("version: jetstream.v1\njob:\n  name: Bad_Name\n  priority: urgent\ncompute:\n  resources:\n"
            "    gpu:\n      count: 0\nlifecycle:\n  command: [python, train.py]\n  extra: 1\n")
    doc, _ = load_text("job.yaml", text)
    found = schema.validate(doc, "job")
    assert found == schema._collect(doc, schema._validator("job"), doc.data, ())
    assert {(d.line, d.col) for d in found} == {(3, 9), (4, 13), (8, 14), (11, 3)}, found
