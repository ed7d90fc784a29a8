"""docs/clients.md's issue-27 facts on the running services: a dice request_id names the
game's version before its ChanceResolved, and an operator cannot seat `bot-<n>`."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from boulevard.api.v1 import dice_pb2, dice_pb2_grpc, engine_pb2, engine_pb2_grpc, events_pb2
from tests.e2e.conftest import OPERATOR, Platform
from tests.e2e.test_games import create
from tests.support.keys import seat_key

pytestmark = pytest.mark.e2e


def test_a_dice_request_id_names_the_version_before_its_chance_resolved(
    platform: Platform,
) -> None:
    async def run() -> None:
        async with (
            grpc.aio.insecure_channel(platform.address("engine")) as engine_channel,
            grpc.aio.insecure_channel(platform.address("dice")) as dice_channel,
        ):
            engine = engine_pb2_grpc.EngineServiceStub(engine_channel)
            created = await create(engine, "las_vegas", 2)
            for _ in range(100):  # the first chance follows the reveals
                log = await engine.GetGameLog(engine_pb2.GetGameLogRequest(game_id=created.game_id))
                envelopes = [events_pb2.EventEnvelope.FromString(e.envelope) for e in log.envelopes]
                resolved = [e.version for e in envelopes if e.type == "ChanceResolved"]
                if resolved:
                    break
                await asyncio.sleep(0.05)
            assert resolved, "no chance was resolved"
            outcomes = await dice_pb2_grpc.DiceServiceStub(dice_channel).ListOutcomes(
                dice_pb2.ListOutcomesRequest(game_id=created.game_id)
            )
            first = outcomes.outcomes[0]
            assert first.request_id == f"{created.game_id}:{resolved[0] - 1}"

    asyncio.run(run())


def test_an_operator_cannot_seat_a_bot_id(platform: Platform) -> None:
    async def run() -> grpc.aio.AioRpcError:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await engine_pb2_grpc.EngineServiceStub(channel).CreateGame(
                    engine_pb2.CreateGameRequest(
                        request_id="bots-please",
                        game="las_vegas",
                        seats=[
                            engine_pb2.SeatAssignment(
                                seat=i, player_id=f"bot-{i}", public_key=seat_key(i).public_hex
                            )
                            for i in range(2)
                        ],
                    ),
                    metadata=(("authorization", f"Bearer {OPERATOR}"),),
                )
            return caught.value

    refused = asyncio.run(run())
    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "reserved" in refused.details()
