"""Atomic checkpoint directories: layout, completion marker, discovery, retention.

Layout inside JETSTREAM_CHECKPOINT_DIR::

    step-00001000/            a complete checkpoint (has COMPLETE)
        COMPLETE              JSON, written and fsynced last, before the rename
        .metadata, __0_0.distcp, ...   torch.distributed.checkpoint files
        rank-00000.pt ...     per-rank state (RNG, data-loader position)
    .tmp-step-00002000-<nonce>/  a save in progress (never restored)
    .trash-step-00000500-<nonce>/ an old checkpoint being deleted (never restored)

A checkpoint counts only when it is named ``step-N`` *and* holds ``COMPLETE``.
Pure Python (no torch).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import uuid
from pathlib import Path

MARKER = "COMPLETE"
TMP_PREFIX = ".tmp-step-"
TRASH_PREFIX = ".trash-step-"
_FINAL = re.compile(r"^step-(\d+)$")


def step_dir_name(step: int) -> str:
    return f"step-{step:08d}"


def tmp_dir(root: str | os.PathLike[str], step: int, nonce: str) -> Path:
    return Path(root) / f"{TMP_PREFIX}{step:08d}-{nonce}"


def fsync_dir(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_durably(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def complete_checkpoints(root: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """Complete checkpoints as (step, path), lowest step first."""
    root = Path(root)
    found: list[tuple[int, Path]] = []
    try:
        entries = list(os.scandir(root))
    except FileNotFoundError:
        return []
    for entry in entries:
        m = _FINAL.match(entry.name)
        if m and entry.is_dir() and (Path(entry.path) / MARKER).is_file():
            found.append((int(m.group(1)), Path(entry.path)))
    found.sort()
    return found


def latest_complete(root: str | os.PathLike[str]) -> tuple[int, Path] | None:
    found = complete_checkpoints(root)
    return found[-1] if found else None


def read_marker(path: str | os.PathLike[str]) -> dict:
    return json.loads((Path(path) / MARKER).read_text())


def _move_to_trash(path: Path, step: int) -> Path:
    trash = path.parent / f"{TRASH_PREFIX}{step:08d}-{uuid.uuid4().hex[:8]}"
    os.rename(path, trash)
    return trash


def finalize(tmp: Path, step: int, info: dict) -> Path:
    """Mark ``tmp`` complete and publish it as ``step-N`` (rank 0 only, after all ranks wrote).

    Order: COMPLETE written and fsynced inside the temporary directory, the directory
    fsynced, renamed into place, the parent fsynced.  A crash at any point leaves either
    the temporary directory (ignored) or a complete ``step-N``.
    """
    marker = dict(info, step=step, time=time.time())
    write_file_durably(tmp / MARKER, (json.dumps(marker, sort_keys=True) + "\n").encode())
    fsync_dir(tmp)
    final = tmp.parent / step_dir_name(step)
    replaced = _move_to_trash(final, step) if final.exists() else None  # same step, earlier attempt
    os.rename(tmp, final)
    fsync_dir(tmp.parent)
    if replaced is not None:
        shutil.rmtree(replaced, ignore_errors=True)
    return final


def apply_retention(root: str | os.PathLike[str], keep_latest: int | None) -> list[int]:
    """Delete all but the newest ``keep_latest`` complete checkpoints; return deleted steps.

    Runs only after a newer checkpoint is complete, keeps at least one, and renames each
    victim to a trash name (one atomic step) before deleting its files.
    """
    if keep_latest is None:
        return []
    keep = max(1, keep_latest)
    found = complete_checkpoints(root)
    victims = found[:-keep] if len(found) > keep else []
    deleted = []
    for step, path in victims:
        trash = _move_to_trash(path, step)
        shutil.rmtree(trash, ignore_errors=True)
        deleted.append(step)
    if victims:
        fsync_dir(root)
    return deleted


def clean_leftovers(root: str | os.PathLike[str]) -> list[str]:
    """Remove temporary and trash directories left by crashed runs (call before any save)."""
    removed = []
    try:
        entries = list(os.scandir(root))
    except FileNotFoundError:
        return []
    for entry in entries:
        if entry.name.startswith((TMP_PREFIX, TRASH_PREFIX)) and entry.is_dir():
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.name)
    return removed


def discard(tmp: Path) -> None:
    """Drop a failed save's temporary directory."""
    if tmp.exists():
        trash = tmp.parent / f"{TRASH_PREFIX}failed-{uuid.uuid4().hex[:8]}"
        os.rename(tmp, trash)
        shutil.rmtree(trash, ignore_errors=True)
