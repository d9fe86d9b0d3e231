"""Running Slurm's commands: here (a login node) or over ssh, with secrets kept out of argv and files.

Over ssh, the remote command is one shell line built with `shjoin`; secret values travel on
stdin ahead of the batch script (`NAME=base64` lines, then an empty line), a small `sh`
reader exports them and `exec`s sbatch, which reads the rest of stdin as the script.
"""
from __future__ import annotations

import atexit
import base64
import os
import re
import subprocess
import threading
from dataclasses import dataclass
from typing import Mapping, Sequence

from jsctl.errors import ProviderError
from jsctl.providers.slurm.settings import Access
from jsctl.render import shjoin, shquote

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SECRET_READER = ('while IFS= read -r jsctl_kv && [ -n "$jsctl_kv" ]; do '
                 'jsctl_v=$(printf %s "${jsctl_kv#*=}" | base64 -d; echo .); '
                 'export "${jsctl_kv%%=*}=${jsctl_v%.}"; done; unset jsctl_kv jsctl_v; exec "$@"')

_RUNNING: set[subprocess.Popen] = set()  # commands running now, in any thread
_RUNNING_LOCK = threading.Lock()


@atexit.register
def _kill_running() -> None:
    """At exit, stop the commands still running: a probe or refresh that jsctl stopped waiting for
    (its thread is a daemon, left behind after --probe-timeout) must not outlive the process."""
    with _RUNNING_LOCK:
        procs = list(_RUNNING)
    for proc in procs:
        try:
            proc.kill()
        except OSError:
            pass


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    rc: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def error(self) -> str:
        text = (self.stderr.strip() or self.stdout.strip()).splitlines()
        return "; ".join(text[-3:]) or f"exit {self.rc}"


class Runner:
    def __init__(self, access: Access, cwd: str | None = None, timeout_s: float = 60.0) -> None:
        self.access = access
        self.cwd = cwd
        self.timeout_s = timeout_s

    def _env(self, secrets: Mapping[str, str] | None) -> dict[str, str]:
        # SBATCH_* variables would override the script's #SBATCH lines behind the plan's back.
        env = {k: v for k, v in os.environ.items() if not k.startswith("SBATCH_")}
        if self.access.slurm_conf:
            env["SLURM_CONF"] = self.access.slurm_conf
        if secrets and not self.access.remote:
            env.update(secrets)
        return env

    def command(self, argv: Sequence[str], with_secrets: bool = False) -> list[str]:
        """The local argv that runs `argv` where Slurm is."""
        if not self.access.remote:
            return list(argv)
        if self.access.mode != "ssh" or not self.access.host:
            raise ProviderError(f"access mode {self.access.mode} cannot run commands (use local or ssh)")
        remote = shjoin(argv)
        if with_secrets:
            remote = "sh -c " + shquote(SECRET_READER) + " sh " + remote
        if self.access.slurm_conf:
            remote = f"SLURM_CONF={shquote(self.access.slurm_conf)} {remote}"
        target = f"{self.access.user}@{self.access.host}" if self.access.user else self.access.host
        ssh = ["ssh", "-o", "BatchMode=yes", *self.access.ssh_options]
        if self.access.port:
            ssh += ["-p", str(self.access.port)]
        return ssh + ["--", target, remote]

    def run(self, argv: Sequence[str], input: str | None = None, secrets: Mapping[str, str] | None = None,
            timeout_s: float | None = None) -> Result:
        for name in secrets or {}:
            if not NAME.fullmatch(name):
                raise ProviderError(f"secret name {name!r} is not a valid environment variable name")
        remote_secrets = bool(secrets) and self.access.remote
        cmd = self.command(argv, with_secrets=remote_secrets)
        if remote_secrets:
            preamble = "".join(f"{k}={base64.b64encode(v.encode()).decode()}\n" for k, v in secrets.items())
            input = preamble + "\n" + (input or "")
        timeout = timeout_s or self.timeout_s
        try:
            # stdin is never the terminal: ssh would read what the user types (at an approval prompt)
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self._env(secrets),
                                    cwd=self.cwd if not self.access.remote and self.cwd and os.path.isdir(self.cwd)
                                    else None)
        except FileNotFoundError:
            raise ProviderError(f"{cmd[0]} not found on this machine",
                                hint="run jsctl on a Slurm login node, or set access: {mode: ssh, host: ...} "
                                     "for the cluster in jsctl.yaml") from None
        with _RUNNING_LOCK:
            _RUNNING.add(proc)
        try:
            stdout, stderr = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()  # not communicate(): a grandchild holding the pipes open would block it
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
            raise ProviderError(f"{' '.join(argv[:2])} did not answer within {timeout:g}s") from None
        finally:
            with _RUNNING_LOCK:
                _RUNNING.discard(proc)
        return Result(tuple(argv), proc.returncode, stdout, stderr)

    def check(self, argv: Sequence[str], **kw) -> Result:
        res = self.run(argv, **kw)
        if not res.ok:
            raise ProviderError(f"{argv[0]} failed: {res.error()}")
        return res

    def popen(self, argv: Sequence[str]) -> subprocess.Popen:
        """A streaming command (tail -F for `jsctl logs -f`)."""
        try:
            return subprocess.Popen(self.command(argv), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    stdin=subprocess.DEVNULL, env=self._env(None))
        except FileNotFoundError:
            raise ProviderError(f"{argv[0]} not found on this machine") from None
