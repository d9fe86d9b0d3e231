"""Helpers of the Azure ML tests (a module name of its own: `conftest` is ambiguous between test
directories once several are collected)."""
from __future__ import annotations

import os

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples")


def job_file(ws, name: str, command: str = "['python', '-c', 'print(1)']", extra: str = "",
             labels: str = "") -> str:
    """A one-GPU job on the fake's a100-single compute."""
    path = ws / f"{name}.yaml"
    path.write_text(f"""version: jetstream.v1
job:
  name: {name}
{labels}compute:
  resources:
    gpu: {{type: a100-80gb, count: 1}}
  time_limit: 10m
environment:
  image: python:3.11-slim
{extra}lifecycle:
  command: {command}
""", encoding="utf-8")
    return str(path)
