"""Files written whole or not at all: a temporary file beside the target, fsync, rename, fsync of the directory.

The state file, saved plans, lock leases and the local provider's run files all go through here, so
a crash at any moment leaves either the old file or the new one, never a torn one.
"""
from __future__ import annotations

import json
import os
import threading
from typing import Any


def write_atomic(path: str, text: str) -> None:
    """Replace `path` with `text` atomically and durably."""
    directory = os.path.dirname(path) or "."
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json(path: str, data: Any, indent: int | None = 2) -> None:
    """`data` as JSON (sorted keys, a final newline), written atomically and durably."""
    write_atomic(path, json.dumps(data, indent=indent, sort_keys=True) + "\n")
