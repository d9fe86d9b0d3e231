"""Parse the units jetstream.v1 uses: Kubernetes quantities, durations, save frequencies, model sizes."""
from __future__ import annotations

import re

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}
_DECIMAL = {"k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "": 1}


def parse_bytes(text: str | int) -> int:
    """`256Gi` → bytes; plain numbers are bytes (as in Kubernetes)."""
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|k|K|M|G|T|P)?", text.strip())
    if not m:
        raise ValueError(f"not a quantity: {text!r}")
    unit = m.group(2) or ""
    return int(float(m.group(1)) * (_BINARY.get(unit) or _DECIMAL[unit]))


def format_bytes(n: int) -> str:
    for unit in ("Ti", "Gi", "Mi", "Ki"):
        if n >= _BINARY[unit] and n % _BINARY[unit] == 0:
            return f"{n // _BINARY[unit]}{unit}"
    return str(n)


def parse_duration(text: str) -> int:
    """`48h`, `90m`, `1d12h`, `30s` → seconds."""
    m = re.fullmatch(r"(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?", text.strip())
    if not m or not any(m.groups()):
        raise ValueError(f"not a duration: {text!r}")
    d, h, mi, s = (int(g or 0) for g in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + s


def format_duration(seconds: int) -> str:
    d, rest = divmod(int(seconds), 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    parts = [f"{v}{u}" for v, u in ((d, "d"), (h, "h"), (m, "m"), (s, "s")) if v]
    return "".join(parts) or "0s"


def parse_frequency(text: str) -> tuple[str, int]:
    """`1000steps` → ("steps", 1000); `30m` → ("seconds", 1800)."""
    m = re.fullmatch(r"([0-9]+)(steps|s|m|h)", text.strip())
    if not m:
        raise ValueError(f"not a save frequency: {text!r}")
    n, unit = int(m.group(1)), m.group(2)
    if unit == "steps":
        return "steps", n
    return "seconds", n * {"s": 1, "m": 60, "h": 3600}[unit]


def parse_parameters(text: str | int | float) -> float:
    """`7B` → 7e9 parameters; `1.3e9` (a number, or YAML's string for it) → 1.3e9."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    if re.fullmatch(r"[0-9]+(?:\.[0-9]+)?[eE][+-]?[0-9]+", text.strip()):
        return float(text)
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([KMBT])", text.strip())
    if not m:
        raise ValueError(f"not a parameter count: {text!r}")
    return float(m.group(1)) * {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[m.group(2)]
