"""Kubernetes objects (plain dicts, lists, strings, numbers) → YAML text, deterministic and safe.

Written here instead of by a YAML library so that every reader reads back exactly the value written:
a string is left plain only when it cannot be taken for anything else under YAML 1.1 (what
Kubernetes' own parser follows: `yes`, `on`, `0755`, `1_000` are not strings there) or YAML 1.2;
multi-line text becomes a literal block when that is exact, else a double-quoted JSON string.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterable

_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./=-]*")  # no ':', '#', spaces, quotes, leading digit or '-'
_YAML11_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf"})


def scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json.dumps(value)
    text = str(value)
    if _PLAIN.fullmatch(text) and text.lower() not in _YAML11_WORDS:
        return text
    return quoted(text)


def quoted(text: str) -> str:
    """A double-quoted scalar: JSON's escapes (valid YAML), printable characters kept as they are."""
    out = json.dumps(text, ensure_ascii=False)
    return "".join(c if c.isprintable() else json.dumps(c)[1:-1] for c in out)


def _block(text: str, indent: str) -> str | None:
    """A literal block scalar (`|` or `|-`) for multi-line text, or None when it would not be exact."""
    if "\n" not in text or not text.strip() or text.endswith("\n\n") or text[0] in " \n":
        return None
    lines = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
    if any(line != line.rstrip() or not all(c.isprintable() for c in line) for line in lines):
        return None
    head = "|" if text.endswith("\n") else "|-"
    return head + "".join("\n" + (indent + line if line else "") for line in lines)


def _lines(value: Any, indent: str) -> Iterable[str]:
    """Lines of a block collection at `indent` (a mapping's keys or a sequence's dashes)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _entry(f"{indent}{scalar(str(k))}:", v, indent + "  ")
    else:
        for v in value:
            if isinstance(v, dict) and v:
                first, *rest = _lines(v, indent + "  ")
                yield f"{indent}- {first[len(indent) + 2:]}"
                yield from rest
            else:
                yield from _entry(f"{indent}-", v, indent + "  ")


def _entry(head: str, v: Any, inner: str) -> Iterable[str]:
    if isinstance(v, (dict, list, tuple)) and v:
        yield head
        yield from _lines(v, inner)
        return
    if isinstance(v, dict):
        yield f"{head} {{}}"
    elif isinstance(v, (list, tuple)):
        yield f"{head} []"
    else:
        block = _block(v, inner) if isinstance(v, str) else None
        yield f"{head} {block or scalar(v)}"


def dump(obj: dict) -> str:
    return "\n".join(_lines(obj, "")) + "\n"


def dump_all(objects: Iterable[dict]) -> str:
    """A multi-document stream: `---` before each document."""
    return "".join("---\n" + dump(o) for o in objects)
