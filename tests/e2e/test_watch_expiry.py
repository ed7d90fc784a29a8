"""A seat's WatchGame stream lasts only as long as its seat token: a leaked token is not a
window onto that seat's hand forever. At expiry the stream ends UNAUTHENTICATED, naming the
version to watch again from; the owner renews and goes on, missing nothing. A spectator's
stream (no token, nothing hidden) is not cut."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.games import get_game
from boulevard.platform.auth import PlayerClaims, issue_token
from boulevard.seats.player import SeatPlayer
from tests.e2e.conftest import TOKEN_KEY, Platform
from tests.e2e.test_games import create
from tests.support.identity import player_md
from tests.support.keys import seat_key

pytestmark = pytest.mark.e2e


def short_token(game_id: str, seat: int, seconds: float) -> str:
    return issue_token(TOKEN_KEY.encode(), PlayerClaims(game_id, seat, f"p{seat}"), seconds)


def test_a_seats_stream_ends_when_its_token_expires_and_a_spectators_does_not(
    platform: Platform,
) -> None:
    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create(stub, "las_vegas", 2)
            game_id = created.game_id
            token = short_token(game_id, 0, 2)
            versions: list[int] = []
            started = time.monotonic()
            seat_stream = stub.WatchGame(
                engine_pb2.WatchGameRequest(game_id=game_id, player_token=token)
            )
            spectator = stub.WatchGame(engine_pb2.WatchGameRequest(game_id=game_id))

            async def follow() -> None:
                async for update in seat_stream:
                    versions.append(update.event.version)

            with pytest.raises(grpc.aio.AioRpcError) as ended:
                try:
                    await asyncio.wait_for(follow(), 15)
                except TimeoutError:
                    pytest.fail("the seat's stream outlived its token")
            assert time.monotonic() - started < 15
            assert ended.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert "expired" in (ended.value.details() or "")
            assert f"from version {versions[-1] + 1}" in (ended.value.details() or "")
            assert versions == list(range(1, len(versions) + 1))  # nothing was skipped
            # The spectator's stream is still open and answers the next event.
            first = await spectator.read()
            assert first.event.version == 1
            spectator.cancel()
            # The seat's owner renews and watches on from where the stream stopped.
            fresh = await stub.RenewPlayerToken(
                engine_pb2.RenewPlayerTokenRequest(game_id=game_id), metadata=player_md("p0")
            )
            resumed = stub.WatchGame(
                engine_pb2.WatchGameRequest(
                    game_id=game_id,
                    player_token=fresh.player_token,
                    from_version=versions[-1] + 1,
                )
            )
            await asyncio.sleep(0.5)
            resumed.cancel()
            # An expired token cannot open a stream at all.
            late = stub.WatchGame(engine_pb2.WatchGameRequest(game_id=game_id, player_token=token))
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await late.read()
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED

    asyncio.run(run())


def test_a_seat_whose_token_expires_mid_game_renews_and_plays_to_the_end(
    platform: Platform,
) -> None:
    """A slow player (a person thinking) with a 2-second token: the stream and the moves
    meet the expiry, the seat renews through RenewPlayerToken, and the game ends."""

    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create(stub, "las_vegas", 2)
            bot = next(iter(get_game("las_vegas").bots.values()))

            async def renew() -> str:
                fresh = await stub.RenewPlayerToken(
                    engine_pb2.RenewPlayerTokenRequest(game_id=created.game_id),
                    metadata=player_md("p0"),
                )
                return fresh.player_token

            rng = random.Random(7)

            async def think(view: Any, commands: list[Any], version: int) -> Any:
                await asyncio.sleep(0.15)
                return rng.choice(commands)

            slow = SeatPlayer(
                stub, created.game_id, "las_vegas", 0, short_token(created.game_id, 0, 2),
                bot, random.Random(0), seat_key(0), choose=think, renew=renew,
            )  # fmt: skip
            quick = SeatPlayer(
                stub, created.game_id, "las_vegas", 1, created.player_tokens[1],
                bot, random.Random(1), seat_key(1),
            )  # fmt: skip
            await asyncio.wait_for(asyncio.gather(slow.play(), quick.play()), 180)
            assert slow.renewals >= 1
            done = await stub.GetGame(engine_pb2.GetGameRequest(game_id=created.game_id))
            assert done.status == engine_pb2.GAME_STATUS_FINISHED

    asyncio.run(run())
