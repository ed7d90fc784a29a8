"""Ratings follow GameFinished events on GAMES: winners move up, losers down, each game
counts once (redelivered, replayed or after a restart), bots are never rated, and a new
ticket carries the new rating."""

from __future__ import annotations

import uuid

import pytest
from nats.aio.client import Client as NATS

from boulevard.api.v1 import events_pb2
from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.eventlog.jetstream import encode_commit
from boulevard.eventlog.store import NewEvent
from boulevard.games.base import GameFinished
from boulevard.games.codec import Codec
from services.matchmaking.ratings import DEFAULT_MU
from tests.integration.matchmaking.support import (
    GAME,
    app_of,
    eventually,
    mm_settings,
    running_mm,
    stub_for,
)
from tests.support.keys import TEST_PUBLIC_KEY

pytestmark = pytest.mark.integration


async def finish_game(
    nc: NATS, game_id: str, players: tuple[str, ...], ranking: tuple[tuple[int, ...], ...],
    version: int = 7,
) -> None:  # fmt: skip
    """Append what the engine appends when a game ends: an EventCommit whose one event is
    an EventEnvelope carrying GameFinished as codec JSON."""
    finished = GameFinished(ranking=ranking, scores=tuple(0 for _ in players), player_ids=players)
    event_id = str(uuid.uuid4())
    env = events_pb2.EventEnvelope(
        event_id=event_id, type="GameFinished", game_id=game_id, game=GAME, version=version,
        payload=Codec(()).dumps(finished),
    )  # fmt: skip
    data = encode_commit([NewEvent(event_id, "GameFinished", env.SerializeToString())], version)
    await nc.jetstream().publish(f"game.{game_id}", data, headers={"Nats-Msg-Id": event_id})


async def other_event(nc: NATS, game_id: str) -> None:
    env = events_pb2.EventEnvelope(event_id="x", type="DiceRolled", game_id=game_id, game=GAME)
    data = encode_commit([NewEvent("x", "DiceRolled", env.SerializeToString())], 1)
    await nc.jetstream().publish(f"game.{game_id}", data)


async def test_finished_games_move_winners_up_once(nats_server, nc) -> None:
    settings = mm_settings(nats_server.url)
    async with running_mm(settings) as svc, stub_for(svc.address) as stub:

        async def mu(player: str) -> float:
            r = await stub.GetRating(pb.GetRatingRequest(player_id=player, game=GAME))
            return r.rating.mu

        async def games_rated(n: int) -> bool:
            return app_of(svc).ratings is not None and app_of(svc).ratings.games_rated >= n  # type: ignore[union-attr]

        assert await mu("ada") == DEFAULT_MU
        await other_event(nc, "g1")
        await nc.jetstream().publish("game.g0", b"\xff not an EventCommit")  # skipped, not stuck
        # bob wins, ada second, bot-1 last.
        await finish_game(nc, "g1", ("ada", "bob", "bot-1"), ((1,), (0,), (2,)))
        await eventually(lambda: games_rated(1), within=10)
        ada, bob = await mu("ada"), await mu("bob")
        assert bob > ada and bob > DEFAULT_MU
        bot = await stub.GetRating(pb.GetRatingRequest(player_id="bot-1", game=GAME))
        assert bot.rating.games == 0  # never stored

        # The same game again (another message, e.g. a replay): no change.
        await finish_game(nc, "g1", ("ada", "bob", "bot-1"), ((1,), (0,), (2,)))
        await eventually(lambda: games_rated(2), within=10)
        assert (await mu("ada"), await mu("bob")) == (ada, bob)
        # Ada wins the next one and climbs back.
        await finish_game(nc, "g2", ("bob", "ada"), ((1,), (0,)))
        await eventually(lambda: games_rated(3), within=10)
        assert await mu("ada") > ada and await mu("bob") < bob
        r = (await stub.GetRating(pb.GetRatingRequest(player_id="ada", game=GAME))).rating
        assert r.games == 2 and list(r.recent_games) == ["g1", "g2"]
        assert r.ordinal == pytest.approx(r.mu - 3 * r.sigma)
        ada_now = r.mu

        # A ticket made now carries the new rating.
        t = await stub.CreateTicket(
            pb.CreateTicketRequest(
                public_key=TEST_PUBLIC_KEY, player_id="ada", game=GAME, min_seats=5
            )
        )
        assert t.ticket.rating == pytest.approx(ada_now)

    # A restart does not rate anything twice (durable consumer + per-player game ids).
    async with running_mm(settings) as svc, stub_for(svc.address) as stub:
        await finish_game(nc, "g3", ("cyd", "dee"), ((0,), (1,)))
        await eventually(lambda: games_rated(1), within=10)
        r = (await stub.GetRating(pb.GetRatingRequest(player_id="ada", game=GAME))).rating
        assert r.mu == pytest.approx(ada_now) and r.games == 2
        cyd = (await stub.GetRating(pb.GetRatingRequest(player_id="cyd", game=GAME))).rating
        assert cyd.mu > DEFAULT_MU
