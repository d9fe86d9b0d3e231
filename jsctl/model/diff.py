"""Field-level differences between two resolved job documents (for plan output and providers)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FieldChange:
    path: str  # dotted: compute.resources.gpu.count
    before: Any
    after: Any


def field_changes(before: Any, after: Any, prefix: str = "") -> list[FieldChange]:
    """Leaf-level changes, lists compared whole (a changed command is one change)."""
    if isinstance(before, dict) and isinstance(after, dict):
        if before == after:  # (values from two loadings are never the same NaN object: == is exact here)
            return []
        out: list[FieldChange] = []
        for key in list(before) + [k for k in after if k not in before]:
            path = f"{prefix}.{key}" if prefix else str(key)
            if key not in after:
                out.append(FieldChange(path, before[key], None))
            elif key not in before:
                out.append(FieldChange(path, None, after[key]))
            else:
                out.extend(field_changes(before[key], after[key], path))
        return out
    if before != after:
        return [FieldChange(prefix, before, after)]
    return []
