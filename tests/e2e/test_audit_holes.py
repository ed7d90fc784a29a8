"""Holes a dishonest operator (every service's identity and key, no player's) had in the
audits (issue 25), tried on the whole platform: each test fails on the code before the fix."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.fairness import client_seed_commitment
from tests.e2e.conftest import Platform
from tests.e2e.test_games import OPERATOR_MD
from tests.support.keys import seat_key

pytestmark = pytest.mark.e2e


def test_an_operator_cannot_name_a_seat_bot_n(platform: Platform) -> None:
    """CreateGame took `bot-1` as a human seat (bot: false) with a key the operator chose and
    handed the operator its token, though `bot-<n>` seats are the platform's bots."""

    async def run() -> None:
        seats = [
            engine_pb2.SeatAssignment(
                seat=i,
                player_id=name,
                client_seed_commitment=client_seed_commitment(f"s{i}"),
                public_key=seat_key(i).public_hex,
            )
            for i, name in enumerate(["ann", "bot-1"])
        ]
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.CreateGame(
                    engine_pb2.CreateGameRequest(
                        request_id="reserved-bot", game="las_vegas", seats=seats
                    ),
                    metadata=OPERATOR_MD,
                )
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "reserved for the platform's bots" in (err.value.details() or "")

    asyncio.run(run())
