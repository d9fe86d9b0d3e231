"""Canonical formatting: key order from the JSON Schemas, two-space indentation, comments kept."""
from __future__ import annotations

import io
from typing import Any

from jsctl.config.loader import unquoted_ref
from jsctl.config.schema import schema


def _yaml() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def format_text(text: str) -> str:
    """The canonical form of a job or workflow document (text already known to load cleanly)."""
    yaml = _yaml()
    data = yaml.load(text)
    if isinstance(data, dict):
        kind = "workflow" if "workflow" in data else "job"
        _reorder(data, schema(kind))
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _reorder(node: Any, sch: dict | None) -> None:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    if not sch:
        return
    if isinstance(node, CommentedMap):
        for key in list(node):
            ref = unquoted_ref(node[key])
            if ref is not None:  # the canonical form of an unquoted {{...}} reference is a quoted string
                node[key] = DoubleQuotedScalarString(ref)
        props = sch.get("properties") or {}
        order = [k for k in props if k in node] + [k for k in node if k not in props]
        for key in order:
            node.move_to_end(key)
        for key in node:
            sub = props.get(key) or (sch.get("additionalProperties") if isinstance(sch.get("additionalProperties"), dict) else None)
            _reorder(node[key], sub)
    elif isinstance(node, CommentedSeq):
        for item in node:
            _reorder(item, sch.get("items"))
