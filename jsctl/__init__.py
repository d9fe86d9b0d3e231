"""jsctl: plan and apply AI training jobs like infrastructure.

The Python SDK (docs/sdk.md): `import jsctl` gives a typed function for every CLI verb, their
typed results and the exceptions they raise:

    import jsctl

    ws = jsctl.open_workspace()                      # ./jsctl.yaml, else the local default
    the_plan = jsctl.plan(["job.yaml"], ws=ws)       # what apply would do (jsctl plan)
    result = jsctl.apply(the_plan, ws)               # under the state lock (jsctl apply PLANFILE)
    final = jsctl.wait(ws, "job-name", timeout_s=3600)

Nothing of the SDK is imported until one of its names is first used: `import jsctl` (and
`jsctl --help`) stay fast.
"""
from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
# The version of every JSON document jsctl prints (validate, graph, plan, status, reports): the major
# number changes only when a field is removed or changes meaning; new fields may come in a minor one.
JSON_FORMAT_VERSION = "1.0"

# every public name of the SDK -> the module that defines it, imported on first use
_FUNCTIONS = {
    "jsctl.api.live": ("open_workspace", "force_unlock", "probe"),
    "jsctl.api.plans": ("variables", "validate", "plan", "check_remote"),
    "jsctl.api.flows": ("apply", "wait", "wait_all", "FINAL_PHASES"),
    "jsctl.api.jobs": ("status", "describe", "logs", "metrics", "stop", "pause", "resume", "plan_scale", "scale",
                       "advise", "tune"),
    "jsctl.api.reports": ("cluster_status", "cost_report", "offers"),
}
_RESULTS = {
    "jsctl.config.workspace": ("Workspace",),
    "jsctl.config.variables": ("Variables",),
    "jsctl.config.diagnostics": ("Diagnostic",),
    "jsctl.api.plans": ("Validation",),
    "jsctl.plan.model": ("Plan", "ResourceChange"),
    "jsctl.plan.cost": ("PlanCost", "CostEstimate"),
    "jsctl.apply": ("ApplyResult", "ApplyEvent"),
    "jsctl.model.status": ("JobHandle",),
    "jsctl.api.jobs": ("JobStatus", "JobDetail", "ArtifactFile", "Controlled", "Paused", "ScalePlan", "Tuned"),
    "jsctl.metrics": ("MetricsSummary", "MetricStats"),
    "jsctl.plan.tuning": ("Recommendation",),
    "jsctl.api.reports": ("ClusterStatus",),
    "jsctl.plan.report": ("CostReport", "CostRow"),
}
_ERRORS = {
    "jsctl.errors": ("JsctlError", "ConfigError", "PlanError", "RenderError", "StateError", "StateLockedError",
                     "ProviderError", "CapabilityError", "UsageError", "WaitTimeoutError"),
}
_WHERE = {name: module for table in (_FUNCTIONS, _RESULTS, _ERRORS) for module, names in table.items()
          for name in names}

__all__ = ["__version__", "JSON_FORMAT_VERSION", *_WHERE]


def _load(name: str) -> Any:
    import importlib

    return getattr(importlib.import_module(_WHERE[name]), name)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'jsctl' has no attribute {name!r}")
    value = _load(name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _SdkName:
    """A public SDK function named like one of jsctl's own submodules (jsctl.plan, jsctl.apply,
    jsctl.metrics). Importing a submodule binds its name on the package, which would hide the
    function from then on; this data descriptor keeps the function under that name. The submodules
    stay importable by their full names (`from jsctl.plan.model import Plan`,
    `importlib.import_module("jsctl.apply")`). Assigning anything else (a test's monkeypatch) is kept
    until deleted."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, module: ModuleType | None, owner: type | None = None) -> Any:
        if module is None:
            return self
        patched = module.__dict__.get("_patched", {})
        return patched[self.name] if self.name in patched else _load(self.name)

    def __set__(self, module: ModuleType, value: Any) -> None:
        if isinstance(value, ModuleType) and value.__name__ == f"{module.__name__}.{self.name}":
            return  # the import system binding the submodule: the SDK function keeps the name
        module.__dict__.setdefault("_patched", {})[self.name] = value

    def __delete__(self, module: ModuleType) -> None:
        module.__dict__.get("_patched", {}).pop(self.name, None)


class _Package(ModuleType):
    plan = _SdkName()
    apply = _SdkName()
    metrics = _SdkName()


sys.modules[__name__].__class__ = _Package

if TYPE_CHECKING:  # what type checkers and editors see; nothing of it is imported at run time
    from jsctl.api.flows import FINAL_PHASES, apply, wait, wait_all
    from jsctl.api.jobs import (ArtifactFile, Controlled, JobDetail, JobStatus, Paused, ScalePlan, Tuned, advise,
                                describe, logs, metrics, pause, plan_scale, resume, scale, status, stop, tune)
    from jsctl.api.live import force_unlock, open_workspace, probe
    from jsctl.api.plans import Validation, check_remote, plan, validate, variables
    from jsctl.api.reports import ClusterStatus, cluster_status, cost_report, offers
    from jsctl.apply import ApplyEvent, ApplyResult
    from jsctl.config.diagnostics import Diagnostic
    from jsctl.config.variables import Variables
    from jsctl.config.workspace import Workspace
    from jsctl.errors import (CapabilityError, ConfigError, JsctlError, PlanError, ProviderError, RenderError,
                              StateError, StateLockedError, UsageError, WaitTimeoutError)
    from jsctl.metrics import MetricsSummary, MetricStats
    from jsctl.model.status import JobHandle
    from jsctl.plan.cost import CostEstimate, PlanCost
    from jsctl.plan.model import Plan, ResourceChange
    from jsctl.plan.report import CostReport, CostRow
    from jsctl.plan.tuning import Recommendation
