"""No single message wedges matchmaking: finished games whose log ends in garbage, and
unratable ones, are skipped by the ratings feed (which then rates the next game), foreign
values in the tickets bucket are kept out of the view, and a call that meets one gets a
precise status."""

from __future__ import annotations

import uuid

import grpc
import pytest
from nats.aio.client import Client as NATS

from boulevard.api.v1 import events_pb2
from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.eventlog.jetstream import encode_commit
from boulevard.eventlog.store import NewEvent
from boulevard.games.base import GameFinished
from boulevard.games.codec import Codec
from boulevard.messaging.poison import POISONED
from services.matchmaking.ratings import DEFAULT_MU
from tests.integration.matchmaking.support import (
    GAME,
    app_of,
    eventually,
    mm_settings,
    running_mm,
    stub_for,
)
from tests.integration.matchmaking.test_ratings import finish_game, put_summary
from tests.support.keys import TEST_PUBLIC_KEY
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration


async def unratable_game(nc: NATS, game_id: str) -> None:
    """A GameFinished whose game name is no KV key: it used to fail on every redelivery and
    hold back every later game."""
    finished = GameFinished(ranking=((0,), (1,)), scores=(0, 0), player_ids=("eve", "mal"))
    event_id = str(uuid.uuid4())
    env = events_pb2.EventEnvelope(
        event_id=event_id, type="GameFinished", game_id=game_id, game="no such game!",
        version=3, payload=Codec(()).dumps(finished),
    )  # fmt: skip
    data = encode_commit([NewEvent(event_id, "GameFinished", env.SerializeToString())], 3)
    await nc.jetstream().publish(f"game.{game_id}", data)


async def test_poison_on_games_and_in_the_tickets_bucket(nats_server: NatsHandle, nc: NATS) -> None:
    settings = mm_settings(nats_server.url)
    before = dict(POISONED)
    # Stored before the feed starts, so they come in one batch: the unratable game used to
    # fail the batch there on every redelivery, and the good game behind it waited forever.
    async with running_mm(settings):
        pass  # creates the streams and the feed's durable consumer
    await nc.jetstream().publish("game.p0", b"\xff\xfe garbage")
    await put_summary(nc, "p0", "finished", ("ann", "ben"))
    await unratable_game(nc, "p1")
    await put_summary(nc, "p1", "finished", ("eve", "mal"))
    await finish_game(nc, "p2", ("ann", "ben"), ((0,), (1,)))
    async with running_mm(settings) as svc, stub_for(svc.address) as stub:
        feed = app_of(svc).ratings
        assert feed is not None
        await eventually(lambda: feed.games_rated >= 1, within=15)
        ann = await stub.GetRating(pb.GetRatingRequest(player_id="ann", game=GAME))
        assert ann.rating.mu > DEFAULT_MU

        tickets = await nc.jetstream().key_value("tickets")
        await tickets.put("t.garbage0", b"\xff\xfe garbage")
        forged = pb.Ticket(ticket_id="victim", player_id="mal", game=GAME, status=1)
        await tickets.put("t.forged0", forged.SerializeToString())
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.GetTicket(pb.GetTicketRequest(ticket_id="garbage0"))
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        # The service goes on: new tickets, and the forged value is in nobody's view.
        made = await stub.CreateTicket(
            pb.CreateTicketRequest(player_id="ann", game=GAME, public_key=TEST_PUBLIC_KEY)
        )
        assert made.ticket.status == pb.TICKET_STATUS_WAITING
        await eventually(lambda: POISONED[("matchmaking.tickets", "wrong_key")] > before.get(
            ("matchmaking.tickets", "wrong_key"), 0))  # fmt: skip
        assert "victim" not in app_of(svc).matchmaker.view
    for reason in ("undecodable", "unratable"):
        key = ("matchmaking.ratings", reason)
        assert POISONED[key] > before.get(key, 0), key

    # A restart reads the same stream and bucket and serves.
    async with running_mm(settings) as svc, stub_for(svc.address) as stub:
        await finish_game(nc, "p3", ("ann", "cat"), ((0,), (1,)))
        feed = app_of(svc).ratings
        assert feed is not None
        await eventually(lambda: feed.games_rated >= 1, within=15)
        ann = await stub.GetRating(pb.GetRatingRequest(player_id="ann", game=GAME))
        assert ann.rating.games == 2
