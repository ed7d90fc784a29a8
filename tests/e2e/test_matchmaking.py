"""A player finds a game through matchmaking with bot fill, watches the ticket, gets a
seat and a token, plays to the end through the engine against bots, and is rated."""

from __future__ import annotations

import asyncio
import random
import uuid

import grpc
import pytest

from boulevard.api.v1 import (
    engine_pb2,
    engine_pb2_grpc,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
)
from boulevard.client.dice import DiceReader
from boulevard.fairness import client_seed_commitment
from boulevard.games import get_game
from boulevard.seats.player import SeatPlayer
from tests.e2e.conftest import Platform
from tests.e2e.test_games import create
from tests.support.identity import player_md
from tests.support.keys import TEST_KEY, TEST_PUBLIC_KEY

pytestmark = pytest.mark.e2e


def test_ticket_with_bot_fill_to_a_finished_game(platform: Platform) -> None:
    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("matchmaking")) as mm_channel:
            mm = matchmaking_pb2_grpc.MatchmakingServiceStub(mm_channel)
            created = await mm.CreateTicket(
                matchmaking_pb2.CreateTicketRequest(
                    public_key=TEST_PUBLIC_KEY,
                    request_id=uuid.uuid4().hex,
                    player_id="alice",
                    game="las_vegas",
                    min_seats=3,
                    max_seats=3,
                    client_seed_commitment=client_seed_commitment("alice's seed"),
                    bot_fill_after_seconds=1,
                ),
                metadata=player_md("alice"),
            )
            seen = []
            async for update in mm.WatchTicket(
                matchmaking_pb2.WatchTicketRequest(ticket_id=created.ticket.ticket_id),
                timeout=60,
                metadata=player_md("alice"),
            ):
                seen.append(update.ticket.status)
                if update.ticket.status == matchmaking_pb2.TICKET_STATUS_ASSIGNED:
                    ticket = update.ticket
                    break
            else:
                raise AssertionError(f"ticket never assigned: {seen}")
        assert seen[0] == matchmaking_pb2.TICKET_STATUS_WAITING
        assert ticket.game_id and ticket.player_token

        game = get_game("las_vegas")
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            engine = engine_pb2_grpc.EngineServiceStub(channel)
            alice = SeatPlayer(
                engine, ticket.game_id, game.name, ticket.seat, ticket.player_token,
                game.bots["heuristic"], random.Random(1), TEST_KEY, client_seed="alice's seed",
            )  # fmt: skip
            await asyncio.wait_for(alice.play(), 120)
            final = await engine.GetGame(engine_pb2.GetGameRequest(game_id=ticket.game_id))
            assert final.status == engine_pb2.GAME_STATUS_FINISHED
            assert alice.moves > 0
            # The game opened blind: alice's and the bots' seeds were committed in the match
            # and revealed (by alice, and by the bot runner) before any dice.
            async with grpc.aio.insecure_channel(platform.address("dice")) as dice_channel:
                report = await DiceReader(dice_channel).audit_game(ticket.game_id)
            assert report.ok and not report.notes, report.describe()

        # Rated: the engine's games index says the game ended, the ratings feed finds the
        # GameFinished in its log (under the platform's NATS permissions).
        async with grpc.aio.insecure_channel(platform.address("matchmaking")) as mm_channel:
            mm = matchmaking_pb2_grpc.MatchmakingServiceStub(mm_channel)
            for _ in range(200):
                rating = (
                    await mm.GetRating(
                        matchmaking_pb2.GetRatingRequest(player_id="alice", game="las_vegas")
                    )
                ).rating
                if ticket.game_id in rating.recent_games:
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError(f"game {ticket.game_id} not rated: {rating}")
            assert rating.games >= 1

        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            engine = engine_pb2_grpc.EngineServiceStub(channel)

            # The token is for this game and seat only.
            elsewhere = (await create(engine, "las_vegas", 3)).game_id
            for game_id in (elsewhere,):
                with pytest.raises(grpc.aio.AioRpcError) as info:
                    await engine.ListLegalActions(
                        engine_pb2.ListLegalActionsRequest(
                            game_id=game_id, player_token=ticket.player_token
                        )
                    )
                assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
            from boulevard.contract.mapping import command_to_action
            from boulevard.games.las_vegas.types import PlaceDice

            another_seat = (ticket.seat + 1) % 3
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await engine.SubmitAction(
                    engine_pb2.SubmitActionRequest(
                        game_id=ticket.game_id,
                        player_token=ticket.player_token,
                        action=command_to_action(game, PlaceDice(seat=another_seat, number=1)),
                    )
                )
            assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED

    asyncio.run(run())


def test_assigned_means_the_game_exists(platform: Platform) -> None:
    """A client that calls GetGame the moment its ticket turns ASSIGNED finds the game
    (seen missing in 2 of 6 runs before the matchmaker waited for the engine's first event).
    Many pairs matched at once, each checked at once."""

    async def one_player(mm: matchmaking_pb2_grpc.MatchmakingServiceStub, i: int) -> str:
        me = player_md(f"quick-{i}-{uuid.uuid4().hex[:6]}")
        created = await mm.CreateTicket(
            matchmaking_pb2.CreateTicketRequest(
                public_key=TEST_PUBLIC_KEY,
                request_id=uuid.uuid4().hex,
                game="las_vegas",
                min_seats=2,
                max_seats=2,
            ),
            metadata=me,
        )
        async for update in mm.WatchTicket(
            matchmaking_pb2.WatchTicketRequest(ticket_id=created.ticket.ticket_id),
            timeout=60,
            metadata=me,
        ):
            if update.ticket.status == matchmaking_pb2.TICKET_STATUS_ASSIGNED:
                return update.ticket.game_id
        raise AssertionError("ticket never assigned")

    async def run() -> None:
        async with (
            grpc.aio.insecure_channel(platform.address("matchmaking")) as mm_channel,
            grpc.aio.insecure_channel(platform.address("engine")) as channel,
        ):
            mm = matchmaking_pb2_grpc.MatchmakingServiceStub(mm_channel)
            engine = engine_pb2_grpc.EngineServiceStub(channel)

            async def assigned_then_get(i: int) -> None:
                game_id = await one_player(mm, i)
                got = await engine.GetGame(engine_pb2.GetGameRequest(game_id=game_id))
                assert got.game_id == game_id

            for _round in range(3):
                await asyncio.gather(*(assigned_then_get(i) for i in range(8)))

    asyncio.run(run())
