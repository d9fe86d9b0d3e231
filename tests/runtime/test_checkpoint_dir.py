"""Atomic directory protocol, without torch: marker, rename, discovery, retention, cleanup."""

from __future__ import annotations

from pathlib import Path

from jsruntime import checkpoint_dir as cdir


def fake_save(root: Path, step: int, nonce: str = "abcd", complete: bool = True) -> Path:
    tmp = cdir.tmp_dir(root, step, nonce)
    tmp.mkdir(parents=True)
    (tmp / "__0_0.distcp").write_bytes(b"x" * 10)
    return cdir.finalize(tmp, step, {"world_size": 1}) if complete else tmp


def test_only_marked_final_dirs_count(tmp_path):
    assert cdir.latest_complete(tmp_path / "missing") is None
    fake_save(tmp_path, 10)
    fake_save(tmp_path, 30, complete=False)  # a save in progress / killed
    unmarked = tmp_path / cdir.step_dir_name(40)
    unmarked.mkdir()  # a final name without marker is ignored too
    step, path = cdir.latest_complete(tmp_path)
    assert step == 10 and path.name == "step-00000010"
    assert cdir.read_marker(path)["step"] == 10


def test_retention_keeps_newest_and_never_zero(tmp_path):
    for step in (1, 2, 3):
        fake_save(tmp_path, step)
    assert cdir.apply_retention(tmp_path, 2) == [1]
    assert [s for s, _ in cdir.complete_checkpoints(tmp_path)] == [2, 3]
    assert cdir.apply_retention(tmp_path, 0) == [2]  # 0 is treated as 1: never zero
    assert [s for s, _ in cdir.complete_checkpoints(tmp_path)] == [3]
    fake_save(tmp_path, 4, complete=False)
    assert cdir.apply_retention(tmp_path, 1) == []  # an incomplete newer save does not count
    assert not list(tmp_path.glob(cdir.TRASH_PREFIX + "*"))


def test_same_step_again_replaces_and_leftovers_are_cleaned(tmp_path):
    fake_save(tmp_path, 5, nonce="aaaa")
    fake_save(tmp_path, 5, nonce="bbbb")
    assert len(cdir.complete_checkpoints(tmp_path)) == 1
    fake_save(tmp_path, 6, complete=False)
    (tmp_path / (cdir.TRASH_PREFIX + "00000001-dead")).mkdir()
    removed = cdir.clean_leftovers(tmp_path)
    assert len(removed) == 2  # the tmp dir and the trash dir
    assert [s for s, _ in cdir.complete_checkpoints(tmp_path)] == [5]
