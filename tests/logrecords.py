"""The runtime's JSON records (`{"jetstream": ...}`) in a job's log as `jsctl logs --metrics` prints it; a
prefix before a record (srun's node label) is ignored, and so are lines that are not records."""
from __future__ import annotations

import json


def parse(text: str) -> list[dict]:
    recs = []
    for line in text.splitlines():
        start = line.find('{"jetstream"')
        if start >= 0:
            try:
                recs.append(json.loads(line[start:]))
            except ValueError:
                pass
    return recs
