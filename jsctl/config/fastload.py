"""The fast path of loading: libyaml (PyYAML's C parser) reads the common job file into plain data.

ruamel.yaml's round-trip parser keeps every position but costs about 10 ms for a 20-line file;
libyaml's events cost a tenth of that. The data built here is what the round-trip path builds
(YAML 1.2 scalars, as ruamel resolves them); positions are found later, with ruamel, only when a
diagnostic needs one (loader.Document). Anything this path does not reproduce exactly gives up
(returns NOT_PLAIN) and the caller takes the round-trip path, which also reports every problem:
syntax errors, duplicate keys, aliases and anchors, tags, directives, keys that are not names,
plain scalars ruamel would read as another type (dates, octal, 1_000, .inf, ...) and documents of
more than MAX_NODES values. Composing is iterative (libyaml's own composer recurses in C and
crashes on deeply nested input).
"""
from __future__ import annotations

import re
from typing import Any

NOT_PLAIN = object()  # this text needs the round-trip path
MAX_FLOW = 1000  # more `[` and `{` than this: the round-trip path

_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_TRUE = frozenset(("true", "True", "TRUE"))
_FALSE = frozenset(("false", "False", "FALSE"))
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\.[0-9]+")
# what else ruamel's YAML 1.2 resolvers read as a number, date, merge or value (not a string)
_OTHER = re.compile(r"""(?:
     [-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
    |[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN)
    |[-+]?0b[0-1_]+
    |[-+]?0o?[0-7_]+
    |[-+]?[0-9_]+
    |[-+]?0x[0-9a-fA-F_]+
    |<<|=
    |[0-9][0-9][0-9][0-9]-.*
    )""", re.X)
_SPECIAL_FIRST = frozenset("-+0123456789.<=~nNtTfF")


class _GiveUp(Exception):
    pass


def plain_scalar(value: str) -> Any:
    """A plain (unquoted) scalar as ruamel's round-trip loader, then loader._plain, makes it."""
    if not value:
        return None
    if value[0] not in _SPECIAL_FIRST:
        return value
    if value in _NULLS:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    if _INT.fullmatch(value):
        return int(value)
    if _FLOAT.fullmatch(value):
        return float(value)
    if _OTHER.fullmatch(value):
        raise _GiveUp
    return value


def load(text: str, max_nodes: int) -> Any:
    """The document's plain data, or NOT_PLAIN when only the round-trip path can read it."""
    try:
        import yaml
    except ImportError:
        return NOT_PLAIN
    if not getattr(yaml, "__with_libyaml__", False):
        return NOT_PLAIN  # PyYAML's pure-Python parser would be no faster than ruamel
    if "%" in text and any(line.startswith("%") for line in text.splitlines()):
        return NOT_PLAIN  # a directive (%YAML 1.1 changes how scalars read)
    if text.count("[") + text.count("{") > MAX_FLOW:
        return NOT_PLAIN  # libyaml takes quadratic time on deeply nested flow collections
    parser = yaml.CSafeLoader(text)
    try:
        return _compose(parser, max_nodes)
    except (_GiveUp, yaml.YAMLError, RecursionError, MemoryError):
        return NOT_PLAIN
    finally:
        parser.dispose()


def _compose(parser: Any, max_nodes: int) -> Any:
    import yaml.events as ev

    scalar_t, map_t, seq_t = ev.ScalarEvent, ev.MappingStartEvent, ev.SequenceStartEvent
    end_t = (ev.MappingEndEvent, ev.SequenceEndEvent)
    get = parser.get_event
    get()  # StreamStart
    start = get()
    if not isinstance(start, ev.DocumentStartEvent) or start.version or start.tags:
        raise _GiveUp
    stack: list[Any] = []  # open containers; for a mapping, [dict, key or None]
    keys: list[Any] = []
    root: Any = NOT_PLAIN
    nodes = 0
    while True:
        e = get()
        cls = type(e)
        if cls is scalar_t:
            if e.anchor is not None or e.tag is not None:
                raise _GiveUp
            value = plain_scalar(e.value) if e.implicit[0] else e.value
        elif cls is map_t or cls is seq_t:
            if e.anchor is not None or e.tag is not None:
                raise _GiveUp
            if stack and type(stack[-1]) is dict and keys[-1] is None:
                raise _GiveUp  # a mapping or list as a key
            nodes += 1
            stack.append({} if cls is map_t else [])
            keys.append(None)
            continue
        elif cls in end_t:
            value = stack.pop()
            keys.pop()
        elif cls is ev.DocumentEndEvent:
            break
        else:  # an alias (or anything unexpected)
            raise _GiveUp
        nodes += 1
        if nodes > max_nodes:
            raise _GiveUp
        if not stack:
            root = value
            continue
        top = stack[-1]
        if type(top) is list:
            top.append(value)
        elif keys[-1] is None:
            if type(value) is not str or value in top:
                raise _GiveUp  # a key that is not a name, or a duplicate
            keys[-1] = value
        else:
            top[keys[-1]] = value
            keys[-1] = None
    if not isinstance(get(), ev.StreamEndEvent):
        raise _GiveUp  # more than one document
    return root
