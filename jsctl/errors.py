"""One hierarchy of user-facing errors; each carries the exit code the CLI returns.

    JsctlError                  every error a user can cause or fix (.message, .hint, .exit_code)
    ├── ConfigError             job, workflow, variable or workspace files are wrong (.diagnostics)
    ├── PlanError               no feasible placement, over budget, a stale saved plan (.plan: what was planned)
    ├── RenderError             a provider could not render a job's artifact
    ├── StateError              the state is unreadable, corrupt, or from another version
    │   └── StateLockedError    another operation holds the state lock (.lock_info)
    ├── ProviderError           a provider or engine refused or failed an operation
    │   └── CapabilityError     the provider cannot do this (pause, scale... on its engine)
    ├── UsageError              the request cannot be done (an unknown job, no terminal to ask)
    └── WaitTimeoutError        jobs still running when a wait ran out of time (.statuses)

The SDK (`import jsctl`) raises these and only these for what a user can fix; the CLI prints them
without a traceback and exits with `exit_code`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from jsctl.config.diagnostics import Diagnostic


class JsctlError(Exception):
    """Base of every error a user can cause or fix; never shown with a traceback."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class ConfigError(JsctlError):
    """Configuration problems, collected: carries every diagnostic found."""

    def __init__(self, diagnostics: Sequence["Diagnostic"], message: str | None = None) -> None:
        self.diagnostics = list(diagnostics)
        errors = sum(1 for d in self.diagnostics if d.severity == "error")
        super().__init__(message or f"{errors} error{'s' if errors != 1 else ''} in configuration")


class PlanError(JsctlError):
    """The plan cannot be made (no feasible placement, over budget, stale plan file...)."""


class RenderError(JsctlError):
    """A provider could not render an artifact for a job."""


class StateError(JsctlError):
    """The state file is unreadable, corrupt, or from an incompatible version."""


class StateLockedError(StateError):
    """Another operation holds the state lock."""

    def __init__(self, message: str, lock_info: dict, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.lock_info = lock_info


class ProviderError(JsctlError):
    """A provider or engine refused or failed an operation."""


class CapabilityError(ProviderError):
    """A provider lacks a capability a command needs."""


class UsageError(JsctlError):
    """The command line asks for something that cannot be done (unknown job, no terminal ...). Exits 1
    like every error: 2 means "changes present" under `plan --detailed-exitcode`."""


class WaitTimeoutError(JsctlError):
    """`jsctl.wait` / `wait_all` ran out of time: `statuses` are the jobs as last seen (JobStatus)."""

    def __init__(self, message: str, statuses: Sequence = (), hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.statuses = tuple(statuses)


# the SDK a built-in provider's client imports (its top-level package) → the jsctl extra that installs it
SDK_EXTRAS = {"kubernetes": "k8s", "boto3": "aws", "botocore": "aws", "google": "gcp", "azure": "azure",
              "starlette": "dashboard", "uvicorn": "dashboard"}


def missing_sdk(exc: ModuleNotFoundError) -> ProviderError | None:
    """A clear error for a provider client whose SDK is not installed (None: some other module)."""
    top = (exc.name or "").split(".")[0]
    extra = SDK_EXTRAS.get(top)
    if extra is None:
        return None
    return ProviderError(f"this needs the Python package '{exc.name}', which is not installed",
                         hint=f"pip install 'jsctl[{extra}]'")
