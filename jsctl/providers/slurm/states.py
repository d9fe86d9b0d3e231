"""Slurm job states → jsctl phases, keeping Slurm's own word beside the phase.

Slurm reports one word per job (`squeue --json` job_state, `scontrol show job` JobState,
`sacct` State): a base state, or a flag that takes precedence over it (COMPLETING,
CONFIGURING, REQUEUED, ...). `sacct` adds detail after a space (`CANCELLED by 0`).
"""
from __future__ import annotations

from jsctl.model.status import PHASES

# Base states (enum job_states) and the flag words Slurm prints instead of them.
STATE_PHASE: dict[str, str] = {
    # base states
    "PENDING": "PENDING",
    "RUNNING": "RUNNING",
    "SUSPENDED": "PAUSED",
    "COMPLETED": "SUCCEEDED",
    "CANCELLED": "CANCELLED",
    "FAILED": "FAILED",
    "TIMEOUT": "FAILED",
    "NODE_FAIL": "FAILED",
    "PREEMPTED": "PREEMPTED",
    "BOOT_FAIL": "FAILED",
    "DEADLINE": "FAILED",
    "OUT_OF_MEMORY": "FAILED",
    # flags shown in place of the base state
    "COMPLETING": "RUNNING",  # processes are being cleaned up; the final state follows
    "CONFIGURING": "RUNNING",  # allocated, nodes booting or being configured
    "RESIZING": "RUNNING",
    "SIGNALING": "RUNNING",
    "STAGE_OUT": "RUNNING",  # burst buffer stage-out after the script ended
    "POWER_UP_NODE": "PENDING",
    "UPDATE_DB": "RUNNING",
    "LAUNCH_FAILED": "FAILED",
    "RECONFIG_FAIL": "FAILED",
    "REQUEUED": "PREEMPTED",  # being requeued: runs again from the start of the script
    "REQUEUE_FED": "PREEMPTED",
    "REQUEUE_HOLD": "PAUSED",  # requeued and held: needs `scontrol release`
    "SPECIAL_EXIT": "PAUSED",  # requeued in a held state after a special exit code
    "RESV_DEL_HOLD": "PAUSED",  # held because its reservation was deleted
    "STOPPED": "PAUSED",  # stopped by SIGSTOP, resources kept
    "REVOKED": "CANCELLED",  # federation: a sibling cluster runs it
}

# Pending reasons that mean "held": jsctl pause on a pending job holds it.
HELD_REASONS = frozenset({"JobHeldUser", "JobHeldAdmin"})
# Pending reasons that mean "this job will never run".
NEVER_REASONS = frozenset({"DependencyNeverSatisfied"})

assert set(STATE_PHASE.values()) <= set(PHASES)


def base_word(state: str) -> str:
    """`CANCELLED by 0` → `CANCELLED`; `cancelled+` → `CANCELLED`; a list from newer Slurm → its first."""
    word = state.strip().split(" ", 1)[0].rstrip("+").upper()
    return word


def phase(state: str | list | None, reason: str | None = None) -> str:
    """The jsctl phase of a Slurm state word (and, for PENDING, its reason)."""
    if isinstance(state, list):  # Slurm 23.02+ JSON: ["PENDING", "REQUEUED"]; flags come after the base
        words = [base_word(s) for s in state]
        for flag in words[1:]:
            if flag in ("REQUEUED", "REQUEUE_HOLD", "SPECIAL_EXIT", "STOPPED", "RESV_DEL_HOLD", "REQUEUE_FED"):
                return STATE_PHASE[flag]
        state = words[0] if words else ""
    if not state:
        return "UNKNOWN"
    word = base_word(state)
    p = STATE_PHASE.get(word, "UNKNOWN")
    if p == "PENDING" and reason in HELD_REASONS:
        return "PAUSED"
    return p


def engine_word(state: str | list | None) -> str:
    if isinstance(state, list):
        return "+".join(base_word(s) for s in state) or "UNKNOWN"
    return base_word(state) if state else "UNKNOWN"


def describe(state: str, reason: str | None, dependency: str | None = None,
             restarts: int = 0) -> str | None:
    """A short reason for `jsctl status`: why pending, why it ended, or None."""
    word = base_word(state)
    reason = None if reason in (None, "", "None", "(null)") else reason
    parts: list[str] = []
    if reason == "DependencyNeverSatisfied":
        parts.append(f"an upstream job did not succeed ({dependency})" if dependency
                     else "an upstream job did not succeed")
    elif reason == "Dependency" and dependency:
        parts.append(f"waiting for {dependency}")
    elif reason in HELD_REASONS:
        parts.append("held (jsctl resume releases it)")
    elif reason == "BeginTime" and restarts:
        parts.append("requeued; waits for its begin time (jsctl resume starts it sooner)")
    elif reason:
        parts.append(reason)
    if word == "TIMEOUT":
        parts.append("time limit reached")
    elif word == "OUT_OF_MEMORY":
        parts.append("out of memory")
    elif word == "NODE_FAIL":
        parts.append("a node failed")
    if restarts and not (reason == "BeginTime"):
        parts.append(f"requeued {restarts}×")
    return "; ".join(parts) or None
