"""A job's pod logs through the apiserver (which reads them from each node's kubelet): one pod or all,
in completion-index order, whole or followed."""
from __future__ import annotations

import queue
import threading
from typing import Any, Iterator, Mapping

from jsctl.errors import ProviderError
from jsctl.model.status import JobHandle
from jsctl.providers.kubernetes import livestatus
from jsctl.providers.kubernetes.kubeapi import ApiError, KubeApi


def job_logs(api: KubeApi, handle: JobHandle, pods: list[dict], node: str | None, follow: bool,
             tail: int | None) -> Iterator[str]:
    """The lines of the pods `node` picks (all when None), prefixed `<index>: ` when there are several."""
    pods = pick(handle, pods, node)
    if not pods:
        raise ProviderError(f"{handle} has no pods now (not started yet, or deleted after it ended)")
    label = len(pods) > 1
    if follow:
        yield from follow_logs(pods, api, tail, label)
        return
    for p in pods:
        lines = list(pod_log(api, p, False, tail))
        prefix = f"{livestatus.pod_index(p)[1]}: " if label else ""
        yield from (prefix + line for line in lines)


def pick(handle: JobHandle, pods: list[dict], node: str | None) -> list[dict]:
    """The pods `node` names: a completion index (`J.I` for JobSet job J), a pod name or a node name."""
    if node is None:
        return pods
    by_index = {}
    for p in pods:
        job_index, index, _ = livestatus.pod_index(p)
        by_index.setdefault(str(index) if job_index == 0 else f"{job_index}.{index}", p)
    if node in by_index:
        return [by_index[node]]
    hits = [p for p in pods if p["metadata"]["name"] == node or (p.get("spec") or {}).get("nodeName") == node]
    if hits:
        return hits[-1:]
    raise ProviderError(f"{handle} has no node {node!r}" + (f" (pods: {', '.join(p['metadata']['name'] for p in pods)})"
                                                          if pods else " (it has no pods now)"),
                        hint="give a completion index (0 = the first node), a pod name or a node name")


def pod_log(api: KubeApi, pod: Mapping[str, Any], follow: bool, tail: int | None) -> Iterator[str]:
    name = pod["metadata"]["name"]
    ns = pod["metadata"]["namespace"]
    node = (pod.get("spec") or {}).get("nodeName")
    query = {"follow": follow or None, "tailLines": tail}
    try:
        yield from api.lines(f"/api/v1/namespaces/{ns}/pods/{name}/log", query, f"reading the log of pod {name}",
                             timeout=None if follow else 60)
    except ApiError as exc:
        if exc.status == 400 and "waiting to start" in str(exc):
            raise ProviderError(f"pod {name} has not started: no log yet") from None
        if exc.status in (500, 502, 503) or "dial tcp" in str(exc) or "connection refused" in str(exc):
            raise ProviderError(f"node {node or '?'} serves no logs for pod {name}: {exc}",
                                hint="the apiserver reads logs from the node's kubelet; fake nodes (kwok) "
                                     "run no containers and, without kwok's server, have no logs") from None
        raise

def follow_logs(pods: list[dict], api: KubeApi, tail: int | None, label: bool) -> Iterator[str]:
    """Every pod's log as it grows, merged line by line, until each stream ends."""
    lines: queue.Queue = queue.Queue()
    errors: list[BaseException] = []

    def pump(pod: dict) -> None:
        prefix = f"{livestatus.pod_index(pod)[1]}: " if label else ""
        try:
            for line in pod_log(api, pod, True, tail):
                lines.put(prefix + line)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            lines.put(None)

    for p in pods:
        threading.Thread(target=pump, args=(p,), daemon=True).start()
    running = len(pods)
    while running:
        line = lines.get()
        if line is None:
            running -= 1
            continue
        yield line
    if errors and isinstance(errors[0], ProviderError):
        raise errors[0]
