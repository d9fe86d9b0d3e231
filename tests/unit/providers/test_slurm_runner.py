"""Running Slurm commands here or over ssh: the remote line is quoted, secrets travel on stdin
(never in argv or a file), SBATCH_* variables cannot override the script. A stand-in `ssh` runs
the remote line with sh, as a login node's shell would."""
from __future__ import annotations

import json
import os

import pytest

from jsctl.errors import ProviderError
from jsctl.providers.slurm.runner import Runner
from jsctl.providers.slurm.settings import Access, SlurmSettings
from jsctl.model.cluster import Cluster

FAKE_SSH = r"""#!/bin/sh
printf '%s\n' "$@" >> "$SSH_ARGV_LOG"
while [ $# -gt 0 ]; do
  case $1 in --) shift; break ;; -o|-p|-i) shift 2 ;; *) shift ;; esac
done
shift  # user@host
exec sh -c "$1"
"""


@pytest.fixture
def fake_ssh(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(FAKE_SSH)
    (bin_dir / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("SSH_ARGV_LOG", str(tmp_path / "ssh-argv.log"))
    return tmp_path / "ssh-argv.log"


def test_ssh_command_line():
    r = Runner(Access("ssh", "login.example", "alice", 2222, ("-i", "/k/id"), "/etc/slurm/x.conf"))
    assert r.command(["squeue", "--json"]) == [
        "ssh", "-o", "BatchMode=yes", "-i", "/k/id", "-p", "2222", "--", "alice@login.example",
        "SLURM_CONF=/etc/slurm/x.conf squeue --json"]
    assert r.command(["mkdir", "-p", "--", "/a b/it's"])[-1].endswith("mkdir -p -- '/a b/it'\"'\"'s'")


SECRETS = {"TOKEN": "it's \"x\" $(touch PWNED) `id`; \n second line\n", "EMPTY": "", "B": "ünï"}


def test_ssh_secrets_travel_on_stdin(tmp_path, fake_ssh):
    r = Runner(Access("ssh", "login", "alice"))
    out = tmp_path / "env.json"
    code = (f"import json, os, sys; json.dump({{k: os.environ.get(k) for k in {sorted(SECRETS)!r}}}, "
            f"open({str(out)!r}, 'w')); open({str(tmp_path / 'stdin.txt')!r}, 'w').write(sys.stdin.read())")
    res = r.run(["python3", "-c", code], input="#!/bin/bash\necho the script\n", secrets=SECRETS)
    assert res.ok, res.stderr
    assert json.loads(out.read_text()) == SECRETS
    assert (tmp_path / "stdin.txt").read_text() == "#!/bin/bash\necho the script\n"
    argv = fake_ssh.read_text()
    assert "second line" not in argv and "touch PWNED" not in argv and "ünï" not in argv
    assert not list(tmp_path.rglob("PWNED"))


def test_local_secrets_in_the_environment_and_sbatch_vars_dropped(tmp_path, monkeypatch):
    monkeypatch.setenv("SBATCH_PARTITION", "elsewhere")
    monkeypatch.setenv("SBATCH_TIMELIMIT", "1")
    r = Runner(Access("local", slurm_conf="/x/slurm.conf"), cwd=str(tmp_path))
    code = ("import json, os; print(json.dumps({k: v for k, v in os.environ.items() "
            "if k.startswith(('SBATCH_', 'SLURM_CONF', 'TOKEN'))}) + ' ' + os.getcwd())")
    res = r.run(["python3", "-c", code], secrets={"TOKEN": SECRETS["TOKEN"]})
    env, cwd = res.stdout.rsplit(" ", 1)
    assert json.loads(env) == {"SLURM_CONF": "/x/slurm.conf", "TOKEN": SECRETS["TOKEN"]}
    assert cwd.strip() == str(tmp_path)


def test_bad_secret_name_and_missing_command():
    r = Runner(Access("local"))
    with pytest.raises(ProviderError, match="not a valid environment variable name"):
        r.run(["true"], secrets={"A-B": "x"})
    with pytest.raises(ProviderError, match="not found on this machine"):
        r.run(["definitely-not-sbatch-xyz"])


def test_settings():
    s = SlurmSettings.of(Cluster("hpc", "slurm", {"access": {"host": "login"}, "shared_dir": "/shared",
                                                  "settings": {"signal_grace": 300}}))
    assert s.access.mode == "ssh" and s.signal_grace_s == 300 and s.log_root("/w") == "/shared/logs"
    assert s.log_roots("/ws") == ("/shared/logs",)
    local = SlurmSettings.of(Cluster("ci", "slurm", {}))
    assert local.access.mode == "local" and local.container_runtime == "none"
    assert local.log_root("/w") == "/w/.jsctl/slurm-logs" and local.log_roots("/ws") == ("/ws/.jsctl/slurm-logs",)
    with pytest.raises(ProviderError):
        SlurmSettings.of(Cluster("x", "slurm", {"settings": {"signal_grace": "soon"}}))
