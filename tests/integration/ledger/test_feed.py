"""The poster's GAMES feed (services/ledger/feed.py): pull requests kept open and renewed,
replaced when the server forgets them, statuses told from deliveries; and the poster's
acks, deferred but never ahead of what is posted."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig

from boulevard.api.v1 import events_pb2
from boulevard.eventlog.jetstream import encode_commit
from boulevard.eventlog.store import NewEvent
from boulevard.messaging.streams import ensure_stream, platform_streams
from boulevard.platform.server import start_service
from services.ledger.app import LedgerApp
from services.ledger.feed import PullFeed, consumer_sequence
from tests.integration.ledger.support import (
    ledger_client,
    ledger_settings,
    money_events,
    publish_envelopes,
    running_ledger,
    synthetic_games,
    wait_for_size,
)
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration


async def durable(nc: NATS, name: str = "feed") -> None:
    js = nc.jetstream()
    await js.add_stream(name="S", subjects=["s.>"])
    await js.add_consumer(
        "S", ConsumerConfig(durable_name=name, ack_policy=AckPolicy.ALL, max_ack_pending=8)
    )


async def take_until(feed: PullFeed, count: int, within: float = 10.0) -> list[Msg]:
    """Take (and ack, as the poster does) until `count` messages came."""
    got: list[Msg] = []
    deadline = time.monotonic() + within
    while len(got) < count:
        assert time.monotonic() < deadline, f"only {len(got)} of {count} messages came"
        msgs = await feed.take(0.1)
        if msgs:
            await msgs[-1].ack()
        got += msgs
    return got


async def test_messages_flow_in_order_through_requests_that_expire_and_are_renewed(
    nc: NATS,
) -> None:
    await durable(nc)
    feed = PullFeed(nc, "S", "feed", expires=1.0, heartbeat=0.2)
    await feed.open()
    try:
        js = nc.jetstream()
        got: list[Msg] = []
        for i in range(30):  # over about 2.4 s: the first requests expire on the way
            await js.publish(f"s.{i % 3}", str(i).encode())
            got += await take_until(feed, 1) if i % 5 == 4 else []
            await asyncio.sleep(0.08)
        got += await take_until(feed, 30 - len(got))
        assert [m.data for m in got] == [str(i).encode() for i in range(30)]
        assert [consumer_sequence(m) for m in got] == list(range(1, 31))
        assert feed.requests_sent >= 3  # renewed before each expiry
        assert not await feed.take(0.3)  # nothing twice
    finally:
        await feed.close()


@pytest.mark.parametrize("how", ["stopped", "killed"])
async def test_a_restarted_server_forgets_the_request_and_the_feed_pulls_anew(
    nats_server: NatsHandle, nc: NATS, how: str
) -> None:
    """Stopped, the server ends the request (409 Server Shutdown); killed, it says
    nothing, and the missing heartbeats tell."""
    await durable(nc)
    feed = PullFeed(nc, "S", "feed", expires=30.0, heartbeat=0.2)
    await feed.open()
    try:
        js = nc.jetstream()
        await js.publish("s.a", b"before")
        assert [m.data for m in await take_until(feed, 1)] == [b"before"]
        await nc.flush()
        if how == "killed":
            nats_server.kill()
        nats_server.restart()  # the open request dies with the server; the client reconnects
        deadline = time.monotonic() + 20
        while True:
            try:
                await js.publish("s.a", b"after", timeout=1)
                break
            except Exception:
                assert time.monotonic() < deadline, "the restarted server never took it"
                await asyncio.sleep(0.1)
        got: list[bytes] = []
        deadline = time.monotonic() + 10
        while b"after" not in got:  # ("before" may come again: its ack was in flight)
            assert time.monotonic() < deadline, f"no delivery after the restart: {got}"
            got += [m.data for m in await feed.take(0.1)]
        assert feed.requests_sent >= 2
        assert feed.requests_lost >= (1 if how == "killed" else 0)
    finally:
        await feed.close()


async def test_a_delivery_whose_headers_look_like_a_status_is_still_posted(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    """A writer of GAMES (the engine's identity, or an operator) may put any header on a
    message, a `Status` among them; only the server's own statuses lack an ack subject,
    so a payment dressed as a heartbeat or an expiry is posted like any other."""
    envelopes, _ = synthetic_games(games=1, events_per_game=2, seed=5)
    await publish_envelopes(nc, envelopes[:1])
    dressed = events_pb2.EventEnvelope()
    dressed.CopyFrom(envelopes[1])
    dressed.ClearField("transfers")
    dressed.transfers.add(source="bank", target="seat:0", amount=5, reason="payout")
    commit = encode_commit(
        [NewEvent(dressed.event_id, dressed.type, dressed.SerializeToString())], dressed.version
    )
    for status in ("100", "408"):
        # Two messages of the same event: the second one's key is already posted.
        await nc.jetstream().publish(
            f"game.{dressed.game_id}",
            commit,
            headers={"Status": status, "Description": "Idle Heartbeat", "Nats-Msg-Id": status},
        )
    settings = ledger_settings(nats_server.url, tmp_path)
    async with running_ledger(settings) as service, ledger_client(service.address) as client:
        await wait_for_size(client, money_events(envelopes[:1]) + 1)
        keys = [(e.game_id, e.version) async for e in client.entries()]
        assert (dressed.game_id, dressed.version) in keys
        assert len(keys) == len(set(keys))


async def test_acks_are_few_and_never_ahead_of_what_is_posted(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trickle (one GAMES message at a time, as a live table writes them) is acked once
    per half window or per `ack_delay`, not once per batch; and no ack covers a message
    whose money is not yet posted."""
    envelopes, _ = synthetic_games(games=4, events_per_game=20, seed=9)
    settings = ledger_settings(nats_server.url, tmp_path, ledger_fetch_batch=16)
    app = LedgerApp(settings)
    acks: list[int] = []
    real_ack = Msg.ack

    async def checked_ack(self: Msg) -> None:
        if self.subject.startswith("game."):
            assert app.poster is not None
            # Every money event up to the one acked is in the book, which holds only what
            # LEDGER acknowledged.
            stream_seq = self.metadata.sequence.stream
            for env in envelopes[:stream_seq]:
                assert not env.transfers or app.poster.book.ledger.is_posted(
                    env.game_id, env.version
                ), (stream_seq, env.game_id, env.version)
            acks.append(stream_seq)
        await real_ack(self)

    monkeypatch.setattr(Msg, "ack", checked_ack)
    await ensure_stream(nc.jetstream(), platform_streams(settings)["games"])
    service = await start_service(app, settings, port=0)
    try:
        started = time.monotonic()
        for env in envelopes:  # one at a time: each is a batch of its own to the poster
            await publish_envelopes(nc, [env])
            await asyncio.sleep(0.003)
        elapsed = time.monotonic() - started
        async with ledger_client(service.address) as client:
            await wait_for_size(client, money_events(envelopes))
        deadline = time.monotonic() + 5
        while True:  # the last, deferred ack goes out within ack_delay
            info = await nc.jetstream().consumer_info("GAMES", "ledger")
            if info.num_ack_pending == 0 and info.ack_floor.stream_seq == len(envelopes):
                break
            assert time.monotonic() < deadline, info
            await asyncio.sleep(0.05)
    finally:
        await service.stop()
    assert acks == sorted(acks) and acks[-1] == len(envelopes)
    # Per batch, that would be about one ack per message.
    assert len(acks) <= len(envelopes) // 8 + elapsed / 0.05 + 3, (len(acks), elapsed)
