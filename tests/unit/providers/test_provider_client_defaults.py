"""What ProviderClient gives a provider that does not override it."""
from __future__ import annotations

from jsctl.model.cluster import Cluster
from jsctl.model.status import EngineEvent, JobHandle
from jsctl.providers.base import ProviderClient


class Minimal(ProviderClient):
    provider = "minimal"

    def submit(self, artifact, env, upstream):
        raise NotImplementedError

    def refresh(self, handles):
        return {}

    def logs(self, handle, node=None, follow=False, tail=None):
        return iter(())

    def cancel(self, handle):
        pass


def test_events_default_to_none():
    client = Minimal(Cluster("c", "minimal"), "/nonexistent")
    assert client.events(JobHandle("minimal", "c", "1")) == []


def test_an_engine_event_is_plain_data():
    e = EngineEvent(1.5, "Scheduled", "Successfully assigned ns/p to n", "Pod/p", "Normal")
    assert e.count == 1
    assert e.to_dict() == {"time": 1.5, "type": "Normal", "reason": "Scheduled", "object": "Pod/p",
                           "message": "Successfully assigned ns/p to n", "count": 1}
