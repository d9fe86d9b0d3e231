"""Validate documents against the JSON Schemas in jsctl/schemas/ (or one a provider brings), as
positioned diagnostics."""
from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any, Mapping

from jsctl.config import schemacheck
from jsctl.config.diagnostics import Diagnostic, did_you_mean, error, show_value
from jsctl.config.loader import Document

SCHEMAS = ("job", "workflow", "workspace")


@functools.lru_cache(maxsize=None)
def schema(name: str) -> dict:
    text = resources.files("jsctl").joinpath("schemas", f"{name}.schema.json").read_text("utf-8")
    return json.loads(text)


@functools.lru_cache(maxsize=None)
def _validator(name: str) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema(name))


@functools.lru_cache(maxsize=64)
def _compiled(text: str) -> Any:
    from jsonschema import Draft202012Validator

    found = json.loads(text)
    Draft202012Validator.check_schema(found)
    return Draft202012Validator(found)


def validate(doc: Document, name: str, data: Any = None) -> list[Diagnostic]:
    """Every schema violation in the document, one diagnostic each, at the offending key or value."""
    data = doc.data if data is None else data
    check = _check(name)
    if check is not None and check(data):
        return []  # valid (schemacheck says so only when jsonschema would): jsonschema not even imported
    return _collect(doc, _validator(name), data, ())


@functools.lru_cache(maxsize=None)
def _check(name: str) -> Any:
    return schemacheck.compile_schema(schema(name))


@functools.lru_cache(maxsize=64)
def _part_check(text: str) -> Any:
    return schemacheck.compile_schema(json.loads(text))


def validate_part(doc: Document, schema_: Mapping[str, Any], data: Any, at: tuple) -> list[Diagnostic]:
    """Violations of `schema_` (e.g. a provider's settings schema) by `data`, the part of the document
    at path `at`, positioned in the document. Raises jsonschema's SchemaError for a broken schema
    (schemacheck compiles only schemas the meta-schema accepts: others go to jsonschema)."""
    text = json.dumps(schema_, sort_keys=True)
    check = _part_check(text)
    if check is not None and check(data):
        return []
    return _collect(doc, _compiled(text), data, at)


def _collect(doc: Document, validator: Any, data: Any, at: tuple) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for err in validator.iter_errors(data):
        out.extend(_diagnose(doc, err, at))
    seen, unique = set(), []
    for d in out:  # anyOf/oneOf can report one problem twice
        if (d.line, d.col, d.message) not in seen:
            seen.add((d.line, d.col, d.message))
            unique.append(d)
    return unique


def _field(path: tuple) -> str:
    names = [p for p in path if isinstance(p, str)]
    return names[-1] if names else "document"


def _where(path: tuple) -> str:
    return ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in path).replace(".[", "[") or "the document"


def _diagnose(doc: Document, err: Any, at: tuple = ()) -> list[Diagnostic]:
    path = at + tuple(err.absolute_path)
    name = _field(path)
    keyword = err.validator
    value = err.instance
    pos = doc.where(path)
    file = doc.path

    def at(msg: str, hint: str | None = None, p: Any = pos) -> Diagnostic:
        return error("S" + keyword[:6].upper(), msg, file, p.line, p.col, hint, p.length)

    if keyword == "additionalProperties":
        allowed = list(err.schema.get("properties", {}))
        extra = [k for k in value if k not in allowed]
        return [error("SUNKNOWN", f"unknown field '{k}' in {_where(path)}{did_you_mean(k, allowed)}", file,
                      doc.where(path + (k,), key=True).line, doc.where(path + (k,), key=True).col,
                      None, len(k)) for k in extra]
    if keyword == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        kpos = doc.where(path, key=True) if path else pos
        return [at(f"missing required field '{missing}' in {_where(path)}", p=kpos)]
    if keyword == "enum":
        options = err.validator_value
        return [at(f"'{name}' must be one of {', '.join(map(str, options))}; got {show_value(value)}"
                   + did_you_mean(str(value), map(str, options)))]
    if keyword == "const":
        return [at(f"'{name}' must be {err.validator_value!r}; got {show_value(value)}")]
    if keyword == "type":
        want = err.validator_value
        want = want if isinstance(want, list) else [want]
        if "integer" in want and err.schema.get("minimum") == 1:
            return [at(f"'{name}' must be a positive integer, got {show_value(value)}")]
        words = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
                 "object": "a mapping", "array": "a list"}
        hint = None
        if "array" in want and isinstance(value, str):
            hint = f"write a list: {name}: [{value}]" if " " not in value else "write a list, one item per line with '- '"
        return [at(f"'{name}' must be {' or '.join(words.get(w, w) for w in want)}, got {show_value(value)}", hint)]
    if keyword == "minimum":
        if err.validator_value == 1:
            return [at(f"'{name}' must be a positive integer, got {show_value(value)}")]
        return [at(f"'{name}' must be at least {err.validator_value}, got {show_value(value)}")]
    if keyword == "maximum":
        return [at(f"'{name}' must be at most {err.validator_value}, got {show_value(value)}")]
    if keyword in ("pattern", "maxLength", "minLength") and "x-error" in err.schema:
        return [at(f"'{name}' {err.schema['x-error']}; got {show_value(value)}")]
    if keyword == "minLength":
        return [at(f"'{name}' must not be empty")]
    if keyword == "minItems":
        return [at(f"'{name}' must have at least {err.validator_value} item(s)")]
    if keyword == "uniqueItems":
        return [at(f"'{name}' must not repeat items")]
    if keyword == "propertyNames":
        bad = value if isinstance(value, str) else err.instance
        msg = err.schema.get("x-error", "is not a valid name")
        return [at(f"key {show_value(bad)} in {_where(path)} {msg}")]
    return [at(f"{_where(path)}: {err.message}")]
