"""Templates ship with the provider that renders them: one environment setup (StrictUndefined,
`shquote`) for any package's `templates/` folder, also a package outside jsctl."""
from __future__ import annotations

import sys

import jinja2
import pytest

from jsctl.render import render


@pytest.fixture
def provider_package(tmp_path, monkeypatch):
    pkg = tmp_path / "outoftree_provider"
    (pkg / "templates").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "templates" / "run.sh.j2").write_text("echo {{ message | shquote }}\nexec {{ argv | shjoin }}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "outoftree_provider"
    sys.modules.pop("outoftree_provider", None)


def test_a_provider_renders_its_own_templates(provider_package):
    text = render(provider_package, "run.sh.j2", message="it's $(here)", argv=["python", "a b.py"])
    assert text == "echo 'it'\"'\"'s $(here)'\nexec python 'a b.py'\n"
    with pytest.raises(jinja2.UndefinedError):
        render(provider_package, "run.sh.j2", message="no argv")


def test_the_slurm_batch_script_template_lives_in_the_slurm_package():
    from jsctl.providers.slurm import script

    assert render.__module__ == "jsctl.render"
    from importlib import resources
    assert resources.files("jsctl.providers.slurm").joinpath("templates", script.TEMPLATE).is_file()
