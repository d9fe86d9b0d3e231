"""What an Azure ML node does with a command job, played on this machine (the fake service runs
nothing): run the recorded body's `command` with bash, in the environment Azure ML's PyTorch
distribution gives the node's one process (MASTER_ADDR, MASTER_PORT, NODE_RANK, RANK, WORLD_SIZE,
LOCAL_RANK, AZUREML_RUN_ID) plus the body's environmentVariables, and a managed-identity endpoint
(IDENTITY_ENDPOINT, IDENTITY_HEADER, as on a compute with an identity) on the fake service, whose Key
Vault the entry script then reads its secrets from. The image is ignored: this machine's Python runs it."""
from __future__ import annotations

import os
import subprocess
import sys


def run_node(body: dict, cwd: str, url: str, rank: int = 0, timeout: float = 60.0) -> subprocess.CompletedProcess:
    props = body["properties"]
    nodes = int(props["resources"]["instanceCount"])
    env = {"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
           "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "6105", "NODE_RANK": str(rank), "RANK": str(rank),
           "LOCAL_RANK": "0", "WORLD_SIZE": str(nodes), "AZUREML_RUN_ID": props.get("displayName", ""),
           "IDENTITY_ENDPOINT": f"{url}/identity", "IDENTITY_HEADER": "fake-identity-header",
           **dict(props.get("environmentVariables") or {})}
    return subprocess.run(["bash", "-c", props["command"]], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
