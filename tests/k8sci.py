"""The CI Kubernetes control plane that scripts/k8s-up.sh starts, for the integration and contract
tests: where its kubeconfig is, whether the apiserver answers, running kubectl against it, and
waiting for something to happen on it.

Fake nodes (kwok): pool a100 (a100-0..3: 8 nvidia.com/gpu each, taint nvidia.com/gpu=present:NoSchedule)
and pool cpu (cpu-0, cpu-1); label jsctl.dev/pool. A pod owned by a Job exits 0 about 3 s after it
starts, unless its labels say otherwise: kwok-run=long (runs until deleted), kwok-exit=fail (exit 1
after 2 s), kwok-exit=requeue (exit 75 after 2 s), kwok-duration=10s (other wait).
"""
from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import urllib.request
from pathlib import Path

from slurmci import wait_for  # noqa: F401  (re-exported: one waiting helper for all engines)

BASE = Path(os.environ.get("JSCTL_K8S_BASE", "/tmp/jsctl-k8s"))
KUBECONFIG = Path(os.environ.get("JSCTL_K8S_KUBECONFIG") or BASE / "kubeconfig")
KUBECTL = os.environ.get("KUBECTL") or shutil.which("kubectl") or "/usr/bin/kubectl"
NAMESPACE = "jsctl-ci"  # created by k8s-up.sh; tests may create more

UP_HINT = "run: bash scripts/k8s-up.sh up"


def _server_and_tls() -> tuple[str, ssl.SSLContext]:
    """The apiserver URL and a TLS context with the admin client cert, read from the kubeconfig."""
    import base64
    import tempfile

    import yaml  # kubernetes' dependency PyYAML; imported only here

    cfg = yaml.safe_load(KUBECONFIG.read_text())
    ctx_name = cfg.get("current-context")
    ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == ctx_name)
    cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
    user = next(u["user"] for u in cfg["users"] if u["name"] == ctx["user"])
    tls = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = Path(tmp, "c.crt"), Path(tmp, "c.key")
        cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
        key.write_bytes(base64.b64decode(user["client-key-data"]))
        tls.load_cert_chain(cert, key)
    return cluster["server"], tls


def unreachable(timeout: float = 3) -> str | None:
    """Why the cluster cannot be used, or None when its apiserver answers /readyz."""
    if not KUBECONFIG.exists():
        return f"no kubeconfig at {KUBECONFIG} ({UP_HINT})"
    try:
        server, tls = _server_and_tls()
    except Exception as e:  # noqa: BLE001 - any unreadable kubeconfig is a reason to skip
        return f"kubeconfig {KUBECONFIG} is unreadable: {e}"
    try:
        with urllib.request.urlopen(f"{server}/readyz", timeout=timeout, context=tls) as res:
            if res.status != 200:
                return f"apiserver {server} is not ready (HTTP {res.status})"
    except OSError as e:
        return f"apiserver {server} does not answer: {e} ({UP_HINT})"
    return None


def kubectl(*args: str, check: bool = True, input: str | None = None, timeout: float = 60,
            namespace: str | None = NAMESPACE) -> subprocess.CompletedProcess:
    """Run kubectl against the CI cluster (namespace jsctl-ci unless given; None for none).
    Raises AssertionError with kubectl's stderr when `check` and it fails."""
    cmd = [KUBECTL, f"--kubeconfig={KUBECONFIG}"]
    if namespace is not None and not any(a in ("-n", "--namespace", "-A", "--all-namespaces")
                                         or a.startswith("--namespace=") for a in args):
        cmd.append(f"--namespace={namespace}")
    res = subprocess.run([*cmd, *args], check=False, capture_output=True, text=True, input=input,
                         timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({res.returncode}): {res.stderr.strip()}")
    return res


def get(*args: str, **kw) -> dict:
    """`kubectl get ARGS -o json`, parsed."""
    return json.loads(kubectl("get", *args, "-o", "json", **kw).stdout)
