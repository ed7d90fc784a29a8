"""A game's feed takes this replica's own appends as soon as the store confirms them (issue
28: the engine read back from NATS, and decoded, every envelope it had just written), and
its consumer still brings every other replica's appends; what it delivers that the feed
holds already is dropped by version, so no event is held or sent twice. The consumer here
is a stand-in for `follow` (pure asyncio) that delivers only when told to."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from boulevard.api.v1 import engine_pb2
from boulevard.eventlog.store import InMemoryEventStore, RecordedEvent
from boulevard.platform.auth import verify_token
from services.engine import server
from services.engine.server import EngineServicer
from tests.unit.engine.test_create_game_clock import Index
from tests.unit.engine.test_engine_core import KEY, make_engine, seats, submit
from tests.unit.engine.test_watch_settled import Context


async def move(engine: Any, game_id: str, tokens: tuple[str, ...], rng: random.Random) -> None:
    """One legal move of whichever seat may act (the engine rolls what it owes after)."""
    session = await engine.load(game_id)
    for seat, token in enumerate(tokens):
        legal = session.game.legal_commands(session.state, seat)
        if legal:
            command = legal[rng.randrange(len(legal))]
            await submit(engine, game_id, verify_token(KEY, token), command, 0, uuid.uuid4().hex)
            return
    raise AssertionError("nobody may act")


async def test_own_appends_reach_the_streams_without_the_consumer_and_only_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    delivered: asyncio.Queue[list[RecordedEvent]] = asyncio.Queue()

    async def follow(store: Any, game_id: str) -> AsyncIterator[list[RecordedEvent]]:
        while True:
            yield await delivered.get()

    monkeypatch.setattr(server, "follow", follow)
    store = InMemoryEventStore()
    engine = make_engine(store)
    created = await engine.create_game("req-own-appends", "las_vegas", seats(2))
    game_id = created.game_id
    servicer = EngineServicer(engine, store, Index(), None)  # type: ignore[arg-type]
    # What the log held before anyone watched comes through the consumer.
    delivered.put_nowait(await store.read(game_id, 1))
    request = engine_pb2.WatchGameRequest(game_id=game_id, bursts=True)
    stream = servicer.WatchGame(request, Context())  # type: ignore[arg-type]
    updates: list[engine_pb2.WatchGameResponse] = []

    async def until(version: int) -> None:
        while not updates or updates[-1].events[-1].version < version:
            updates.append(await asyncio.wait_for(anext(stream), 2))  # type: ignore[arg-type]

    try:
        await until((await engine.load(game_id)).version)
        feed = servicer._feeds[game_id]
        rng = random.Random(5)
        for _ in range(6):  # the consumer delivers nothing of these
            await move(engine, game_id, created.tokens, rng)
            await until((await engine.load(game_id)).version)
        # Another replica's move (an engine of its own on the same log): only the consumer
        # brings it, with the consumer's late copies of our own appends before it.
        other = make_engine(store)
        await move(other, game_id, created.tokens, rng)
        stored = await store.read(game_id, 1)
        delivered.put_nowait(stored)
        await until(stored[-1].version)
        await asyncio.sleep(0.05)
        assert delivered.empty()
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    # Every version once, in order, in the feed and on the stream; each envelope as stored.
    versions = [int(e.version) for e in feed.events]
    assert versions == list(range(1, stored[-1].version + 1))
    assert [e.SerializeToString() for e in feed.events] == [r.data for r in stored]
    sent = [int(e.version) for u in updates for e in u.events]
    assert sent == versions
