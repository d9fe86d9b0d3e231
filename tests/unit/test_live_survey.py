"""Issue 10: refresh and probe ask every cluster at once, give up on one that does not answer
within the timeout, and warn once per cluster however many of its queries failed."""
from __future__ import annotations

import threading

import pytest

from jsctl.api import live
from jsctl.config import workspace
from jsctl.errors import ProviderError, UsageError
from jsctl.model.cluster import Facts
from jsctl.model.state import State
from jsctl.model.status import JobHandle, LiveStatus
from jsctl.providers import registry

INVENTORY = """version: jetstream.v1
clusters:
  - {name: a, provider: local}
  - {name: b, provider: local}
  - {name: silent, provider: local}
"""
never = threading.Event()  # what the silent cluster waits for


class FakeClient:
    both_asked = threading.Barrier(2, timeout=20)  # a and b's probes meet here: only if asked at once

    def __init__(self, name: str) -> None:
        self.name = name

    def probe(self) -> Facts:
        if self.name == "silent":
            never.wait(60)
        elif self.name in ("a", "b"):
            self.both_asked.wait()
        return Facts(self.name)

    def refresh(self, handles):
        if self.name == "silent":
            never.wait(60)
        if self.name == "b":
            raise ProviderError("squeue failed: boom")
        return {h: LiveStatus("RUNNING", "R") for h in handles}


@pytest.fixture
def ws(tmp_path, monkeypatch):
    (tmp_path / "jsctl.yaml").write_text(INVENTORY)
    monkeypatch.setattr(registry.Clients, "get", lambda self, name: FakeClient(name))
    FakeClient.both_asked.reset()
    never.clear()
    yield workspace.load(str(tmp_path / "jsctl.yaml"))
    never.set()  # let the threads left behind finish


def _state() -> State:
    state = State()
    for name in ("a", "b", "silent"):
        state.put(f"job.{name}", {"address": f"job.{name}", "name": name, "generation": 1, "provider": "local",
                                  "cluster": name, "handle": str(JobHandle("local", name, "1"))})
    return state


def test_survey_asks_at_once_and_warns_once_per_cluster(ws):
    said: list[str] = []
    live_, facts = live.survey(ws, _state(), said.append, timeout_s=1.0)
    assert set(facts) == {"a", "b"}  # a and b met at the barrier: probed concurrently
    assert set(live_) == {"job.a"}
    assert len(said) == 2, said
    silent = next(s for s in said if " silent: " in s)
    assert silent == "Warning: could not refresh or probe silent: no answer within 1s " \
                     "(JSCTL_PROBE_TIMEOUT=SECONDS waits longer)"
    assert next(s for s in said if " b: " in s) == "Warning: could not refresh b: squeue failed: boom"


def test_probe_and_refresh_alone(ws):
    said: list[str] = []
    assert set(live.probe(ws, said.append, timeout_s=1.0)) == {"a", "b"}
    assert said == ["Warning: could not probe silent: no answer within 1s (JSCTL_PROBE_TIMEOUT=SECONDS waits longer)"]


def test_timeout_setting(monkeypatch):
    monkeypatch.delenv(live.TIMEOUT_ENV, raising=False)
    assert live.probe_timeout() == live.DEFAULT_TIMEOUT_S
    monkeypatch.setenv(live.TIMEOUT_ENV, "2.5")
    assert live.probe_timeout() == 2.5 and live.probe_timeout(7) == 7.0  # the option wins
    monkeypatch.setenv(live.TIMEOUT_ENV, "soon")
    with pytest.raises(UsageError, match="JSCTL_PROBE_TIMEOUT must be a number of seconds"):
        live.probe_timeout()
    with pytest.raises(UsageError):
        live.probe_timeout(0)
