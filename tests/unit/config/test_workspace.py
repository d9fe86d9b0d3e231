"""jsctl.yaml: a cluster is name, provider and description; every other key is a setting its provider's
schema checks, positioned like job files. An unknown provider names the installed ones."""
from __future__ import annotations

import pytest

from jsctl import api
from jsctl.config import workspace
from jsctl.errors import ConfigError
from jsctl.providers import registry

GOOD = """\
version: jetstream.v1
clusters:
  - name: here
    provider: local
    description: this machine
    max_workers: 2
  - name: hpc
    provider: slurm
    access: {mode: ssh, host: login.example, user: alice}
    container_runtime: pyxis
    shared_dir: /shared/alice
    settings: {signal_grace: 90}
    partitions:
      - {name: a100, gpu_type: a100-80gb, gpus_per_node: 8, nodes: 4, max_time: 48h, qos: {high: urgent}}
"""


def errors(path: str) -> list:
    with pytest.raises(ConfigError) as info:
        api.open_workspace(path)
    return [d for d in info.value.diagnostics if d.severity == "error"]


def test_a_good_workspace_loads(write):
    ws = api.open_workspace(write("jsctl.yaml", GOOD))
    here, hpc = ws.clusters
    assert (here.name, here.provider, dict(here.settings)) == ("here", "local", {"max_workers": 2})
    assert hpc.provider == "slurm" and hpc.settings["container_runtime"] == "pyxis"
    assert hpc.settings["partitions"][0]["qos"] == {"high": "urgent"}
    assert "description" not in hpc.settings and "name" not in hpc.settings


def test_unknown_provider_is_positioned_with_did_you_mean_and_the_installed_ones(write):
    path = write("jsctl.yaml", GOOD.replace("provider: slurm", "provider: slrum"))
    (d,) = errors(path)
    assert d.location() == f"{path}:8:15"
    assert d.message == "unknown provider 'slrum' (did you mean 'slurm'?)"
    assert d.hint.startswith("installed providers: " + ", ".join(registry.names()))
    assert "local" in d.hint and "slurm" in d.hint


def test_bad_slurm_settings_are_positioned_at_their_line_and_column(write):
    text = (GOOD.replace("container_runtime: pyxis", "container_runtime: pyxsi")
            .replace("gpus_per_node: 8", "gpu_per_node: 8")
            .replace("mode: ssh", "mode: telnet"))
    path = write("jsctl.yaml", text)
    found = {d.location(): d.message for d in errors(path)}
    assert found == {
        f"{path}:9:20": "'mode' must be one of local, ssh, slurmrestd; got 'telnet'",
        f"{path}:10:24": "'container_runtime' must be one of pyxis, apptainer, none; got 'pyxsi' "
                         "(did you mean 'pyxis'?)",
        f"{path}:14:43": "unknown field 'gpu_per_node' in clusters[1].partitions[0] (did you mean 'gpus_per_node'?)",
    }


def test_settings_of_one_provider_are_unknown_to_another(write):
    path = write("jsctl.yaml", GOOD.replace("    max_workers: 2\n", "    max_workers: 2\n    shared_dir: /x\n"))
    (d,) = errors(path)
    assert d.location() == f"{path}:7:5"
    assert d.message == "unknown field 'shared_dir' in clusters[0]"


def test_settings_types_are_checked_by_the_provider_schema(write):
    (d,) = errors(write("jsctl.yaml", GOOD.replace("signal_grace: 90", "signal_grace: soon")))
    assert (d.line, d.col) == (12, 30) and d.message == "'signal_grace' must be a positive integer, got 'soon'"


def test_a_provider_brings_its_own_schema(write):
    """What the core checks comes only from the schemas it is given (an out-of-tree provider's too)."""
    schemas = {"local": {"type": "object", "additionalProperties": False, "properties": {}},
               "tpu-pods": {"type": "object", "required": ["zone"], "additionalProperties": False,
                            "properties": {"zone": {"type": "string"}}}}
    path = write("jsctl.yaml", "clusters:\n  - name: pods\n    provider: tpu-pods\n    zone: us-central2-b\n")
    (pods,) = workspace.load(path, schemas).clusters
    assert pods.settings == {"zone": "us-central2-b"}
    path = write("jsctl.yaml", "clusters:\n  - name: pods\n    provider: tpu-pods\n    zones: [a]\n")
    with pytest.raises(ConfigError) as info:
        workspace.load(path, {"tpu-pods": lambda: schemas["tpu-pods"]})
    messages = sorted(d.message for d in info.value.diagnostics)
    assert messages == ["missing required field 'zone' in clusters[0]",
                        "unknown field 'zones' in clusters[0] (did you mean 'zone'?)"]


def test_only_the_providers_used_are_asked_for_their_schema(write):
    asked = []

    def schema_of(name):
        def load():
            asked.append(name)
            return {"type": "object"}
        return load

    workspace.load(write("jsctl.yaml", "clusters:\n  - {name: here, provider: local}\n"),
                   {"local": schema_of("local"), "broken": schema_of("broken")})
    assert asked == ["local"]


def test_without_a_workspace_file_the_default_is_this_machine(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (c,) = api.open_workspace().clusters
    assert (c.name, c.provider) == ("local", "local")
