from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from nats.aio.client import Client as NATS

from boulevard.eventlog.jetstream import JetStreamEventStore
from boulevard.eventlog.store import EventStore
from boulevard.messaging.streams import StreamSpec, ensure_stream
from tests.support.eventstore_contract import EventStoreContract, ev
from tests.support.nats import NatsHandle, connect_as

pytestmark = pytest.mark.integration

SPEC = StreamSpec(name="GAMES", subjects=("game.>",))


class TestJetStreamEventStore(EventStoreContract):
    @pytest.fixture
    async def store(self, nc: NATS) -> EventStore:
        await ensure_stream(nc.jetstream(), SPEC)
        return JetStreamEventStore(nc, "GAMES", "game")


async def test_stream_setup_is_idempotent_and_updates(nc: NATS) -> None:
    js = nc.jetstream()
    await ensure_stream(js, SPEC)
    await ensure_stream(js, SPEC)
    # A service finding another duplicate window uses the stream as it is (it may not
    # update streams); admin, updating, brings it to the new configuration.
    newer = StreamSpec("GAMES", ("game.>",), duplicate_window_seconds=30)
    await ensure_stream(js, newer)
    assert (await js.stream_info("GAMES")).config.duplicate_window == 120
    await ensure_stream(js, newer, update=True)
    info = await js.stream_info("GAMES")
    assert info.config.duplicate_window == 30
    assert info.config.allow_atomic


async def test_a_second_writer_with_a_stale_cache_conflicts(nc: NATS) -> None:
    await ensure_stream(nc.jetstream(), SPEC)
    one = JetStreamEventStore(nc, "GAMES", "game")
    two = JetStreamEventStore(nc, "GAMES", "game")
    await one.append("g", [ev(1)], 0)
    assert await two.version("g") == 1
    await one.append("g", [ev(2)], 1)
    # `two` still believes the stream is at version 1 and its cached sequence is stale.
    with pytest.raises(Exception) as info:
        await two.append("g", [ev("late")], 1)
    assert type(info.value).__name__ == "ConcurrencyConflict"
    assert [e.event_id for e in await one.read("g")] == ["e-1", "e-2"]


async def connect(server: NatsHandle) -> NATS:
    return await connect_as(server, "engine", max_reconnect_attempts=100)


async def test_acknowledged_events_survive_sigkill(nats_server: NatsHandle) -> None:
    """Every append that was acknowledged is still there after a SIGKILL of the server."""
    client = await connect(nats_server)
    await ensure_stream(client.jetstream(), SPEC)
    store = JetStreamEventStore(client, "GAMES", "game")
    acked = 0
    for i in range(200):
        acked = await store.append("durable", [ev(i)], acked)
    await client.close()

    nats_server.kill()
    nats_server.restart()

    client = await connect(nats_server)
    try:
        got = await JetStreamEventStore(client, "GAMES", "game").read("durable")
        assert [e.event_id for e in got] == [f"e-{i}" for i in range(200)]
    finally:
        await client.close()


@pytest.fixture
async def fresh_store(nc: NATS) -> AsyncIterator[JetStreamEventStore]:
    await ensure_stream(nc.jetstream(), SPEC)
    yield JetStreamEventStore(nc, "GAMES", "game")


async def test_retry_after_the_dedupe_window_is_still_idempotent(
    fresh_store: JetStreamEventStore,
) -> None:
    # A new store instance has no cache; the retry is recognised by event id, which does
    # not depend on the server's duplicate window.
    await fresh_store.append("g", [ev(1), ev(2)], 0)
    other = JetStreamEventStore(fresh_store._nc, "GAMES", "game")
    assert await other.append("g", [ev(1), ev(2)], 0) == 2
    assert len(await other.read("g")) == 2
