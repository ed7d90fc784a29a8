"""A stand-in for the engine's `follow` (its consumer of a game's log on JetStream), pure
asyncio, for tests that feed a WatchGame stream a log they hold."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from boulevard.eventlog.store import RecordedEvent

Follow = Callable[[Any, str], AsyncIterator[list[RecordedEvent]]]


def one_at_a_time(log: Sequence[RecordedEvent]) -> Follow:
    """`follow` feeding `log` one event a batch, letting the stream run between two, then
    staying open as a consumer does (set it as `services.engine.server.follow`)."""

    async def follow(store: Any, stream_id: str) -> AsyncIterator[list[RecordedEvent]]:
        for recorded in log:
            yield [recorded]
            await asyncio.sleep(0)
        await asyncio.Event().wait()  # a consumer stays open

    return follow
