"""What a provider renders for a job (a typed request and the files it sends), and its verdict on a change."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, TypeVar

from jsctl.model.diff import field_changes
from jsctl.model.word import Word

R = TypeVar("R", bound="Request")


def _frozen(value: Any) -> Any:
    """JSON value → the frozen form a Request holds: lists become tuples (mappings stay mappings)."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, Mapping):
        return {k: _frozen(v) for k, v in value.items()}
    return value


def _plain(value: Any) -> Any:
    """The JSON form of a Request value: tuples become lists."""
    if value is None or isinstance(value, (str, int, float)):  # most values (before the slower Mapping check)
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (dict, Mapping)):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Request:
    """Base of every provider's typed request: exactly what its client executes, field for field.

    A subclass is a frozen dataclass whose fields hold JSON values, tuples of them, or str-keyed
    mappings. It is rendered once, saved in the plan file (`to_dict`), read back (`from_dict`) and
    executed by the client as planned. `IN_PLACE` names the fields a change of which does not force a
    new job (bookkeeping the engine does not see); every other changed field forces replacement.
    """

    IN_PLACE: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any]) -> R:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: _frozen(v) for k, v in data.items() if k in names})


@dataclass(frozen=True)
class RenderedArtifact:
    """The exact thing apply sends: a typed request, the files it carries (a script, a manifest),
    and the apply-time inputs it declares (secret names whose values are read at apply, upstream
    addresses whose handles apply passes to submit)."""

    kind: str  # "local-run", "sbatch-script", ...
    job_id: str
    files: tuple[tuple[str, str], ...]  # (name, content)
    request: Request
    summary: str  # "sbatch script, 58 lines"
    notes: tuple[str, ...] = ()  # what the plan should say (mount mappings, no container runtime ...)
    secrets: tuple[str, ...] = ()  # names; values reach submit from the environment, never an artifact
    upstream: tuple[str, ...] = ()  # addresses this job waits for; submit gets their handles

    @functools.cached_property
    def digest(self) -> str:  # computed once: the plan, apply and the diff all ask for it
        body = json.dumps({"kind": self.kind, "files": self.files, "request": self.request.to_dict()},
                          sort_keys=True, default=str)
        return hashlib.sha256(body.encode()).hexdigest()

    def to_record(self) -> dict:
        """What state keeps of it: everything but the files' text, which the plan file and the engine
        hold (a batch script is most of a record); each file is named with its content's digest, so
        that a plan can still say which file changed."""
        return {**self.to_dict(), "files": [[name, content_digest(text)] for name, text in self.files]}

    def to_dict(self) -> dict:
        return {"kind": self.kind, "job_id": self.job_id, "files": [list(f) for f in self.files],
                "request": self.request.to_dict(), "summary": self.summary, "notes": list(self.notes),
                "secrets": list(self.secrets), "upstream": list(self.upstream)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], request_type: type[Request]) -> "RenderedArtifact":
        return cls(d["kind"], d["job_id"], tuple((a, b) for a, b in d["files"]), request_type.from_dict(d["request"]),
                   d["summary"], tuple(d.get("notes", ())), tuple(d.get("secrets", ())), tuple(d.get("upstream", ())))


def content_digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def recorded_file_digests(prior: Mapping[str, Any] | None) -> dict[str, str]:
    """name → content digest of the files a recorded artifact names (its text where an older jsctl kept it)."""
    out: dict[str, str] = {}
    for entry in (prior or {}).get("files") or ():
        if isinstance(entry, (list, tuple)) and len(entry) == 2:
            name, value = entry
            out[str(name)] = value if str(value).startswith("sha256:") and len(value) == 71 else \
                content_digest(str(value))
    return out


class Action(Word):
    """What apply does at an address (Terraform's words). A str: compares equal to its value."""

    CREATE = "create"
    UPDATE = "update"
    REPLACE = "replace"
    DELETE = "delete"
    NO_OP = "no-op"


@dataclass(frozen=True)
class Change:
    """The provider's verdict on a changed artifact: update in place, or replace, with the request
    field paths that force replacement (`request.partition`) and the reasons to print."""

    action: Action  # no-op, update or replace
    reasons: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()  # request fields whose change forces replacement

    def __post_init__(self) -> None:
        object.__setattr__(self, "action", Action(self.action))


def request_change(prior: Mapping[str, Any] | None, request: Request) -> Change:
    """Compare a recorded request (its dict) with a new one: which fields changed, which force a new job."""
    if prior is None:
        return Change("replace", ("no recorded request (state from an older jsctl)",))
    changes = field_changes(dict(prior), request.to_dict())
    if not changes:
        return Change("no-op")
    forcing = tuple(c.path for c in changes if c.path.split(".")[0] not in request.IN_PLACE)
    if not forcing:
        return Change("update", tuple(f"request.{c.path} changes in place" for c in changes))
    return Change("replace", tuple(f"request.{p} forces replacement" for p in forcing),
                  tuple(f"request.{p}" for p in forcing))
