"""A Batch job's logs from Cloud Logging (google-cloud-logging, HTTP transport): the entries whose
`labels.job_uid` is the job's uid, oldest first; `node` (a task index) keeps one task's entries (their
`labels.task_id` is `task/<uid>-group0-<index>/<retry>/0`). With the cluster's endpoint_url, the
entries:list request goes there."""
from __future__ import annotations

import time
from typing import Any, Iterator

from jsctl.errors import ProviderError
from jsctl.providers.gcp_batch import livestatus

POLL_S = 2.0


def _client(owner: Any) -> Any:
    from google.cloud import logging as cloud_logging

    options = {"api_endpoint": owner.endpoint} if owner.endpoint else None
    return cloud_logging.Client(project=owner.settings.project, credentials=owner.credentials(), _use_grpc=False,
                                client_options=options)


def _text(entry: Any) -> str:
    payload = entry.payload
    if isinstance(payload, dict):
        payload = payload.get("message") or payload
    return str(payload).rstrip("\n")


def _entries(owner: Any, uid: str, node: str | None) -> list[tuple[str, str]]:
    """(insertId, line) of every entry of the job so far, oldest first."""
    from google.api_core.exceptions import GoogleAPIError

    client = _client(owner)
    filter_ = f'labels.job_uid="{uid}"'
    try:
        entries = list(client.list_entries(resource_names=[f"projects/{owner.settings.project}"], filter_=filter_,
                                           order_by="timestamp asc", page_size=1000))
    except GoogleAPIError as exc:
        raise livestatus.provider_error(exc, f"reading the logs of job uid {uid}") from None
    out = []
    for e in entries:
        task = (e.labels or {}).get("task_id", "")
        if node is not None and f"-group0-{node}/" not in task:
            continue
        out.append((e.insert_id or "", _text(e)))
    return out


def job_logs(owner: Any, job: Any, node: str | None, follow: bool, tail: int | None) -> Iterator[str]:
    if node is not None and not str(node).isdigit():
        raise ProviderError(f"node {node!r}: a gcp-batch node is a task index (0, 1, ...)")
    seen: set[str] = set()
    lines = _entries(owner, job.uid, node)
    if tail is not None:
        lines = lines[-tail:] if tail else []
    for key, line in lines:
        seen.add(key)
        yield line + "\n"
    while follow:
        now = owner._get(job.name)
        live = livestatus.live_status(now) if now is not None else None
        for key, line in _entries(owner, job.uid, node):
            if key not in seen:
                seen.add(key)
                yield line + "\n"
        if live is None or live.terminal:
            return
        time.sleep(POLL_S)
