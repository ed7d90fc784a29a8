"""No single MatchFormed wedges the engine: a message that does not decode or a match the
rules refuse is reported once and terminated (it used to come back every second forever),
the next match is created, and the engine restarts cleanly."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
import pytest
from nats.aio.client import Client as NATS

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2
from boulevard.messaging.poison import POISONED
from boulevard.platform.server import RunningService, start_service
from services.engine.app import EngineApp
from services.engine.settings import EngineSettings
from tests.integration.dice.support import dice_settings, running_dice
from tests.integration.matchmaking.support import eventually
from tests.support.keys import seat_key
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration


@asynccontextmanager
async def running_engine(nats_url: str) -> AsyncIterator[RunningService]:
    settings = EngineSettings(
        NATS_URL=nats_url,  # type: ignore[call-arg]
        token_key="engine-test-token-key-0123456789abcdef",  # type: ignore[arg-type]
        shutdown_grace_seconds=0.5,
    )
    service = await start_service(EngineApp(settings), settings, port=0)
    try:
        yield service
    finally:
        await service.stop()


def match(match_id: str, game: str = "las_vegas") -> bytes:
    seats = [
        events_pb2.MatchSeat(seat=i, player_id=f"p{i}", public_key=seat_key(i).public_hex)
        for i in range(2)
    ]
    return events_pb2.MatchFormed(match_id=match_id, game=game, seats=seats).SerializeToString()


async def game_exists(address: str, game_id: str) -> bool:
    async with grpc.aio.insecure_channel(address) as channel:
        try:
            await engine_pb2_grpc.EngineServiceStub(channel).GetGame(
                engine_pb2.GetGameRequest(game_id=game_id), timeout=5
            )
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.NOT_FOUND:
                return False
            raise
    return True


async def test_garbage_and_refused_matches_are_terminated_and_the_next_is_created(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    undecodable = ("engine.match_formed", "undecodable")
    refused = ("engine.match_formed", "refused")
    before = (POISONED[undecodable], POISONED[refused])
    async with running_dice(dice_settings(nats_server.url, tmp_path)):
        async with running_engine(nats_server.url) as engine:
            js = nc.jetstream()
            await js.publish("mm.match_formed", b"\xff\xfe not a MatchFormed")
            await js.publish("mm.match_formed", match("mrefused", game="no_such_game"))
            await js.publish("mm.match_formed", match("mgood"))
            await eventually(lambda: game_exists(engine.address, "mgood"), within=20)
            await asyncio.sleep(2.5)  # a nak'ed message would be back by now, more than once
            assert (POISONED[undecodable], POISONED[refused]) == (before[0] + 1, before[1] + 1)
            # Garbage in the game's own log: the restarted engine reads past it.
            await js.publish("game.mgood", b"\xff\xfe not an EventCommit")
        async with running_engine(nats_server.url) as engine:
            await js.publish("mm.match_formed", match("mafter"))
            await eventually(lambda: game_exists(engine.address, "mafter"), within=20)
            assert await game_exists(engine.address, "mgood")
            assert (POISONED[undecodable], POISONED[refused]) == (before[0] + 1, before[1] + 1)
