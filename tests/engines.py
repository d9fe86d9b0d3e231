"""The rule for tests on a real engine (Slurm, the Kubernetes control plane): without the engine
they skip with the reason; where CI requires it (JSCTL_REQUIRE_SLURM=1, JSCTL_REQUIRE_K8S=1) they
fail instead, so that a CI run can never pass by skipping them."""
from __future__ import annotations

import os

import pytest


def require(reason: str | None, variable: str) -> None:
    """`reason`: why the engine cannot be reached (None: it can); `variable`: the CI switch."""
    if not reason:
        return
    if os.environ.get(variable) == "1":
        pytest.fail(f"{variable}=1 but {reason}")
    pytest.skip(reason)
