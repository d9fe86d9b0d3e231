"""Every user value in the batch script arrives unchanged and runs nothing: the script is run
under bash with stand-ins for srun/scontrol (tests/integration/slurm repeats this on a real cluster)."""
from __future__ import annotations

import dataclasses
import json

import pytest

from jsctl.errors import RenderError
from jsctl.model.job import JobContext
from jsctl.providers.slurm import SlurmProvider
from jsctl.providers.slurm.script import sbatch_value
from hostile import HOSTILE
from hostile import hostile_job as hostile_job_of
from slurmkit import plan_changes, run_script, script_of


def hostile_job() -> str:
    return hostile_job_of('    LITERAL: "$${HOME} stays"\n    RUNTIME: "nodes=${JETSTREAM_NNODES}"', ("LITERAL", "RUNTIME"))


def test_hostile_values_arrive_unchanged_and_run_nothing(tmp_path):
    (change,) = plan_changes(tmp_path, {"job.yaml": hostile_job()}, ["job.yaml"])
    text = script_of(change)
    dump = tmp_path / "dump.json"
    res = run_script(tmp_path, text, {"DUMP": str(dump)})
    assert res.returncode == 0, res.stdout + res.stderr
    got = json.loads(dump.read_text())
    assert got["argv"] == HOSTILE
    for i, v in enumerate(HOSTILE):
        assert got["env"][f"V{i}"] == v
    assert got["env"]["LITERAL"] == "${HOME} stays"
    assert got["env"]["RUNTIME"] == "nodes=1"  # platform names expand when the job runs
    assert (tmp_path / "pre.txt").read_text() == "it's $(touch PWNED_pre); `id`"
    assert not list(tmp_path.glob("PWNED*"))


def test_hostile_job_name_and_paths(tmp_path):
    """Job names are DNS labels after validation; render still quotes them as if they were not."""
    (change,) = plan_changes(tmp_path, {"job.yaml": hostile_job()}, ["job.yaml"])
    provider = SlurmProvider()
    weird_dir = tmp_path / 'we ird"$(touch PWNED_dir)'
    weird_dir.mkdir()
    ctx = JobContext("job.quoting", "js-q'u;o`t`e$(touch PWNED_name)", 1,
                     dataclasses.replace(_spec(change), name="q'u;o"), change.placement, (), {}, str(weird_dir))
    art = provider.render(ctx, None)
    text = art.files[0][1]
    assert '#SBATCH --job-name="js-q\'u;o`t`e$(touch PWNED_name)"' in text
    assert "--chdir=" in text and 'we ird\\"$(touch PWNED_dir)' in text
    dump = tmp_path / "dump.json"
    res = run_script(tmp_path, text, {"DUMP": str(dump)}, cwd=weird_dir)
    assert res.returncode == 0, res.stderr
    assert json.loads(dump.read_text())["argv"] == HOSTILE
    assert "jsctl: js-q'u;o`t`e$(touch PWNED_name) is Slurm job 4242" in res.stdout
    assert not list(tmp_path.rglob("PWNED*"))


def _spec(change):
    from jsctl.config.spec import build

    return build(change.spec, change.file)


@pytest.mark.parametrize("value, written", [
    ("plain-value_1.2:/x@y=z+,%j", "plain-value_1.2:/x@y=z+,%j"),
    ("two words", '"two words"'),
    ('q"uote', '"q\\"uote"'),
    ("back\\slash", '"back\\\\slash"'),
    ("it's", "\"it's\""),
    ("#hash", '"#hash"'),
])
def test_sbatch_value(value, written):
    assert sbatch_value(value) == written


@pytest.mark.parametrize("value", ["two\nlines", "tab\there", "nul\x00"])
def test_sbatch_value_refuses_control_characters(value):
    with pytest.raises(RenderError):
        sbatch_value(value)
