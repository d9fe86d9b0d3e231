import pytest

from fwkit import copy_examples, kill_leftovers


@pytest.fixture
def fw(tmp_path, monkeypatch):
    """A fresh workspace with examples/frameworks copied in (the embedded default: local cluster)."""
    pytest.importorskip("torch", reason="needs torch==2.13.0 (pip install -e '.[runtime]')")
    monkeypatch.chdir(tmp_path)
    copy_examples(tmp_path)
    yield tmp_path
    kill_leftovers(tmp_path)
