"""The S3 endpoint going away in the middle of an apply (a proxy in front of moto, cut after the first
submit): the error names the jobs submitted but not recorded, the lock's lease expires, and the next
apply, with the endpoint back and moto's state as it was, adopts those jobs instead of resubmitting."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

import boto3
import pytest
from s3state import s3_workspace
from localjobs import job_yaml, run_cli

from jsctl.state.s3 import S3Backend

N = 20


class Proxy:
    """A TCP proxy to moto that can be cut (listener and every open connection closed) and restored
    on the same port."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.conns: list[socket.socket] = []
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._start()

    def _start(self) -> None:
        self.listener.listen(64)
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            self.conns += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        self.listener.close()
        for s in self.conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass
        self.conns.clear()

    def restore(self) -> None:
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", self.port))
        self._start()


@pytest.fixture
def proxied(tmp_path, monkeypatch, moto_url, bucket):
    host, port = moto_url.rsplit("//", 1)[1].split(":")
    proxy = Proxy((host, int(port)))
    monkeypatch.chdir(tmp_path)
    s3_workspace(tmp_path, f"http://127.0.0.1:{proxy.port}", bucket)
    for i in range(N):
        (tmp_path / f"j{i:02d}.yaml").write_text(job_yaml(f"j{i:02d}", ["true"]))
    yield proxy
    proxy.cut()


def _resources(moto_url, bucket) -> list[str]:
    s3 = boto3.client("s3", endpoint_url=moto_url, region_name="us-east-1")
    try:
        return sorted(json.loads(s3.get_object(Bucket=bucket, Key="jsctl/state.json")["Body"].read())["resources"])
    except s3.exceptions.NoSuchKey:
        return []


def test_endpoint_gone_mid_apply_then_next_apply_adopts(proxied, tmp_path, moto_url, bucket):
    files = [a for i in range(N) for a in ("-f", f"j{i:02d}.yaml")]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "JSCTL_LOCK_LEASE": "2"}
    proc = subprocess.Popen([sys.executable, "-m", "jsctl.cli", "apply", *files, "--auto-approve"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first = proc.stdout.readline()
    while ": submitted local://" not in first:
        assert first, proc.stderr.read()
        first = proc.stdout.readline()
    proxied.cut()  # the endpoint goes away after the first submit
    out, err = proc.communicate(timeout=120)
    out = first + out
    assert proc.returncode == 1, out + err
    assert "Traceback" not in err
    submitted = {line.split(":", 1)[0] for line in out.splitlines() if ": submitted local://" in line}
    recorded = set(_resources(moto_url, bucket))
    unrecorded = submitted - recorded
    assert unrecorded, (out, recorded)
    assert "Done on the engines but not recorded in state:" in err
    for address in unrecorded:  # the error says what was submitted
        assert f"{address}: submitted local://" in err, err
    lock = S3Backend(bucket, "jsctl/state.json", "us-east-1", moto_url).lock_info()
    assert lock is not None and lock["Operation"] == "apply"  # left behind ...
    assert lock["expires"] < time.time() + 3  # ... with a lease that runs out by itself

    proxied.restore()  # the endpoint is back, moto's state as it was
    code, out, err = run_cli("apply", *files, "--auto-approve", "--lock-timeout", "30s", env={"JSCTL_LOCK_LEASE": "2"})
    assert code == 0, out + err
    adopted = {line.split(":", 1)[0] for line in out.splitlines() if "adopting it" in line}
    assert unrecorded <= adopted, out
    assert not (adopted & recorded)
    assert len(os.listdir(tmp_path / ".jsctl" / "runs")) == N  # nothing submitted twice
    assert _resources(moto_url, bucket) == [f"job.j{i:02d}" for i in range(N)]
    assert S3Backend(bucket, "jsctl/state.json", "us-east-1", moto_url).lock_info() is None
