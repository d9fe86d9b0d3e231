"""The SDK: every CLI verb is first one of these typed functions; the CLI only parses arguments and
prints what they return. `import jsctl` exposes the public ones (docs/sdk.md).

- live: open_workspace, store_for, force_unlock, refresh, observe, probe
- plans: variables, validate, plan, check_remote, apply (apply's events are in jsctl.apply; the caller
  holds the state lock, as the CLI does)
- flows: what the CLI does around the verbs: apply under the state lock (`jsctl.apply`), wait, wait_all
- jobs: status, describe, logs, metrics, stop, pause, resume, plan_scale, scale, advise, tune
- reports: cluster_status, offers, cost_report
"""
from jsctl.api.live import Echo, force_unlock, observe, open_workspace, probe, refresh, store_for
from jsctl.api.plans import Validation, apply, check_remote, plan, validate, variables
from jsctl.api.jobs import (Controlled, JobDetail, JobStatus, Paused, ScalePlan, Tuned, advise, describe, find, logs,
                            metrics, pause, plan_scale, resume, scale, status, stop, tune)
from jsctl.api.reports import ClusterStatus, cluster_status, cost_report, offers
from jsctl.api import flows
from jsctl.api.flows import FINAL_PHASES, wait, wait_all

__all__ = ["Echo", "force_unlock", "observe", "open_workspace", "probe", "refresh", "store_for", "Validation", "apply",
           "check_remote", "plan", "validate", "variables", "Controlled", "JobDetail", "JobStatus", "describe",
           "find", "logs", "metrics", "Paused", "pause", "resume", "ScalePlan", "plan_scale", "scale", "status", "stop",
           "Tuned", "advise", "tune", "ClusterStatus", "cluster_status", "cost_report", "offers", "flows",
           "FINAL_PHASES", "wait", "wait_all"]
