"""Read YAML files safely and keep the position of every key and value.

Refuses, with a positioned diagnostic: files over a size limit, non-UTF-8 bytes, tabs in
indentation, empty files, YAML syntax errors, duplicate keys and alias bombs. Produces plain
Python data (dict/list/scalars) plus a table of positions, so later stages never touch ruamel.
"""
from __future__ import annotations

import datetime
import os
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from jsctl.config.diagnostics import Diagnostic, error, show_value

MAX_FILE_BYTES = 1024 * 1024  # job files are small; anything bigger is a mistake or an attack
MAX_NODES = 100_000  # after alias expansion

Path = tuple  # a path into the document: ("compute", "resources", "gpu", "count")
UNQUOTED_REF = re.compile(r"^jobs\.[^.\s{}]+\.outputs\.[^.\s{}]+$")


@dataclass(frozen=True)
class Position:
    line: int  # 1-based
    col: int  # 1-based
    length: int = 0


@dataclass
class Document:
    """One loaded YAML file: plain data, its source text and where each path sits in it.

    Positions (`values`, `keys`) come from ruamel's round-trip parser; a document read by the fast
    path (fastload) finds them the first time a diagnostic asks (`positioned=False` until then)."""

    path: str
    text: str
    data: Any
    _values: dict[Path, Position] = field(default_factory=dict, repr=False)
    _keys: dict[Path, Position] = field(default_factory=dict, repr=False)
    positioned: bool = field(default=True, repr=False)

    @property
    def values(self) -> dict[Path, Position]:
        if not self.positioned:
            self._find_positions()
        return self._values

    @property
    def keys(self) -> dict[Path, Position]:
        if not self.positioned:
            self._find_positions()
        return self._keys

    def _find_positions(self) -> None:
        """Parse the text again with ruamel, for positions only (the data is the fast path's)."""
        from ruamel.yaml import YAML

        self.positioned = True
        try:
            raw = YAML(typ="rt").load(self.text)
        except Exception:  # noqa: BLE001 - the fast path read it; without positions, diagnostics say 1:1
            return
        _plain(raw, (), self, [])

    def where(self, path: Path, key: bool = False) -> Position:
        """Position of a path's value (or its key); falls back to the nearest parent."""
        path = tuple(path)
        table = self.keys if key else self.values
        while path:
            if path in table:
                return table[path]
            if key and path in self.values:
                return self.values[path]
            path = path[:-1]
            table = self.keys if key else self.values
        return Position(1, 1)

    @property
    def kind(self) -> str | None:
        if isinstance(self.data, dict):
            if "workflow" in self.data:
                return "workflow"
            if "job" in self.data or "lifecycle" in self.data or "compute" in self.data:
                return "job"
        return None


def read_text(path: str) -> tuple[str | None, list[Diagnostic]]:
    """The file's text, or diagnostics saying why it cannot be used."""
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        return None, [error("E001", f"cannot read file: {exc.strerror or exc}", path)]
    if size > MAX_FILE_BYTES:
        return None, [error("E002", f"file is {size} bytes, over the limit of {MAX_FILE_BYTES} bytes", path)]
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return None, [error("E001", f"cannot read file: {exc.strerror or exc}", path)]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, [error("E003", f"file is not UTF-8: byte 0x{raw[exc.start]:02x} cannot be decoded",
                            path, line, col, hint="save the file as UTF-8")]
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip() or all(not ln.strip() or ln.lstrip().startswith("#") for ln in text.splitlines()):
        return None, [error("E004", "file is empty: expected a jetstream.v1 document", path, 1, 1)]
    return text, []


YAML_SUFFIXES = (".yaml", ".yml")
SKIPPED_IN_DIRECTORIES = ("jsctl.yaml",)  # the workspace file lives beside the jobs; it is not one


def find_files(paths: Iterable[str], recursive: bool = False) -> tuple[list[str], list[Diagnostic]]:
    """Files and directories as given on the command line → the files to load, each once, in order.

    A directory stands for its `*.yaml`/`*.yml` files (sorted; hidden ones and the workspace file
    `jsctl.yaml` left out), and with `recursive` for those of the directories below it too, as
    `kubectl apply -f DIR [-R]` does. A path that does not exist, or a directory without such files,
    is an error."""
    files: list[str] = []
    diags: list[Diagnostic] = []
    seen: set[str] = set()

    def add(path: str, real: str | None = None) -> None:
        real = real or os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            files.append(path)

    real_dirs: dict[str, str] = {}
    for path in paths:
        if os.path.isdir(path):
            found = _yaml_in(path, recursive)
            if found:
                for f in found:  # a directory's entry that is no link is its directory's real path + its name
                    head, name = os.path.split(f)
                    if head not in real_dirs:
                        real_dirs[head] = os.path.realpath(head)
                    add(f, None if os.path.islink(f) else os.path.join(real_dirs[head], name))
                continue
            below = not recursive and bool(_yaml_in(path, True))
            diags.append(error("E006", "directory holds no .yaml or .yml files"
                               + (" (only the directories below it do)" if below else ""), path,
                               hint="pass -R to include the directories below it" if below else
                               "give job or workflow files, or a directory that holds them"))
        elif os.path.exists(path):
            add(path)
        else:
            hint = ("the shell found no file for this pattern" if any(c in path for c in "*?[") else
                    "check the path; it is relative to the current directory")
            diags.append(error("E001", "no such file or directory", path, hint=hint))
    return files, diags


def _yaml_in(directory: str, recursive: bool) -> list[str]:
    out: list[str] = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if recursive else []
        out.extend(os.path.normpath(os.path.join(root, n)) for n in sorted(names)
                   if n.endswith(YAML_SUFFIXES) and not n.startswith(".") and n not in SKIPPED_IN_DIRECTORIES)
    return out


def _tab_diagnostics(path: str, text: str) -> list[Diagnostic]:
    if "\t" not in text:
        return []
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if "\t" in indent:
            found.append(error("E005", "tab character in indentation; YAML allows only spaces", path, n,
                               indent.index("\t") + 1, hint="indent with spaces"))
    return found


def load_file(path: str) -> tuple[Document | None, list[Diagnostic]]:
    text, diags = read_text(path)
    if text is None:
        return None, diags
    return load_text(path, text)


def load_text(path: str, text: str) -> tuple[Document | None, list[Diagnostic]]:
    tabs = _tab_diagnostics(path, text)
    if tabs:
        return None, tabs
    from jsctl.config import fastload

    data = fastload.load(text, MAX_NODES)
    if isinstance(data, dict):  # the common case; anything else (and every problem) takes the round-trip path
        return Document(path=path, text=text, data=data, positioned=False), []
    return _load_round_trip(path, text)


def _load_round_trip(path: str, text: str) -> tuple[Document | None, list[Diagnostic]]:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    try:
        raw = yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = (exc.problem or exc.context or "invalid YAML").strip()
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        if "duplicate key" in (exc.problem or "") or type(exc).__name__ == "DuplicateKeyError":
            return None, [_duplicate_key(path, text, exc, line, col)]
        unclosed = _unclosed(path, exc)
        if unclosed is not None:
            return None, [unclosed]
        return None, [error("E010", f"YAML syntax error: {problem}", path, line, col)]
    except YAMLError as exc:
        return None, [error("E010", f"YAML syntax error: {exc}", path, 1, 1)]
    except RecursionError:
        return None, [error("E011", "document nests too deeply", path, 1, 1)]
    if raw is None:
        return None, [error("E004", "file is empty: expected a jetstream.v1 document", path, 1, 1)]
    if _expanded_size(raw, {}) > MAX_NODES:
        return None, [error("E012", f"document expands to more than {MAX_NODES} values through YAML aliases "
                            "(refused: this is how 'billion laughs' attacks work)", path, 1, 1,
                            hint="write the values out instead of nesting aliases")]
    doc = Document(path=path, text=text, data=None)
    diags: list[Diagnostic] = []
    doc.data = _plain(raw, (), doc, diags)
    if not isinstance(doc.data, dict):
        diags.append(error("E013", f"expected a mapping at the top of the document, got {show_value(doc.data)}",
                           path, 1, 1))
    return doc, diags


def _duplicate_key(path: str, text: str, exc: Any, line: int, col: int) -> Diagnostic:
    """At the duplicate key, naming where the first one is (ruamel only knows the mapping's start)."""
    m = re.search(r'found duplicate key "([^"]*)"', str(exc))
    if not m:
        return error("E015", "duplicate key", path, line, col)
    key = m.group(1)
    first = _first_key(text, exc.context_mark, key) if getattr(exc, "context_mark", None) else None
    where = f" (first at line {first.line}, column {first.col})" if first else ""
    return error("E015", f"duplicate key '{key}'{where}", path, line, col, length=len(key),
                 hint="a key may appear once in a mapping; remove or rename one of them")


def _first_key(text: str, mapping_mark: Any, key: str) -> Position | None:
    """Where `key` first appears in the mapping that starts at `mapping_mark` (composed, not constructed,
    so duplicates and aliases cost nothing)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    try:
        root = YAML(typ="rt").compose(text)
    except Exception:  # noqa: BLE001 - best effort: the message still names the duplicate
        return None
    todo, seen = [root], set()
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            start = node.start_mark
            if (start.line, start.column) == (mapping_mark.line, mapping_mark.column):
                for k, _ in node.value:
                    if getattr(k, "value", None) == key:
                        return Position(k.start_mark.line + 1, k.start_mark.column + 1, len(key))
            todo.extend(v for pair in node.value for v in pair)
        elif isinstance(node, SequenceNode):
            todo.extend(node.value)
    return None


OPENERS = {"flow sequence": "[", "flow mapping": "{"}


def _unclosed(path: str, exc: Any) -> Diagnostic | None:
    """An unclosed `[`, `{` or quote: reported where it opens, saying where the parser gave up."""
    context, start, stop = exc.context or "", exc.context_mark, exc.problem_mark
    if start is None or stop is None:
        return None
    opener = next((o for what, o in OPENERS.items() if what in context), None)
    if opener is None and "quoted scalar" in context:
        opener = "quote"
    if opener is None:
        return None
    problem = (exc.problem or "").strip()
    gave_up = ("the file ends first" if "stream end" in problem or "end of stream" in problem else
               f"the parser gave up at line {stop.line + 1}, column {stop.column + 1}: {problem}")
    closer = {"[": "']'", "{": "'}'", "quote": "the closing quote"}[opener]
    what = "quoted string" if opener == "quote" else f"'{opener}'"
    return error("E010", f"YAML syntax error: {what} opened here is never closed ({gave_up})", path,
                 start.line + 1, start.column + 1, hint=f"close it with {closer}")


def _expanded_size(node: Any, memo: dict[int, int]) -> int:
    """Number of values the node stands for once aliases are expanded (memoised, so cheap)."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = 1  # guards against recursive aliases
    if isinstance(node, dict):
        total = 1 + sum(_expanded_size(v, memo) for v in node.values())
    elif isinstance(node, list):
        total = 1 + sum(_expanded_size(v, memo) for v in node)
    else:
        total = 1
    memo[key] = min(total, MAX_NODES + 1)
    return memo[key]


def unquoted_ref(node: Any) -> str | None:
    """`path: {{jobs.a.outputs.b}}` unquoted is a flow mapping holding a mapping; read it as the reference."""
    from ruamel.yaml.comments import CommentedKeyMap

    if isinstance(node, dict) and len(node) == 1:
        (key, value), = node.items()
        if value is None and isinstance(key, CommentedKeyMap) and len(key) == 1:
            (inner, inner_value), = key.items()
            if inner_value is None and isinstance(inner, str) and UNQUOTED_REF.match(inner.strip()):
                return "{{" + inner.strip() + "}}"
    return None


def _plain(node: Any, path: Path, doc: Document, diags: list[Diagnostic]) -> Any:
    """ruamel's round-trip objects → plain data, recording positions as it goes."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(node, CommentedMap):
        ref = unquoted_ref(node)
        if ref is not None:
            return ref
        out: dict[str, Any] = {}
        for key, value in node.items():
            try:
                kl, kc = node.lc.key(key)
                vl, vc = node.lc.value(key)
            except (KeyError, TypeError, AttributeError):
                kl = kc = vl = vc = None
            if not isinstance(key, (str, int, float, bool)) or key is None:
                line = (kl or 0) + 1
                diags.append(error("E014", "a mapping key must be a plain name", doc.path, line, (kc or 0) + 1,
                                   hint="quote the key, or if this is a {{...}} reference, quote the value"))
                continue
            name = str(key).lower() if isinstance(key, bool) else str(key)
            child = path + (name,)
            if kl is not None:
                doc._keys[child] = Position(kl + 1, kc + 1, len(name))
                doc._values[child] = Position(vl + 1, vc + 1, _scalar_len(value))
            out[name] = _plain(value, child, doc, diags)
        return out
    if isinstance(node, CommentedSeq):
        items = []
        for i, value in enumerate(node):
            child = path + (i,)
            try:
                il, ic = node.lc.item(i)
                doc._values[child] = Position(il + 1, ic + 1, _scalar_len(value))
            except (KeyError, TypeError, AttributeError):
                pass
            items.append(_plain(value, child, doc, diags))
        return items
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, (datetime.date, datetime.datetime)):
        return node.isoformat()
    if isinstance(node, str):
        return str(node)
    return str(node)


def _scalar_len(value: Any) -> int:
    if isinstance(value, (dict, list)) or value is None:
        return 1
    return len(str(value))
