"""One contract every EventStore passes (the in-memory one and the JetStream one)."""

from __future__ import annotations

import asyncio

import pytest

from boulevard.eventlog.errors import ConcurrencyConflict, InvalidStreamId
from boulevard.eventlog.store import EventStore, NewEvent


def ev(n: int | str, prefix: str = "e") -> NewEvent:
    return NewEvent(event_id=f"{prefix}-{n}", type="Thing", data=f"payload {n}".encode())


class EventStoreContract:
    @pytest.fixture
    def store(self) -> EventStore:
        raise NotImplementedError

    async def test_appends_and_reads_in_order(self, store: EventStore) -> None:
        assert await store.append("g1", [ev(1), ev(2)], 0) == 2
        assert await store.append("g1", [ev(3)], 2) == 3
        got = await store.read("g1")
        assert [e.event_id for e in got] == ["e-1", "e-2", "e-3"]
        assert [e.version for e in got] == [1, 2, 3]
        assert [e.data for e in got] == [b"payload 1", b"payload 2", b"payload 3"]
        assert all(e.type == "Thing" for e in got)

    async def test_streams_are_independent(self, store: EventStore) -> None:
        await store.append("a", [ev(1, "a")], 0)
        await store.append("b", [ev(1, "b"), ev(2, "b")], 0)
        assert [e.event_id for e in await store.read("a")] == ["a-1"]
        assert await store.version("b") == 2
        assert await store.version("nothing-here") == 0
        assert await store.read("nothing-here") == []

    async def test_stale_writer_conflicts_and_writes_nothing(self, store: EventStore) -> None:
        await store.append("g", [ev(1), ev(2)], 0)
        with pytest.raises(ConcurrencyConflict) as info:
            await store.append("g", [ev("x1"), ev("x2")], 1)
        assert info.value.actual == 2
        with pytest.raises(ConcurrencyConflict):
            await store.append("g", [ev("y")], 0)
        assert [e.event_id for e in await store.read("g")] == ["e-1", "e-2"]

    async def test_retried_append_is_not_stored_twice(self, store: EventStore) -> None:
        await store.append("g", [ev(1)], 0)
        batch = [ev(2), ev(3)]
        assert await store.append("g", batch, 1) == 3
        assert await store.append("g", batch, 1) == 3  # the retry
        assert await store.append("g", [ev(1)], 0) == 1  # a retry of the very first append
        assert [e.event_id for e in await store.read("g")] == ["e-1", "e-2", "e-3"]

    async def test_reads_from_a_version(self, store: EventStore) -> None:
        await store.append("g", [ev(i) for i in range(1, 6)], 0)
        assert [e.version for e in await store.read("g", 4)] == [4, 5]
        assert await store.read("g", 6) == []

    async def test_concurrent_writers_one_wins(self, store: EventStore) -> None:
        await store.append("g", [ev(0)], 0)
        results = await asyncio.gather(
            *(store.append("g", [ev(f"w{i}")], 1) for i in range(5)), return_exceptions=True
        )
        wins = [r for r in results if r == 2]
        assert len(wins) == 1
        assert all(isinstance(r, ConcurrencyConflict) for r in results if r != 2)
        assert await store.version("g") == 2

    async def test_rejects_bad_stream_ids(self, store: EventStore) -> None:
        for bad in ["", "a.b", "a b", "*", ">", "x" * 200]:
            with pytest.raises(InvalidStreamId):
                await store.append(bad, [ev(1)], 0)

    async def test_ten_thousand_events(self, store: EventStore) -> None:
        version = 0
        for start in range(0, 10_000, 100):
            version = await store.append("big", [ev(i) for i in range(start, start + 100)], version)
        got = await store.read("big")
        assert len(got) == 10_000
        assert [e.version for e in got] == list(range(1, 10_001))
        assert got[-1].event_id == "e-9999"
