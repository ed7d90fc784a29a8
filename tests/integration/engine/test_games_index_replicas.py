"""Two engine replicas on one NATS, through their gRPC API: the replica that creates a game
lists it in the same breath (its games index holds its own put at once); the other lists it
once its watch has delivered it (docs/architecture.md, "The games index in memory"). The
watch is fast enough that only test_games_index.py, with a lagging watch, can tell the
writer's own put from its watch; this test checks the wiring of both replicas end to end."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from tests.e2e.test_games import OPERATOR_MD, create
from tests.integration.dice.support import dice_settings, running_dice
from tests.integration.engine.test_poison import running_engine
from tests.integration.matchmaking.support import eventually
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration


async def listed(stub: engine_pb2_grpc.EngineServiceStub, **kw: str) -> list[str]:
    reply = await stub.ListGames(
        engine_pb2.ListGamesRequest(page_size=500, **kw), metadata=OPERATOR_MD, timeout=10
    )
    return [g.game_id for g in reply.games]


async def test_the_writer_lists_its_game_at_once_and_the_other_replica_soon(
    nats_server: NatsHandle, tmp_path: Path
) -> None:
    async with (
        running_dice(dice_settings(nats_server.url, tmp_path)),
        running_engine(nats_server.url) as a,
        running_engine(nats_server.url) as b,
        grpc.aio.insecure_channel(a.address) as channel_a,
        grpc.aio.insecure_channel(b.address) as channel_b,
    ):
        stub_a = engine_pb2_grpc.EngineServiceStub(channel_a)
        stub_b = engine_pb2_grpc.EngineServiceStub(channel_b)
        for _ in range(5):
            created = await create(stub_a, "las_vegas", 2, reveal=False)
            assert created.game_id in await listed(stub_a)  # no wait: read your writes
            assert created.game_id in await listed(stub_a, player_id="p1")

            async def on_b(game_id: str = created.game_id) -> bool:
                return game_id in await listed(stub_b)

            await eventually(on_b, within=10)
        assert await listed(stub_a) == await listed(stub_b)
