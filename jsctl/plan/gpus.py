"""GPU models, families and aliases: the names a job's `gpu.type` may use."""
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
    bf16_tflops: float | None
    fp16_tflops: float | None
    nvlink: bool
    aliases: tuple[str, ...]


def normalize(name: str) -> str:
    return re.sub(r"[\s_]+", "-", name.strip().lower())


@functools.lru_cache(maxsize=None)
def models() -> tuple[GpuModel, ...]:
    raw = json.loads(resources.files("jsctl").joinpath("data", "gpus.json").read_text("utf-8"))
    return tuple(GpuModel(g["name"], g["family"], g["vendor"], g["memory_gib"], g["bf16_tflops"],
                          g["fp16_tflops"], g["nvlink"], tuple(g["aliases"])) for g in raw["gpus"])


@functools.lru_cache(maxsize=None)
def _index() -> dict[str, tuple[GpuModel, ...]]:
    index: dict[str, list[GpuModel]] = {}
    for m in models():
        for key in (m.name, *m.aliases):
            index.setdefault(normalize(key), []).append(m)
        index.setdefault(normalize(m.family), []).append(m)
    return {k: tuple(dict.fromkeys(v)) for k, v in index.items()}


def resolve(name: str) -> tuple[GpuModel, ...]:
    """The models a requested type stands for: one for a model or alias, several for a family."""
    return _index().get(normalize(name), ())


def known_names() -> list[str]:
    return sorted({m.name for m in models()} | {m.family for m in models()})


def matches(requested: str, offered: str) -> bool:
    """Does an offered GPU (a model name or alias) satisfy a requested type or family?"""
    want = {m.name for m in resolve(requested)}
    have = {m.name for m in resolve(offered)}
    return bool(want & have) if want and have else normalize(requested) == normalize(offered)
