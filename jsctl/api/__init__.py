"""The SDK: every CLI verb is first one of these typed functions; the CLI only parses arguments and
prints what they return.

- live: open_workspace, store_for, force_unlock, refresh, observe, probe
- plans: variables, validate, plan, check_remote, apply (apply's events are in jsctl.apply)
- jobs: status, describe, logs, metrics, stop, pause, resume, scale, advise, tune
- reports: cluster_status, offers, cost_report
"""
from jsctl.api.live import Echo, force_unlock, observe, open_workspace, probe, refresh, store_for
from jsctl.api.plans import Validation, apply, check_remote, plan, validate, variables
from jsctl.api.jobs import (Controlled, JobDetail, JobStatus, Paused, Tuned, advise, describe, find, logs, metrics,
                            pause, resume, scale, status, stop, tune)
from jsctl.api.reports import ClusterStatus, cluster_status, cost_report, offers

__all__ = ["Echo", "force_unlock", "observe", "open_workspace", "probe", "refresh", "store_for", "Validation", "apply",
           "check_remote", "plan", "validate", "variables", "Controlled", "JobDetail", "JobStatus", "describe",
           "find", "logs", "metrics", "Paused", "pause", "resume", "scale", "status", "stop", "Tuned", "advise", "tune",
           "ClusterStatus",
           "cluster_status", "cost_report", "offers"]
