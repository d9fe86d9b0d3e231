"""Reading what Slurm prints: `squeue --json`, `sacct -P`, host lists, exit codes (pure)."""
from __future__ import annotations

import datetime as _dt
import json
import re
from typing import Any, Mapping

from jsctl.model.status import LiveStatus
from jsctl.providers.slurm import states


def expand_hostlist(text: str | None) -> tuple[str, ...]:
    """`jsn[1-2],gpu[08-10,12],login` → each host name (Slurm's compressed host list)."""
    out: list[str] = []
    for item in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)*", text or ""):
        item = item.strip()
        if not item or item in ("(null)", "None assigned"):
            continue
        names = [""]
        for literal, ranges in re.findall(r"([^\[]*)(?:\[([^\]]*)\])?", item):
            names = [n + literal for n in names]
            if ranges:
                expanded: list[str] = []
                for part in ranges.split(","):
                    lo, _, hi = part.partition("-")
                    if hi:
                        width = len(lo) if lo.startswith("0") else 0
                        expanded += [str(i).zfill(width) for i in range(int(lo), int(hi) + 1)]
                    else:
                        expanded.append(lo)
                names = [n + e for n in names for e in expanded]
        out.extend(names)
    return tuple(out)


def number(value: Any) -> int | None:
    """Slurm JSON numbers: a plain int (22.05) or {"set": true, "number": N} (23.02+)."""
    if isinstance(value, Mapping):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def decode_exit(raw: Any) -> int | None:
    """squeue's exit_code: a wait status (22.05: 768 = exit 3, 9 = killed by signal 9 → 137)
    or {"status": ..., "return_code": N, "signal": {...}} (23.02+)."""
    if isinstance(raw, Mapping):
        sig = raw.get("signal") or {}
        signal_id = number(sig.get("id") if isinstance(sig, Mapping) else sig)
        if signal_id:
            return 128 + signal_id
        return number(raw.get("return_code"))
    status = number(raw)
    if status is None:
        return None
    if status & 0x7F:
        return 128 + (status & 0x7F)
    return (status >> 8) & 0xFF


def decode_sacct_exit(text: str) -> int | None:
    """`3:0` → 3; `0:9` (signal 9) → 137."""
    code, _, sig = (text or "").partition(":")
    try:
        if sig and int(sig):
            return 128 + int(sig)
        return int(code)
    except ValueError:
        return None


def squeue_jobs(text: str) -> dict[str, Mapping[str, Any]]:
    """Jobs of `squeue --json` by job id (22.05 prints every job it knows; filters are ignored)."""
    data = json.loads(text or "{}")
    return {str(j.get("job_id")): j for j in data.get("jobs") or []}


def live_from_squeue(job: Mapping[str, Any]) -> LiveStatus:
    state = job.get("job_state")
    reason = job.get("state_reason")
    reason = None if reason in (None, "", "None") else str(reason)
    phase = states.phase(state, reason)
    word = states.engine_word(state)
    restarts = number(job.get("restart_cnt")) or 0
    dependency = job.get("dependency") or None
    start = number(job.get("start_time")) or None
    end = number(job.get("end_time")) or None
    terminal = phase in ("SUCCEEDED", "FAILED", "CANCELLED")
    return LiveStatus(
        phase=phase, engine_state=word,
        reason=states.describe(word, reason, dependency, restarts),
        started_at=float(start) if start and phase not in ("PENDING",) else None,
        ended_at=float(end) if end and terminal else None,
        exit_code=decode_exit(job.get("exit_code")) if terminal else None,
        restarts=restarts,
        nodes=expand_hostlist(job.get("nodes")) if phase != "PENDING" else ())


def _timestamp(text: str) -> float | None:
    if not text or text in ("Unknown", "None", "N/A"):
        return None
    try:
        return _dt.datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


SACCT_FIELDS = ("JobIDRaw", "State", "ExitCode", "Start", "End", "NodeList")


def live_from_sacct(text: str) -> dict[str, LiveStatus]:
    """`sacct -n -P -o JobIDRaw,State,ExitCode,Start,End,NodeList` (or `sacct -c` with jobid first):
    the last record of each job id wins (a requeued job has one per run)."""
    out: dict[str, LiveStatus] = {}
    for line in (text or "").splitlines():
        f = line.split("|")
        if len(f) < 3 or not f[0] or not f[0].split(".")[0].isdigit() or "." in f[0]:
            continue
        f += [""] * (6 - len(f))
        word = states.base_word(f[1])
        phase = states.phase(word)
        terminal = phase in ("SUCCEEDED", "FAILED", "CANCELLED")
        out[f[0]] = LiveStatus(phase=phase, engine_state=word, reason=states.describe(word, None),
                               started_at=_timestamp(f[3]), ended_at=_timestamp(f[4]) if terminal else None,
                               exit_code=decode_sacct_exit(f[2]) if terminal else None,
                               nodes=expand_hostlist(f[5]))
    return out


LABEL = re.compile(r"^\s*(\d+): ?")


def node_lines(lines: list[str], index: int) -> list[str]:
    """Lines srun --label wrote for task (= node) `index`, without the label."""
    out = []
    for line in lines:
        m = LABEL.match(line)
        if m and int(m.group(1)) == index:
            out.append(line[m.end():])
    return out
