"""A provider client whose SDK is not installed: a clear error naming the extra, exit 1, no traceback."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from jsctl.cli import main
from jsctl.errors import missing_sdk

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kubernetes" / "jsctl.yaml"


def test_missing_sdk_names_the_extra():
    error = missing_sdk(ModuleNotFoundError("No module named 'google.cloud'", name="google.cloud"))
    assert error is not None and error.hint == "pip install 'jsctl[gcp]'" and "google.cloud" in error.message
    assert missing_sdk(ModuleNotFoundError("No module named 'yaml'", name="yaml")) is None  # a bug: not ours to hide


def test_the_cli_says_which_extra_to_install(tmp_path, monkeypatch, capsys):
    shutil.copy(EXAMPLE, tmp_path / "jsctl.yaml")
    monkeypatch.chdir(tmp_path)
    for name in [m for m in sys.modules if m == "kubernetes" or m.startswith("kubernetes.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "kubernetes", None)  # `import kubernetes` fails: as if not installed
    for module in ("jsctl.providers.kubernetes.kubeapi", "jsctl.providers.kubernetes.client"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(SystemExit) as exited:
        main(["cluster", "status"])
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert "needs the Python package 'kubernetes'" in err and "pip install 'jsctl[k8s]'" in err
    assert "Traceback" not in err and "internal error" not in err
