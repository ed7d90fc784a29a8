"""A seat's WatchGame stream ends UNAUTHENTICATED at its token's expiry, and only then: a
NATS timeout from the game's feed used to be taken for the expiry (both are TimeoutError),
so during a NATS outage seats were told to renew a token that was still good."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from boulevard.api.v1 import events_pb2
from boulevard.eventlog.store import RecordedEvent
from boulevard.platform.errors import Unauthenticated
from services.engine import server
from services.engine.server import Expiry, Feed, next_batch


class FailingFeed:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def after(self, seen: int) -> list[Any]:
        await asyncio.sleep(0)
        raise self.error


class SilentFeed:
    def __init__(self) -> None:
        self.cancelled = False

    async def after(self, seen: int) -> list[Any]:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return []


class ReadyFeed:
    async def after(self, seen: int) -> list[Any]:
        return ["e1", "e2"]


async def test_a_feed_timeout_is_not_the_tokens_expiry() -> None:
    with pytest.raises(TimeoutError):
        await next_batch(FailingFeed(TimeoutError("nats: timeout")), 0, Expiry(time.time() + 60), 1)  # type: ignore[arg-type]


async def test_the_expiry_ends_the_stream_naming_where_to_resume() -> None:
    feed = SilentFeed()
    with pytest.raises(Unauthenticated, match="watch again from version 7"):
        await next_batch(feed, 0, Expiry(time.time() + 0.05), 7)  # type: ignore[arg-type]
    await asyncio.sleep(0)
    assert feed.cancelled  # nothing left waiting on the feed


async def test_an_expired_token_gets_nothing_even_when_events_wait() -> None:
    with pytest.raises(Unauthenticated):
        await next_batch(ReadyFeed(), 0, Expiry(time.time() - 1), 3)  # type: ignore[arg-type]


async def test_spectators_and_live_tokens_get_the_batch() -> None:
    assert await next_batch(ReadyFeed(), 0, None, 1) == ["e1", "e2"]  # type: ignore[arg-type]
    assert await next_batch(ReadyFeed(), 0, Expiry(time.time() + 60), 1) == ["e1", "e2"]  # type: ignore[arg-type]


# The same contracts against a real Feed (its consumer a stand-in for `follow`, pure asyncio):
# a stream waiting on the feed wakes with what arrives, and at expiry, not before.


def recorded(version: int) -> RecordedEvent:
    envelope = events_pb2.EventEnvelope(game_id="g1", version=version, type="Moved")
    return RecordedEvent("g1", version, f"e{version}", "Moved", envelope.SerializeToString())


@asynccontextmanager
async def feeding(
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[tuple[Feed, asyncio.Queue[list[RecordedEvent]]]]:
    batches: asyncio.Queue[list[RecordedEvent]] = asyncio.Queue()

    async def follow(store: Any, game_id: str) -> AsyncIterator[list[RecordedEvent]]:
        while True:
            yield await batches.get()

    monkeypatch.setattr(server, "follow", follow)
    feed = Feed(None, "g1")  # type: ignore[arg-type]
    try:
        yield feed, batches
    finally:
        feed.task.cancel()
        await asyncio.gather(feed.task, return_exceptions=True)


async def test_a_waiting_stream_gets_what_the_feed_reads_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with feeding(monkeypatch) as (feed, batches):
        for seen, expires in ((0, None), (1, Expiry(time.time() + 60))):
            waiting = asyncio.ensure_future(next_batch(feed, seen, expires, seen + 1))
            await asyncio.sleep(0.05)
            assert not waiting.done()
            batches.put_nowait([recorded(seen + 1)])
            batch = await asyncio.wait_for(waiting, 1)
            assert [e.version for e in batch] == [seen + 1]
        # Held already: at once, spectator or seat.
        assert [e.version for e in await next_batch(feed, 0, Expiry(time.time() + 60), 1)] == [1, 2]


async def test_a_waiting_stream_ends_at_its_tokens_expiry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with feeding(monkeypatch) as (feed, batches):
        batches.put_nowait([recorded(1)])
        await asyncio.wait_for(feed.after(0), 1)
        started = time.monotonic()
        with pytest.raises(Unauthenticated, match="watch again from version 2"):
            await asyncio.wait_for(next_batch(feed, 1, Expiry(time.time() + 0.1), 2), 2)
        assert time.monotonic() - started >= 0.09  # at expiry, not before


async def test_one_expiry_serves_every_wait_of_a_stream_and_ends_the_one_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stream's one timer (issue 28: no timer per burst) lets each burst through before
    expiry and ends the wait in progress at expiry, however many waits came before."""
    async with feeding(monkeypatch) as (feed, batches):
        expiry = Expiry(time.time() + 0.3)
        for seen in range(3):
            batches.put_nowait([recorded(seen + 1)])
            batch = await asyncio.wait_for(next_batch(feed, seen, expiry, seen + 1), 1)
            assert [e.version for e in batch] == [seen + 1]
        with pytest.raises(Unauthenticated, match="watch again from version 4"):
            await asyncio.wait_for(next_batch(feed, 3, expiry, 4), 2)
        assert expiry.expired
        with pytest.raises(Unauthenticated):  # and every wait after it
            await next_batch(feed, 3, expiry, 4)


async def test_a_cancelled_stream_is_cancelled_not_expired() -> None:
    """The client going away (grpc cancels the stream's task) while it waits is passed on
    as the cancellation it is, and the expiry's timer goes with `close`."""
    feed = SilentFeed()
    expiry = Expiry(time.time() + 60)
    waiting = asyncio.ensure_future(next_batch(feed, 0, expiry, 1))  # type: ignore[arg-type]
    await asyncio.sleep(0.01)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert feed.cancelled
    expiry.close()
    assert not expiry.expired


async def test_a_cancellation_at_expiry_is_not_swallowed() -> None:
    """The token's expiry and the client's cancellation in the same moment: the stream is
    cancelled (what grpc asked), not answered UNAUTHENTICATED."""
    feed = SilentFeed()
    expiry = Expiry(time.time() + 60)
    waiting = asyncio.ensure_future(next_batch(feed, 0, expiry, 1))  # type: ignore[arg-type]
    await asyncio.sleep(0.01)
    expiry.expires_unix = time.time()  # the token's time is up now:
    expiry._fire()  # the timer's callback, as the loop runs it,
    waiting.cancel()  # and grpc's cancel before the stream runs again
    with pytest.raises(asyncio.CancelledError):
        await waiting
    expiry.close()
