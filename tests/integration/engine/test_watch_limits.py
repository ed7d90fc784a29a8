"""WatchGame streams are bounded: strangers cannot exhaust the engine's memory with them,
nor crowd a player out of watching their own seat.

Every WatchGame stream holds memory for as long as its caller keeps it open (about 30 KiB on
a Lords of Vegas game: 3,000 anonymous streams grew the engine by 87 MiB), and a spectator
needs no token: there was no bound at all. Spectators now share one budget
(`BOULEVARD_ENGINE_MAX_SPECTATOR_STREAMS`), each seat has its own few streams
(`BOULEVARD_ENGINE_MAX_STREAMS_PER_SEAT`), and a stream over them is RESOURCE_EXHAUSTED."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest
from nats.aio.client import Client as NATS

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.platform.auth import PlayerClaims, issue_token
from boulevard.platform.server import RunningService, start_service
from services.engine.app import EngineApp
from services.engine.settings import EngineSettings
from tests.integration.dice.support import dice_settings, running_dice
from tests.integration.engine.test_poison import game_exists, match
from tests.integration.matchmaking.support import eventually
from tests.support.identity import jwks_path
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration

TOKEN_KEY = "engine-test-token-key-0123456789abcdef"
SPECTATORS = 3
PER_SEAT = 2


@asynccontextmanager
async def running_engine(nats_url: str) -> AsyncIterator[RunningService]:
    settings = EngineSettings(
        NATS_URL=nats_url,  # type: ignore[call-arg]
        token_key=TOKEN_KEY,  # type: ignore[arg-type]
        auth_jwks=jwks_path(),
        shutdown_grace_seconds=0.5,
        engine_max_spectator_streams=SPECTATORS,
        engine_max_streams_per_seat=PER_SEAT,
    )
    service = await start_service(EngineApp(settings), settings, port=0)
    try:
        yield service
    finally:
        await service.stop()


async def opened(stub: engine_pb2_grpc.EngineServiceStub, game_id: str, token: str = "") -> Any:
    """A WatchGame stream that has delivered its first update (so the engine holds it)."""
    call = stub.WatchGame(engine_pb2.WatchGameRequest(game_id=game_id, player_token=token))
    await call.read()
    return call


async def refused(stub: engine_pb2_grpc.EngineServiceStub, game_id: str, token: str = "") -> str:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await opened(stub, game_id, token)
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err.value
    return err.value.details() or ""


async def test_spectators_share_a_bound_and_each_seat_keeps_its_own(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    async with (
        running_dice(dice_settings(nats_server.url, tmp_path)),
        running_engine(nats_server.url) as engine,
    ):
        await nc.jetstream().publish("mm.match_formed", match("mwatch"))
        await eventually(lambda: game_exists(engine.address, "mwatch"), within=20)
        seat0 = issue_token(TOKEN_KEY.encode(), PlayerClaims("mwatch", 0, "p0"))
        async with grpc.aio.insecure_channel(engine.address) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            strangers = [await opened(stub, "mwatch") for _ in range(SPECTATORS)]
            assert "spectators" in await refused(stub, "mwatch")
            # The seat still watches its own game while strangers fill their budget...
            mine = [await opened(stub, "mwatch", seat0) for _ in range(PER_SEAT)]
            # ...and a leaked token cannot open streams without end either.
            assert "seat 0" in await refused(stub, "mwatch", seat0)
            # A closed stream gives its place back, whichever way it ended.
            strangers.pop().cancel()
            mine.pop().cancel()
            await asyncio.sleep(0.3)
            strangers.append(await opened(stub, "mwatch"))
            mine.append(await opened(stub, "mwatch", seat0))
            for call in strangers + mine:
                call.cancel()
