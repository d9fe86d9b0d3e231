"""A fast yes/no JSON Schema check for the plain schemas jsctl ships: compiled once into closures.

jsonschema is exact and gives the messages, but it costs ~0.5 ms per job document and its import
~60 ms of every command's start-up. Most documents are valid, so `compile_schema` turns a schema
that uses only the keywords below into one function `check(instance) -> bool`, and jsonschema runs
only when that says False (to find and position the errors, or to find the document valid after
all). The one rule: `check` returns True only when jsonschema (Draft 2020-12, no format
assertion) would find the instance valid; where in doubt (a type outside JSON's, a keyword or
value it does not know) it returns False, or `compile_schema` returns None.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Mapping

Check = Callable[[Any], bool]

ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "default", "examples",
                         "deprecated", "readOnly", "writeOnly", "x-error"})
KEYWORDS = frozenset({"type", "properties", "additionalProperties", "required", "enum", "const", "minimum",
                      "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern",
                      "items", "minItems", "maxItems", "uniqueItems", "propertyNames", "if", "then", "else",
                      "allOf", "anyOf", "oneOf", "not"})
_JSON = (dict, list, str, int, float, bool, type(None))


class Unsupported(Exception):
    """The schema uses what this checker does not do exactly: use jsonschema for it."""


def compile_schema(schema: Any) -> Check | None:
    """`check(instance)` for `schema`, or None when it uses anything beyond KEYWORDS."""
    try:
        return _compile(schema)
    except (Unsupported, re.error, TypeError, ValueError):
        return None


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _is_integer(x: Any) -> bool:  # Draft 6 on: 1.0 is an integer
    return (isinstance(x, int) and not isinstance(x, bool)) or (isinstance(x, float) and x.is_integer())


TYPES: dict[str, Check] = {
    "object": lambda x: isinstance(x, dict), "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str), "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None, "number": _is_number, "integer": _is_integer,
}


def _plain(value: Any) -> bool:
    """JSON data all the way down (what YAML and JSON loading give): only then is `==` exact here."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return type(value) in _JSON


def _equal(a: Any, b: Any) -> bool:
    """JSON equality (jsonschema's): true is not 1, false is not 0, 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return False
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return _is_number(a) and _is_number(b) and a == b or (a is None and b is None)


def _compile(schema: Any) -> Check:
    if schema is True:
        return lambda x: True
    if schema is False:
        return lambda x: False
    if not isinstance(schema, dict):
        raise Unsupported(repr(schema))
    unknown = set(schema) - KEYWORDS - ANNOTATIONS
    if unknown:
        raise Unsupported(", ".join(sorted(unknown)))
    _well_formed_annotations(schema)
    checks: list[Check] = []
    if "type" in schema:
        want = schema["type"]
        names = want if isinstance(want, list) else [want]
        if not names or any(not isinstance(n, str) or n not in TYPES for n in names) or len(set(names)) < len(names):
            raise Unsupported(f"type {want!r}")
        tests = [TYPES[n] for n in names]
        checks.append(tests[0] if len(tests) == 1 else (lambda x, tests=tests: any(t(x) for t in tests)))
    if "enum" in schema or "const" in schema:
        options = schema["enum"] if "enum" in schema else [schema["const"]]
        if not isinstance(options, list) or not _plain(options):
            raise Unsupported("enum")
        strings = frozenset(o for o in options if isinstance(o, str))
        others = [o for o in options if not isinstance(o, str)]
        checks.append(lambda x, s=strings, o=others: (x in s) if isinstance(x, str)
                      else any(_equal(x, v) for v in o) and _plain(x))
    for key, test in (("minimum", lambda x, b: x >= b), ("maximum", lambda x, b: x <= b),
                      ("exclusiveMinimum", lambda x, b: x > b), ("exclusiveMaximum", lambda x, b: x < b)):
        if key in schema:
            bound = schema[key]
            if not _is_number(bound):
                raise Unsupported(key)
            checks.append(lambda x, b=bound, t=test: not _is_number(x) or t(x, b))
    for key, test in (("minLength", lambda n, b: n >= b), ("maxLength", lambda n, b: n <= b)):
        if key in schema:
            checks.append(lambda x, b=_count(schema, key), t=test: not isinstance(x, str) or t(len(x), b))
    if "pattern" in schema:
        if not isinstance(schema["pattern"], str):
            raise Unsupported("pattern")
        search = re.compile(schema["pattern"]).search
        checks.append(lambda x, s=search: not isinstance(x, str) or s(x) is not None)
    checks.extend(_array_checks(schema))
    checks.extend(_object_checks(schema))
    if "if" in schema:
        cond = _compile(schema["if"])
        then = _compile(schema.get("then", True))
        other = _compile(schema.get("else", True))
        checks.append(lambda x: then(x) if cond(x) else other(x))
    else:  # without `if`, jsonschema ignores them (compiled only to refuse what cannot be checked)
        _compile(schema.get("then", True))
        _compile(schema.get("else", True))
    checks.extend(_combinators(schema))
    if not checks:
        return lambda x: True
    return _every(checks)


def _every(checks: list[Check]) -> Check:
    """One check doing all of `checks` in order (unrolled: this runs for every value of every job)."""
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        a, b = checks
        return lambda x: a(x) and b(x)
    if len(checks) == 3:
        a, b, c = checks
        return lambda x: a(x) and b(x) and c(x)

    def every(x: Any) -> bool:
        for check in checks:
            if not check(x):
                return False
        return True
    return every


URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s\\<>\"{}|^`]*")


def _well_formed_annotations(schema: Mapping[str, Any]) -> None:
    """What the 2020-12 meta-schema asks of the annotations allowed here (jsonschema checks a
    provider's schema against it): refuse the rest, so that jsonschema reports it."""
    for key in ("$schema", "$id"):
        if key in schema and not (isinstance(schema[key], str) and URI.fullmatch(schema[key])):
            raise Unsupported(key)
    for key in ("title", "description", "$comment"):
        if key in schema and not isinstance(schema[key], str):
            raise Unsupported(key)
    for key in ("deprecated", "readOnly", "writeOnly"):
        if key in schema and not isinstance(schema[key], bool):
            raise Unsupported(key)
    if "examples" in schema and not isinstance(schema["examples"], list):
        raise Unsupported("examples")


def _combinators(schema: Mapping[str, Any]) -> list[Check]:
    """allOf and anyOf only ever combine True answers; oneOf and not also turn a False into True, so
    they answer only for plain JSON data (where every check here is exact)."""
    out: list[Check] = []
    for key in ("allOf", "anyOf", "oneOf"):
        if key in schema:
            subs = schema[key]
            if not isinstance(subs, list) or not subs:
                raise Unsupported(key)
            checks = [_compile(sub) for sub in subs]
            if key == "allOf":
                out.append(lambda x, cs=checks: all(c(x) for c in cs))
            elif key == "anyOf":
                out.append(lambda x, cs=checks: any(c(x) for c in cs))
            else:
                out.append(lambda x, cs=checks: _plain(x) and sum(1 for c in cs if c(x)) == 1)
    if "not" in schema:
        negated = _compile(schema["not"])
        out.append(lambda x: _plain(x) and not negated(x))
    return out


def _count(schema: Mapping[str, Any], key: str) -> int:
    n = schema[key]
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise Unsupported(key)
    return n


def _array_checks(schema: Mapping[str, Any]) -> list[Check]:
    out: list[Check] = []
    if "items" in schema:
        item = _compile(schema["items"])
        def each(x: Any, item: Check = item) -> bool:
            if isinstance(x, list):
                for v in x:
                    if not item(v):
                        return False
            return True
        out.append(each)
    if "minItems" in schema:
        out.append(lambda x, b=_count(schema, "minItems"): not isinstance(x, list) or len(x) >= b)
    if "maxItems" in schema:
        out.append(lambda x, b=_count(schema, "maxItems"): not isinstance(x, list) or len(x) <= b)
    if schema.get("uniqueItems") is True:
        out.append(lambda x: not isinstance(x, list) or _unique(x))
    elif "uniqueItems" in schema and schema["uniqueItems"] is not False:
        raise Unsupported("uniqueItems")
    return out


def _unique(items: list) -> bool:
    if all(isinstance(v, str) for v in items):
        return len(set(items)) == len(items)
    if not _plain(items):
        return False  # in doubt
    return all(not _equal(a, b) for i, a in enumerate(items) for b in items[i + 1:])


def _object_checks(schema: Mapping[str, Any]) -> list[Check]:
    out: list[Check] = []
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        raise Unsupported("properties")
    compiled = {k: _compile(v) for k, v in props.items()}
    extra = schema.get("additionalProperties", True)
    rest = _compile(extra)
    if compiled or extra is not True:
        def members(x: Any, compiled: dict[str, Check] = compiled, rest: Check = rest) -> bool:
            if not isinstance(x, dict):
                return True
            for k, v in x.items():
                check = compiled.get(k) if isinstance(k, str) else None
                if check is None:
                    if not isinstance(k, str) or not rest(v):
                        return False
                elif not check(v):
                    return False
            return True
        out.append(members)
    if "required" in schema:
        required = schema["required"]
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required) \
                or len(set(required)) < len(required):
            raise Unsupported("required")
        keys = frozenset(required)
        out.append(lambda x: not isinstance(x, dict) or keys <= x.keys())
    if "propertyNames" in schema:
        name = _compile(schema["propertyNames"])
        out.append(lambda x: not isinstance(x, dict) or all(name(k) for k in x))
    return out
