"""A seat's WatchGame stream ends UNAUTHENTICATED at its token's expiry, and only then: a
NATS timeout from the game's feed used to be taken for the expiry (both are TimeoutError),
so during a NATS outage seats were told to renew a token that was still good."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from boulevard.platform.errors import Unauthenticated
from services.engine.server import next_batch


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
        await next_batch(FailingFeed(TimeoutError("nats: timeout")), 0, time.time() + 60, 1)  # type: ignore[arg-type]


async def test_the_expiry_ends_the_stream_naming_where_to_resume() -> None:
    feed = SilentFeed()
    with pytest.raises(Unauthenticated, match="watch again from version 7"):
        await next_batch(feed, 0, time.time() + 0.05, 7)  # type: ignore[arg-type]
    await asyncio.sleep(0)
    assert feed.cancelled  # nothing left waiting on the feed


async def test_an_expired_token_gets_nothing_even_when_events_wait() -> None:
    with pytest.raises(Unauthenticated):
        await next_batch(ReadyFeed(), 0, time.time() - 1, 3)  # type: ignore[arg-type]


async def test_spectators_and_live_tokens_get_the_batch() -> None:
    assert await next_batch(ReadyFeed(), 0, None, 1) == ["e1", "e2"]  # type: ignore[arg-type]
    assert await next_batch(ReadyFeed(), 0, time.time() + 60, 1) == ["e1", "e2"]  # type: ignore[arg-type]
