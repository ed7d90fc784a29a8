"""Ratings follow finished games, found through the engine's games index: winners move
up, losers down, each game counts once (redelivered, replayed or after a restart), bots
are never rated, a new ticket carries the new rating; a game whose end the index missed
is still rated, and after an upgrade from the feed on GAMES nothing is rated twice and
nothing is left out. The engine's writes are made here as the engine makes them: the
`GameFinished` commit on `game.<id>`, then the summary in the `engine_games` bucket."""

from __future__ import annotations

import json
import uuid

import pytest
from nats.aio.client import Client as NATS
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, KeyValueConfig

from boulevard.api.v1 import events_pb2
from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.eventlog.jetstream import encode_commit
from boulevard.eventlog.store import NewEvent
from boulevard.games.base import GameFinished
from boulevard.games.codec import Codec
from boulevard.messaging.streams import ensure_stream, platform_streams
from boulevard.platform.settings import Settings
from services.matchmaking.ratings import DEFAULT_MU
from services.matchmaking.settings import MatchmakingSettings
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


async def put_summary(nc: NATS, game_id: str, status: str, players: tuple[str, ...]) -> None:
    """The games index entry the engine writes at a game's creation and at its end."""
    js = nc.jetstream()
    try:
        kv = await js.key_value("engine_games")
    except Exception:
        kv = await js.create_key_value(KeyValueConfig(bucket="engine_games", history=1))
    summary = {"game": GAME, "status": status, "version": 1, "players": list(players)}
    await kv.put(game_id, json.dumps(summary, sort_keys=True).encode())


async def append_finished(
    nc: NATS, game_id: str, players: tuple[str, ...], ranking: tuple[tuple[int, ...], ...],
    version: int = 7,
) -> int:  # fmt: skip
    """Append what the engine appends when a game ends: an EventCommit whose one event is
    an EventEnvelope carrying GameFinished as codec JSON. Its GAMES sequence."""
    finished = GameFinished(ranking=ranking, scores=tuple(0 for _ in players), player_ids=players)
    event_id = str(uuid.uuid4())
    env = events_pb2.EventEnvelope(
        event_id=event_id, type="GameFinished", game_id=game_id, game=GAME, version=version,
        payload=Codec(()).dumps(finished),
    )  # fmt: skip
    data = encode_commit([NewEvent(event_id, "GameFinished", env.SerializeToString())], version)
    ack = await nc.jetstream().publish(f"game.{game_id}", data, headers={"Nats-Msg-Id": event_id})
    return int(ack.seq)


async def finish_game(
    nc: NATS, game_id: str, players: tuple[str, ...], ranking: tuple[tuple[int, ...], ...],
    version: int = 7,
) -> None:  # fmt: skip
    """A game's end as the engine records it: the append, then the index's summary."""
    await append_finished(nc, game_id, players, ranking, version)
    await put_summary(nc, game_id, "finished", players)


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
        # A summary whose game's log ends in garbage: skipped, not stuck.
        await nc.jetstream().publish("game.g0", b"\xff not an EventCommit")
        await put_summary(nc, "g0", "finished", ("ada", "bob"))
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


def quick_rechecks(url: str) -> MatchmakingSettings:
    """Settings whose feed looks again at an unfinished game after 0.3-0.6 s."""
    return mm_settings(
        url,
        matchmaking_ratings_recheck_min_seconds=0.3,
        matchmaking_ratings_recheck_max_seconds=0.6,
    )


async def rating_of(stub, player: str) -> pb.PlayerRating:  # type: ignore[no-untyped-def]
    return (await stub.GetRating(pb.GetRatingRequest(player_id=player, game=GAME))).rating


async def test_a_game_whose_end_the_index_missed_is_rated_and_a_running_one_waits(
    nats_server, nc
) -> None:
    settings = quick_rechecks(nats_server.url)
    js = nc.jetstream()
    async with running_mm(settings) as svc, stub_for(svc.address) as stub:
        feed = app_of(svc).ratings
        assert feed is not None
        # Two games made: their first events, then their creation summaries.
        for game_id, players in (("lost", ("ann", "ben")), ("running", ("cat", "dan"))):
            await other_event(nc, game_id)
            await put_summary(nc, game_id, "active", players)
        # "lost" ends in its log, and the engine dies before writing its end to the index.
        await append_finished(nc, "lost", ("ann", "ben"), ((0,), (1,)))
        await eventually(lambda: feed.games_rated >= 1, within=10)
        assert (await rating_of(stub, "ann")).games == 1
        assert (await rating_of(stub, "ben")).games == 1

        # "running" is looked at again and again, and stays pending: not rated, not lost.
        async def looked_again() -> bool:
            info = await js.consumer_info("KV_engine_games", "matchmaking-finished")
            # Four summaries delivered once each, the running one's again (redeliveries
            # count in the consumer sequence, not in num_redelivered: one message).
            return info.num_ack_pending == 1 and info.delivered.consumer_seq >= 7

        await eventually(looked_again, within=10)
        assert feed.games_rated == 1 and (await rating_of(stub, "cat")).games == 0

        await finish_game(nc, "running", ("cat", "dan"), ((1,), (0,)))
        await eventually(lambda: feed.games_rated >= 2, within=10)
        assert (await rating_of(stub, "dan")).mu > DEFAULT_MU

        async def nothing_pending() -> bool:
            info = await js.consumer_info("KV_engine_games", "matchmaking-finished")
            return info.num_ack_pending == 0 and info.num_pending == 0

        await eventually(nothing_pending, within=10)
        assert feed.games_rated == 2 and (await rating_of(stub, "ann")).games == 1


async def test_an_upgrade_from_the_feed_on_games_rates_what_it_had_not(nats_server, nc) -> None:
    """The release before rated from a durable on GAMES up to its ack floor. The index
    replays every game: those at or below the floor are left as rated, the rest rated."""
    js = nc.jetstream()
    await ensure_stream(js, platform_streams(Settings())["games"])
    rated = await append_finished(nc, "old-rated", ("ann", "ben"), ((0,), (1,)))
    await put_summary(nc, "old-rated", "finished", ("ann", "ben"))
    # The old feed's durable, as it made it, with everything up to that game acked.
    old = await js.pull_subscribe(
        "game.>", durable="matchmaking-ratings", stream="GAMES",
        config=ConsumerConfig(ack_policy=AckPolicy.ALL, deliver_policy=DeliverPolicy.ALL),
    )  # fmt: skip
    [msg] = await old.fetch(1, timeout=5)
    await msg.ack_sync()
    # Ended after its last ack: one written to the index, one whose summary was lost.
    await finish_game(nc, "old-unrated", ("cat", "dan"), ((0,), (1,)))
    await other_event(nc, "old-lost")
    await put_summary(nc, "old-lost", "active", ("eve", "fay"))
    await append_finished(nc, "old-lost", ("eve", "fay"), ((0,), (1,)))

    settings = quick_rechecks(nats_server.url)
    async with running_mm(settings) as svc, stub_for(svc.address) as stub:
        feed = app_of(svc).ratings
        assert feed is not None
        await eventually(lambda: feed.games_rated >= 2, within=10)
        assert feed.legacy_floor == rated
        for player in ("cat", "eve"):
            assert (await rating_of(stub, player)).games == 1, player
        # Rated by the release before (here: never, so a second rating would show).
        assert (await rating_of(stub, "ann")).games == 0

    # The floor was recorded once: the old durable moving on later changes nothing.
    await old.fetch(1, timeout=5)
    async with running_mm(settings) as svc:
        feed = app_of(svc).ratings
        assert feed is not None
        await eventually(lambda: feed.subscribed.is_set(), within=10)
        assert feed.legacy_floor == rated


async def test_a_game_delivered_again_after_many_more_games_moves_nobody(nats_server, nc) -> None:
    """A player's recent games hold only the last 32; a rated game's summary delivered
    again later (the engine writing it again, or the durable made anew) must still move
    nobody: the game's `d.<id>` says it is rated."""
    settings = mm_settings(nats_server.url)
    async with running_mm(settings) as svc, stub_for(svc.address) as stub:
        feed = app_of(svc).ratings
        assert feed is not None
        await finish_game(nc, "first", ("ada", "bob"), ((0,), (1,)))
        for n in range(33):
            await finish_game(nc, f"later-{n}", ("ada", f"rival-{n}"), ((n % 2,), (1 - n % 2,)))
        await eventually(lambda: feed.games_rated >= 34, within=30)
        ada = await rating_of(stub, "ada")
        assert ada.games == 34 and "first" not in ada.recent_games
        await put_summary(nc, "first", "finished", ("ada", "bob"))  # written again
        await eventually(lambda: feed.games_rated >= 35, within=10)
        again = await rating_of(stub, "ada")
        assert (again.mu, again.sigma, again.games) == (ada.mu, ada.sigma, ada.games)
        assert (await rating_of(stub, "bob")).games == 1
