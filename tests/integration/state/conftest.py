"""A moto S3 server for the session (127.0.0.1, a free port), and state backends on it and on disk."""
import os
import socket
import subprocess
import sys
import time
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(os.path.dirname(HERE), "local"))  # localjobs

AWS_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_SESSION_TOKEN": "testing", "AWS_EC2_METADATA_DISABLED": "true"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def moto_url():
    pytest.importorskip("boto3")
    pytest.importorskip("moto.server")
    port = _free_port()
    if os.environ.get("JSCTL_TEST_MOTO") == "threaded":
        cmd = ["moto_server", "-H", "127.0.0.1", "-p", str(port)]
    else:
        cmd = [sys.executable, os.path.join(HERE, "motoserve.py"), str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"moto server exited ({proc.returncode})")
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("moto server did not start in 20 s")
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def aws_env(monkeypatch):
    for k, v in AWS_ENV.items():
        monkeypatch.setenv(k, v)
    return AWS_ENV


@pytest.fixture
def bucket(moto_url, aws_env):
    """A fresh bucket on the moto server."""
    import boto3

    name = f"jsctl-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=moto_url, region_name="us-east-1").create_bucket(Bucket=name)
    return name


@pytest.fixture(params=["local", "s3"])
def make_backend(request, tmp_path):
    """A function giving a new backend object on one shared state (local file, or S3 on moto)."""
    if request.param == "local":
        from jsctl.state.local import LocalBackend

        path = str(tmp_path / "state.json")
        return lambda: LocalBackend(path)
    url = request.getfixturevalue("moto_url")
    name = request.getfixturevalue("bucket")
    from jsctl.state.s3 import S3Backend

    return lambda: S3Backend(name, "team/state.json", "us-east-1", url)
