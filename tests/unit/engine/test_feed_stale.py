"""A game's feed that falls behind what this engine itself appended reads the log anew.

In the network-fault runs, tables stopped with a seat to act: the bot of that seat was
watching, and its stream never brought its turn. Whatever the consumer's fault, a feed
that stays behind the engine's own appends must not hold every stream of the game for
good. The consumer here is a stand-in for `follow` (pure asyncio, no NATS): the first one
delivers two events and then nothing, as a stranded consumer does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from boulevard.api.v1 import events_pb2
from boulevard.eventlog.store import RecordedEvent
from services.engine import server


def recorded(version: int) -> RecordedEvent:
    envelope = events_pb2.EventEnvelope(game_id="g1", version=version, type="Moved")
    return RecordedEvent("g1", version, f"e{version}", "Moved", envelope.SerializeToString())


class Consumers:
    """`follow` as the feed calls it: the first consumer is stranded after two events, each
    later one delivers the whole log."""

    def __init__(self, log_length: int) -> None:
        self.log_length = log_length
        self.made = 0

    async def follow(self, store: Any, game_id: str) -> AsyncIterator[list[RecordedEvent]]:
        self.made += 1
        if self.made == 1:
            yield [recorded(1), recorded(2)]
            await asyncio.Event().wait()  # stranded: nothing more, no error
        yield [recorded(v) for v in range(1, self.log_length + 1)]
        await asyncio.Event().wait()


@asynccontextmanager
async def feeding(known: Callable[[], int]) -> AsyncIterator[server.Feed]:
    feed = server.Feed(None, "g1", known=known)  # type: ignore[arg-type]
    try:
        yield feed
    finally:
        feed.task.cancel()
        await asyncio.gather(feed.task, return_exceptions=True)


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server.Feed, "STALE_SECONDS", 0.2)
    monkeypatch.setattr(server.Feed, "CHECK_SECONDS", 0.02)


def test_a_feed_behind_the_engines_appends_reads_the_log_anew(
    quick: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    consumers = Consumers(log_length=3)
    monkeypatch.setattr(server, "follow", consumers.follow)

    async def run() -> None:
        async with feeding(lambda: 3) as feed:
            first = await asyncio.wait_for(feed.after(0), 1)
            assert [e.version for e in first] == [1, 2]
            rest = await asyncio.wait_for(feed.after(2), 2)
            assert [e.version for e in rest] == [3]  # once: the re-read's 1 and 2 are held
            assert [e.version for e in feed.events] == [1, 2, 3]
            assert (feed.restarts, consumers.made) == (1, 2)

    asyncio.run(run())


def test_a_feed_level_with_the_engine_keeps_its_consumer(
    quick: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    consumers = Consumers(log_length=2)
    monkeypatch.setattr(server, "follow", consumers.follow)

    async def run() -> None:
        # Another replica's appends (known 0 here: this one holds no copy) or a feed that
        # holds all this one appended: a quiet game is not a stale feed.
        for known in (0, 2):
            consumers.made = 0
            async with feeding(lambda k=known: k) as feed:  # type: ignore[misc]
                await asyncio.wait_for(feed.after(0), 1)
                await asyncio.sleep(0.5)
                assert (feed.restarts, consumers.made) == (0, 1)

    asyncio.run(run())


def test_a_consumer_that_fails_still_fails_the_streams(
    quick: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def failing(store: Any, game_id: str) -> AsyncIterator[list[RecordedEvent]]:
        yield [recorded(1)]
        raise TimeoutError("nats: timeout")

    monkeypatch.setattr(server, "follow", failing)

    async def run() -> None:
        async with feeding(lambda: 5) as feed:
            await asyncio.wait_for(feed.after(0), 1)
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(feed.after(1), 1)

    asyncio.run(run())
