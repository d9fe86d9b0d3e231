"""The S3 state backend: the state is one object, written conditionally on the ETag read.

- Read: GetObject; the version is the ETag.
- Write: PutObject with `If-Match: <etag read>` (`If-None-Match: *` when nothing was stored), so a
  writer whose read is stale gets 412 and writes nothing (backend.py then re-reads and re-applies).
- Lock: the object `<key>.lock`, created with `If-None-Match: *`, holding the lock info (ID,
  Operation, Who, Version, Created, Path) and a lease (`expires`) that a heartbeat thread renews
  with `If-Match: <its etag>`. An expired lease is taken over with `If-Match: <the stale etag>`, so
  of two takers only one wins; release and force-unlock delete with `If-Match` too.

boto3 (the `aws` extra) is imported here only, when an S3 state is used. Keep bucket versioning on:
S3 then keeps every earlier state, as the local backend keeps a backup.

Apply records in batches: `record` writes the whole state (conditionally, as any write) once every
BATCH_JOBS jobs or BATCH_S seconds, and `flush` at the end and before apply waits. A journal of one
object per job would cost one PUT per job anyway, and every read would have to LIST and GET them;
batching bounds the bytes written to O(n²/BATCH_JOBS) with one round trip per batch. What a crash
loses is at most the last batch's records, never a job: job ids are deterministic, so the next apply
finds those jobs on their engine and adopts them instead of submitting them again (apply says which
jobs it submitted when a write fails).
"""
from __future__ import annotations

import getpass
import json
import os
import socket
import threading
import time
import uuid
from typing import Any, Iterable

from jsctl import __version__
from jsctl.errors import StateError, StateLockedError
from jsctl.model.state import State
from jsctl.state.backend import (OnLock, Snapshot, StateBackend, StateConflictError, dump_state, lease_seconds,
                                 parse_state)
from jsctl.state.lock import alive, display

POLL_S = 0.5
BATCH_JOBS = 50  # apply writes the state at least every BATCH_JOBS recorded jobs ...
BATCH_S = 5.0  # ... or BATCH_S seconds
_CONFLICT = ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")


def _code(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def _missing(exc: Exception) -> bool:
    return _code(exc) in ("NoSuchKey", "404", "NotFound")


def make_client(region: str | None, endpoint_url: str | None) -> Any:
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise StateError("the S3 state backend needs boto3", hint="pip install 'jsctl[aws]'") from None
    return boto3.client("s3", region_name=region, endpoint_url=endpoint_url,
                        config=Config(retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=5,
                                      read_timeout=20))


class S3Backend(StateBackend):
    kind = "s3"

    def __init__(self, bucket: str, key: str, region: str | None = None, endpoint_url: str | None = None,
                 client: Any = None) -> None:
        super().__init__()
        self.bucket, self.key, self.region, self.endpoint_url = bucket, key, region, endpoint_url
        self.lock_key = key + ".lock"
        self._client = client
        self._pending = 0
        self._last_write = time.monotonic()

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = make_client(self.region, self.endpoint_url)
        return self._client

    @property
    def where(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    def _call(self, what: str, fn: Any, **kwargs: Any) -> Any:
        """One S3 call; errors other than the ones the caller handles become StateError."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return fn(Bucket=self.bucket, **kwargs)
        except ClientError as exc:
            if _code(exc) in _CONFLICT:
                raise StateConflictError(f"{what}: the object changed since it was read") from exc
            if _missing(exc):
                raise FileNotFoundError(kwargs.get("Key")) from exc
            raise StateError(f"S3 {what} failed: {exc}",
                             hint=f"check the bucket {self.bucket!r}, its region and your AWS credentials") from exc
        except BotoCoreError as exc:
            raise StateError(f"S3 {what} failed: {exc}",
                             hint=f"check the endpoint and network access to bucket {self.bucket!r}") from exc

    # ---- state ---------------------------------------------------------------------------------------
    def read_versioned(self) -> Snapshot:
        try:
            got = self._call(f"read of {self.where}", self.client.get_object, Key=self.key)
        except FileNotFoundError:
            return Snapshot(State(), None)
        body = got["Body"].read()
        hint = ("earlier versions are kept when bucket versioning is on (aws s3api list-object-versions); "
                "restore a good one with jsctl state push FILE")
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            text = "\x00"
        return Snapshot(parse_state(text, self.where, hint), got["ETag"])

    def write_if(self, state: State, version: str | None) -> str:
        cond = {"IfMatch": version} if version else {"IfNoneMatch": "*"}
        try:
            put = self._call(f"write of {self.where}", self.client.put_object, Key=self.key,
                             Body=dump_state(state).encode("utf-8"), ContentType="application/json", **cond)
        except (StateConflictError, FileNotFoundError):
            raise StateConflictError(f"state {self.where} changed since it was read; nothing was written",
                                     hint="run the command again") from None
        self._pending, self._last_write = 0, time.monotonic()
        return put["ETag"]

    def record(self, state: State, addresses: Iterable[str]) -> bool:
        self._pending += len(list(addresses))
        if self._pending < BATCH_JOBS and time.monotonic() - self._last_write < BATCH_S:
            return False
        self.write(state)
        return True

    # ---- lock ----------------------------------------------------------------------------------------
    def lock(self, operation: str, timeout: float = 0.0, on_wait: OnLock | None = None,
             on_takeover: OnLock | None = None) -> "S3Lock":
        return S3Lock(self, operation).acquire(timeout, on_wait, on_takeover)

    def _lock_object(self) -> tuple[dict, str] | None:
        try:
            got = self._call("read of the lock", self.client.get_object, Key=self.lock_key)
        except FileNotFoundError:
            return None
        try:
            info = json.loads(got["Body"].read())
        except ValueError:
            info = {}
        if not isinstance(info, dict):
            info = {}
        info.setdefault("ID", "?")
        info.setdefault("Path", f"s3://{self.bucket}/{self.lock_key}")
        return info, got["ETag"]

    def lock_info(self) -> dict | None:
        found = self._lock_object()
        return found[0] if found else None

    def force_unlock(self, lock_id: str) -> dict:
        found = self._lock_object()
        if found is None:
            raise StateError("the state is not locked")
        info, etag = found
        if info.get("ID") != lock_id:
            raise StateError(f"lock ID {lock_id} does not match the current lock {info.get('ID')}",
                             hint="copy the ID exactly from the lock message")
        try:
            self._call("delete of the lock", self.client.delete_object, Key=self.lock_key, IfMatch=etag)
        except (StateConflictError, FileNotFoundError):
            raise StateError("the lock changed while it was being removed (renewed or released)",
                             hint="run jsctl force-unlock again with the ID it shows now") from None
        return info


class S3Lock:
    """The lock object `<key>.lock` and its lease (see the module's docstring)."""

    def __init__(self, backend: S3Backend, operation: str) -> None:
        self.backend = backend
        self.operation = operation
        self.id = str(uuid.uuid4())
        self.lease_s = lease_seconds()
        self.path = f"s3://{backend.bucket}/{backend.lock_key}"
        self.took_over: dict | None = None
        self._etag: str | None = None
        self._created = time.time()
        self._stop = threading.Event()
        self._mutex = threading.Lock()
        self._thread: threading.Thread | None = None

    def _info(self) -> dict:
        return {"ID": self.id, "Operation": self.operation, "Who": f"{getpass.getuser()}@{socket.gethostname()}",
                "Version": __version__, "Created": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self._created)),
                "Path": self.path, "host": socket.gethostname(), "pid": os.getpid(),
                "expires": time.time() + self.lease_s}

    def info(self) -> dict:
        return display(self._info())

    def _put(self, **cond: str) -> str:
        b = self.backend
        return b._call("write of the lock", b.client.put_object, Key=b.lock_key,
                       Body=json.dumps(self._info()).encode("utf-8"), ContentType="application/json", **cond)["ETag"]

    def acquire(self, timeout: float = 0.0, on_wait: OnLock | None = None,
                on_takeover: OnLock | None = None) -> "S3Lock":
        deadline = time.time() + timeout
        told = False
        while True:
            try:
                self._etag = self._put(IfNoneMatch="*")
                break
            except (StateConflictError, FileNotFoundError):
                pass
            found = self.backend._lock_object()
            if found is None:
                continue  # released meanwhile
            info, etag = found
            if not alive(info):
                try:
                    self._etag = self._put(IfMatch=etag)  # only one taker's If-Match can win
                except (StateConflictError, FileNotFoundError):
                    continue
                self.took_over = display(info)
                if on_takeover:
                    on_takeover(self.took_over)
                break
            if time.time() >= deadline:
                raise StateLockedError("the state is locked by another operation", display(info),
                                       hint=f"Wait with --lock-timeout 5m, or, if that process is gone, wait for "
                                            f"its lease to expire or run jsctl force-unlock {info.get('ID')}")
            if on_wait and not told:
                on_wait(display(info))
                told = True
            time.sleep(POLL_S)
        self._thread = threading.Thread(target=self._heartbeat, name="jsctl-s3-lease", daemon=True)
        self._thread.start()
        return self

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.lease_s / 4):
            with self._mutex:
                if self._stop.is_set() or self._etag is None:
                    return
                try:
                    self._etag = self._put(IfMatch=self._etag)
                except (StateConflictError, FileNotFoundError):
                    self._etag = None  # force-unlocked or taken over: stop renewing
                    return
                except StateError:
                    continue  # S3 unreachable for now: try again at the next beat

    def release(self) -> None:
        self._stop.set()
        with self._mutex:
            etag, self._etag = self._etag, None
        if etag is None:
            return
        b = self.backend
        try:
            b._call("delete of the lock", b.client.delete_object, Key=b.lock_key, IfMatch=etag)
        except (StateConflictError, FileNotFoundError):
            pass  # someone else holds it now (taken over, force-unlocked)
        except StateError:
            pass  # S3 unreachable: the lease expires by itself (no heartbeat renews it any more)

    def __enter__(self) -> "S3Lock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
