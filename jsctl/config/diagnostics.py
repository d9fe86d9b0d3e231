"""Positioned diagnostics: collected while loading and validating, printed like a compiler."""
from __future__ import annotations

import difflib
import json
from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

from jsctl import JSON_FORMAT_VERSION


@dataclass(frozen=True)
class Diagnostic:
    severity: str  # "error" | "warning" | "note"
    code: str
    message: str
    file: str
    line: int = 0  # 1-based; 0 = whole file
    col: int = 0  # 1-based
    hint: str | None = None
    length: int = 0  # characters to underline on the source line

    def location(self) -> str:
        if self.line:
            return f"{self.file}:{self.line}:{self.col or 1}"
        return self.file


def error(code: str, message: str, file: str, line: int = 0, col: int = 0,
          hint: str | None = None, length: int = 0) -> Diagnostic:
    return Diagnostic("error", code, message, file, line, col, hint, length)


def warning(code: str, message: str, file: str, line: int = 0, col: int = 0,
            hint: str | None = None) -> Diagnostic:
    return Diagnostic("warning", code, message, file, line, col, hint)


def suggest(word: str, choices: Iterable[str]) -> str | None:
    """The closest known spelling, for 'did you mean' hints."""
    found = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = suggest(word, choices)
    return f" (did you mean '{close}'?)" if close else ""


def show_value(value: object) -> str:
    """A value as a message quotes it: 'text', 42, true, a mapping, a list, nothing."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing"
    return str(value)


def note(code: str, message: str, file: str, line: int = 0, col: int = 0,
         hint: str | None = None) -> Diagnostic:
    """Information, not a problem: printed, never fails a command."""
    return Diagnostic("note", code, message, file, line, col, hint)


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diagnostics)


def sort_key(d: Diagnostic) -> tuple:
    return (d.file, d.line, d.col, d.message)


def format_text(diagnostics: Sequence[Diagnostic], sources: dict[str, str] | None = None) -> str:
    """`file:line:col: error: message`, the source line and a caret underline, then a count."""
    sources = sources or {}
    out: list[str] = []
    for d in sorted(diagnostics, key=sort_key):
        out.append(f"{d.location()}: {d.severity}: {d.message}")
        text = sources.get(d.file)
        if text is not None and d.line:
            lines = text.splitlines()
            if 0 < d.line <= len(lines):
                src = lines[d.line - 1]
                out.append("    " + src)
                width = max(1, min(d.length or 1, max(1, len(src) - d.col + 1)))
                out.append("    " + " " * max(0, d.col - 1) + "^" * width)
        if d.hint:
            out.append(f"    hint: {d.hint}")
    errors = sum(1 for d in diagnostics if d.severity == "error")
    warnings = sum(1 for d in diagnostics if d.severity == "warning")
    files = len({d.file for d in diagnostics if d.severity == "error"})
    if errors:
        out.append(f"{errors} error{'s' if errors != 1 else ''} in {files} file{'s' if files != 1 else ''}."
                   + (f" {warnings} warning{'s' if warnings != 1 else ''}." if warnings else ""))
    return "\n".join(out)


def format_json(diagnostics: Sequence[Diagnostic]) -> str:
    return json.dumps({"format_version": JSON_FORMAT_VERSION, "diagnostics": [asdict(d) for d in sorted(diagnostics, key=sort_key)]},
                      indent=2)
