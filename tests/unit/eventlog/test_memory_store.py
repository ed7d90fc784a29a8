import pytest

from boulevard.eventlog.store import EventStore, InMemoryEventStore
from tests.support.eventstore_contract import EventStoreContract


class TestInMemoryEventStore(EventStoreContract):
    @pytest.fixture
    def store(self) -> EventStore:
        return InMemoryEventStore()
