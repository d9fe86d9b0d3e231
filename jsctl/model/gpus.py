"""GPU models, families and aliases: the names a job's `gpu.type` may use.

A name resolves to one model (`a100-80gb`, `A100-SXM4-80GB`, `nvidia-a100-80gb`) or to every model
of a family (`a100` means either A100). Matching is case-insensitive; spaces and underscores count
as dashes. Lookups are cached: placement asks the same questions thousands of times.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class GpuModel:
    name: str
    family: str
    vendor: str
    memory_gib: float
    bf16_tflops: float | None  # dense; None = no bf16 tensor support (V100)
    fp16_tflops: float | None
    nvlink: bool
    aliases: tuple[str, ...]
    link: str | None = None  # nvlink, infinity-fabric, hccs; None = PCIe only

    @property
    def label(self) -> str:
        """Short display form: `A100-80GB`."""
        return self.name.upper()


def normalize(name: str) -> str:
    return re.sub(r"[\s_]+", "-", str(name).strip().lower())


@functools.lru_cache(maxsize=None)
def models() -> tuple[GpuModel, ...]:
    raw = json.loads(resources.files("jsctl").joinpath("data", "gpus.json").read_text("utf-8"))
    return tuple(GpuModel(g["name"], g["family"], g["vendor"], g["memory_gib"], g["bf16_tflops"],
                          g["fp16_tflops"], g["nvlink"], tuple(g["aliases"]), g.get("link")) for g in raw["gpus"])


@functools.lru_cache(maxsize=None)
def _index() -> dict[str, tuple[GpuModel, ...]]:
    index: dict[str, list[GpuModel]] = {}
    for m in models():
        for key in (m.name, *m.aliases):
            index.setdefault(normalize(key), []).append(m)
    for m in models():  # a family name adds every member (unless it is already a model's own alias)
        index.setdefault(normalize(m.family), [])
        if m not in index[normalize(m.family)]:
            index[normalize(m.family)].append(m)
    return {k: tuple(dict.fromkeys(v)) for k, v in index.items()}


@functools.lru_cache(maxsize=4096)
def resolve(name: str) -> tuple[GpuModel, ...]:
    """The models a requested type stands for: one for a model or alias, several for a family."""
    return _index().get(normalize(name), ())


def model(name: str) -> GpuModel | None:
    """The one model a name stands for, or None (unknown, or a family of several)."""
    found = resolve(name)
    return found[0] if len(found) == 1 else None


def canonical(name: str) -> str:
    """The catalog name for an alias (`A100-SXM4-80GB` → `a100-80gb`); families and unknown names unchanged."""
    m = model(name)
    return m.name if m else normalize(name)


def is_family(name: str) -> bool:
    return len(resolve(name)) > 1 or any(normalize(name) == normalize(m.family) for m in models())


def known_names() -> list[str]:
    return sorted({m.name for m in models()} | {m.family for m in models()})


@functools.lru_cache(maxsize=4096)
def matches(requested: str, offered: str) -> bool:
    """Does an offered GPU (a model name or alias) satisfy a requested type or family?"""
    want = {m.name for m in resolve(requested)}
    have = {m.name for m in resolve(offered)}
    if want and have:
        return have <= want  # a family offered (`a100` nodes of either size) satisfies only a family request
    return normalize(requested) == normalize(offered)
