"""A provider that is not installed (issue 10): did you mean the closest installed one, and only
extras the installed jsctl declares (its metadata), never a made-up `jsctl[aws]`."""
from __future__ import annotations

from importlib.metadata import metadata

import pytest

from jsctl import api
from jsctl.config import workspace
from jsctl.errors import ConfigError, ProviderError
from jsctl.providers import registry

WS = "version: jetstream.v1\nclusters:\n  - name: c\n    provider: {name}\n"


def _registry_error(name: str) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        registry.get(name)
    return info.value


def _ws02(write, name: str):
    with pytest.raises(ConfigError) as info:
        api.open_workspace(write("jsctl.yaml", WS.format(name=name)))
    (d,) = info.value.diagnostics
    assert d.code == "WS02"
    return d


def test_extras_are_read_from_the_installed_distribution():
    assert workspace.jsctl_extras() == sorted(metadata("jsctl").get_all("Provides-Extra") or [])


@pytest.mark.parametrize("name", ["slurmm", "runai-jobs"])
def test_no_extra_that_does_not_exist_is_named(write, name):
    extras = workspace.jsctl_extras()
    for message, hint in ((_registry_error(name).message, _registry_error(name).hint),
                          (_ws02(write, name).message, _ws02(write, name).hint)):
        assert "jsctl[aws]" not in hint and "pip install 'jsctl[" not in hint
        assert "'jsctl.providers' entry-point group" in hint
        assert ", ".join(registry.names()) in hint
        if extras:
            assert f"jsctl's extras ({', '.join(extras)}) bring no provider '{name}'" in hint
        if name == "slurmm":
            assert message.endswith("(did you mean 'slurm'?)")
        else:
            assert "did you mean" not in message


def test_an_extra_named_after_the_provider_is_suggested_when_it_exists(monkeypatch, write):
    monkeypatch.setattr(workspace, "jsctl_extras", lambda: ["aws", "runtime"])
    assert "pip install 'jsctl[aws]'" in _registry_error("aws-sagemaker").hint
    assert "pip install 'jsctl[aws]'" in _ws02(write, "aws-sagemaker").hint
