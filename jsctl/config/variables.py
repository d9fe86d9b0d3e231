"""`${NAME}` and `${NAME:-default}` in string values, resolved from the user's variables.

Sources (later wins): environment `JSCTL_VAR_<NAME>`, `--var-file` YAML mappings, `-v NAME=VALUE`.
Names set when the job runs are left in place: the engine-neutral ones here (JETSTREAM_*,
MASTER_ADDR, ...) and those the installed providers declare (`Provider.runtime_names()`, passed in
as `runtime`); `${JOB_ID}` becomes the job's deterministic id; `$${X}` writes a literal `${X}`. Any
other undefined name is an error.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from jsctl.config.diagnostics import Diagnostic, did_you_mean, error, warning
from jsctl.config.loader import Document, Position, load_file
from jsctl.model.runtime_names import NONE, RuntimeNames

PATTERN = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# set by jsctl's launch contract on every engine (JOB_ID is resolved at plan time instead)
CORE_RUNTIME_NAMES = RuntimeNames(frozenset({"MASTER_ADDR", "MASTER_PORT", "NODE_RANK"}), ("JETSTREAM_",))
ENV_PREFIX = "JSCTL_VAR_"
VAR_FILE_FORMAT = "a --var-file is a YAML mapping of NAME: value, one per line (e.g. EXPERIMENT_NAME: llama-7b)"
CLI = "<command line>"


def is_runtime_name(name: str, provided: RuntimeNames = NONE) -> bool:
    """Set when the job runs: by jsctl on every engine, or by an installed provider's engine (`provided`)."""
    return name in CORE_RUNTIME_NAMES or name in provided


@dataclass(frozen=True)
class Variables:
    values: Mapping[str, str]
    origins: Mapping[str, str] = field(default_factory=dict)  # name -> "-v", the var file, or the env var

    def with_overrides(self, more: Mapping[str, Any]) -> "Variables":
        merged = dict(self.values)
        merged.update({k: _text(v) for k, v in more.items()})
        return Variables(merged, self.origins)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def collect(cli_vars: Iterable[str] = (), var_files: Iterable[str] = (),
            environ: Mapping[str, str] | None = None) -> tuple[Variables, list[Diagnostic]]:
    """Merge the three sources; diagnostics for malformed `-v` or var files."""
    environ = os.environ if environ is None else environ
    values: dict[str, str] = {k[len(ENV_PREFIX):]: v for k, v in environ.items()
                              if k.startswith(ENV_PREFIX) and len(k) > len(ENV_PREFIX)}
    origins: dict[str, str] = {name: ENV_PREFIX + name for name in values}
    diags: list[Diagnostic] = []
    for path in var_files:
        doc, ds = load_file(path)
        ds = [d for d in ds if d.code != "E004"]  # an empty var file sets nothing (it is no jetstream document)
        diags.extend(replace(d, hint=f"{d.hint}; {VAR_FILE_FORMAT}" if d.hint else VAR_FILE_FORMAT)
                     if d.severity == "error" else d for d in ds)
        if doc is None or ds and any(d.severity == "error" for d in ds):
            continue
        if doc.data is None:
            continue  # an empty file sets nothing
        if not isinstance(doc.data, dict):
            diags.append(error("V004", "expected a YAML mapping of NAME: value, got "
                               + ("a list" if isinstance(doc.data, list) else repr(doc.data)), path, 1, 1,
                               hint=VAR_FILE_FORMAT))
            continue
        for key, value in doc.data.items():
            if isinstance(value, (dict, list)) or value is None:
                pos = doc.where((key,))
                diags.append(error("V002", f"variable '{key}' must be a string, number or boolean", path,
                                   pos.line, pos.col))
            elif not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
                pos = doc.where((key,), key=True)
                diags.append(error("V003", f"'{key}' is not a valid variable name", path, pos.line, pos.col))
            else:
                values[key] = _text(value)
                origins[key] = path
    for item in cli_vars:
        name, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            diags.append(error("V001", f"-v expects NAME=VALUE, got {item!r}", CLI))
            continue
        values[name] = value
        origins[name] = "-v"
    return Variables(values, origins), diags


def referenced(text: str) -> set[str]:
    """The names `${NAME}` (and `${NAME:-default}`) refer to in a file's text; `$${NAME}` is not one."""
    return {m.group(2) for m in PATTERN.finditer(text) if not m.group(1)}


def unused(variables: Variables, texts: Iterable[str], runtime: RuntimeNames = NONE) -> list[Diagnostic]:
    """A warning for each `-v NAME=...` that no file refers to (a typo, or the wrong file); the
    did-you-mean is against the user variables the files use (not the names set at run time)."""
    used: set[str] = set()
    for text in texts:
        used |= referenced(text)
    users = sorted(n for n in used if n != "JOB_ID" and not is_runtime_name(n, runtime))
    return [warning("V011", f"-v {name}=... is set but no file given uses ${{{name}}}{did_you_mean(name, users)}",
                    CLI, hint=("variables the files use: " + ", ".join(users)) if users
                    else "the files given use no variables")
            for name, origin in variables.origins.items() if origin == "-v" and name not in used]


def interpolate(doc: Document, data: Any, variables: Variables, job_id: str | None,
                leave: frozenset[str] = frozenset(),
                runtime: RuntimeNames = NONE) -> tuple[Any, list[Diagnostic]]:
    """A copy of `data` with every `${...}` resolved; `leave` names, and the names providers set
    when the job runs (`runtime`), are kept for run time."""
    diags: list[Diagnostic] = []

    def walk(node: Any, path: tuple) -> Any:
        if isinstance(node, dict):
            return {k: walk(v, path + (k,)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, path + (i,)) for i, v in enumerate(node)]
        if isinstance(node, str) and "$" in node:
            return _resolve(node, path)
        return node

    def _resolve(text: str, path: tuple) -> Any:
        whole = PATTERN.fullmatch(text)

        def sub(m: re.Match) -> str:
            escaped, name, default = m.group(1), m.group(2), m.group(3)
            if escaped:
                return m.group(0)[1:]
            if name in variables.values:
                return variables.values[name]
            if name == "JOB_ID" and job_id is not None:
                return job_id
            if is_runtime_name(name, runtime) or name in leave or name == "JOB_ID":
                return m.group(0)
            if default is not None:
                return default
            given = did_you_mean(name, variables.values)
            pos = doc.where(path)  # only now: finding positions costs a second parse (loader.Document)
            diags.append(error("V010", f"undefined variable '{name}'{given}", doc.path, pos.line,
                               pos.col + column_offset(doc, pos, m.start()), hint=f"set it with -v {name}=VALUE, "
                               f"--var-file, or {ENV_PREFIX}{name}; write $${{{name}}} to leave it for the shell",
                               length=len(m.group(0))))
            return m.group(0)

        out = PATTERN.sub(sub, text)
        if whole and not whole.group(1) and out != text:
            return _scalar(out)
        return out

    return walk(data, ()), diags


def column_offset(doc: Document, pos: Position, index: int) -> int:
    """Column offset of a match inside a scalar; quoted scalars start one column later."""
    lines = doc.text.splitlines()
    if 0 < pos.line <= len(lines):
        line = lines[pos.line - 1]
        if pos.col - 1 < len(line) and line[pos.col - 1] in "'\"":
            return index + 1
    return index


def _scalar(text: str) -> Any:
    """A value that was exactly one variable takes the YAML type of what it resolved to."""
    if re.fullmatch(r"-?[0-9]+", text):
        return int(text)
    if re.fullmatch(r"-?[0-9]+\.[0-9]+", text):
        return float(text)
    if text in ("true", "false"):
        return text == "true"
    return text
