"""A hostile client at the gRPC edge of the running platform (issue 11, "Inputs are
unbounded"): oversized fields, undeclared options, huge ids echoed back, raw bytes."""

from __future__ import annotations

import uuid

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.api.v1 import matchmaking_pb2 as mm_pb2
from boulevard.api.v1 import matchmaking_pb2_grpc as mm_grpc
from services.engine.engine import game_id_for
from tests.e2e.conftest import Platform
from tests.e2e.test_games import OPERATOR_MD, create

pytestmark = pytest.mark.e2e

# One method of each service whose field 1 is a string (so bad UTF-8 there is undecodable).
METHODS = {
    "engine": "/boulevard.v1.EngineService/GetGame",
    "matchmaking": "/boulevard.v1.MatchmakingService/CreateTicket",
    "dice": "/boulevard.v1.DiceService/ListOutcomes",
    "ledger": "/boulevard.v1.LedgerService/GetBalances",
}


async def test_a_100_kib_idempotency_key_is_refused_naming_the_field(platform: Platform) -> None:
    async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        created = await create(stub, "las_vegas", 2)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.SubmitAction(
                engine_pb2.SubmitActionRequest(
                    game_id=created.game_id,
                    player_token=created.player_tokens[0],
                    action=engine_pb2.Action(),
                    idempotency_key="k" * 100 * 1024,
                ),
                timeout=10,
            )
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details() == (
        "idempotency_key: at most 128 characters (SubmitActionRequest.idempotency_key), got 102400"
    )


async def test_an_oversized_player_id_never_becomes_a_ticket(platform: Platform) -> None:
    async with grpc.aio.insecure_channel(platform.address("matchmaking")) as channel:
        stub = mm_grpc.MatchmakingServiceStub(channel)
        request = mm_pb2.CreateTicketRequest(
            request_id="r1", player_id="p" * 200 * 1024, game="las_vegas"
        )
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.CreateTicket(request, timeout=10)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "player_id: at most 128 characters" in (err.value.details() or "")
        # 1 MiB is over the server's receive limit: refused before it is even decoded.
        request.player_id = "p" * 1024 * 1024
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.CreateTicket(request, timeout=10)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_an_undeclared_game_option_is_refused_and_nothing_is_stored(
    platform: Platform,
) -> None:
    async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        request_id = uuid.uuid4().hex
        for game, options in [
            ("lords_of_vegas", {"turbo": "yes"}),
            ("las_vegas", {"white_dice": "maybe"}),
        ]:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.CreateGame(
                    engine_pb2.CreateGameRequest(
                        request_id=request_id,
                        game=game,
                        seats=[
                            engine_pb2.SeatAssignment(seat=i, player_id=f"p{i}") for i in range(2)
                        ],
                        options=options,
                    ),
                    metadata=OPERATOR_MD,
                    timeout=10,
                )
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "bad options" in (err.value.details() or "")
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id_for(request_id)))
        assert err.value.code() == grpc.StatusCode.NOT_FOUND
        # The declared option still works.
        created = await create(stub, "las_vegas", 3, white_dice="true")
        assert created.game_id


async def test_a_huge_game_id_is_not_echoed_back(platform: Platform) -> None:
    async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        for game_id in ["g" * 200 * 1024, "bad id! " * 8]:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id), timeout=10)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert len(err.value.details() or "") < 200


@pytest.mark.parametrize("service", sorted(METHODS))
async def test_raw_undecodable_bytes_are_invalid_argument_not_unknown(
    platform: Platform, service: str
) -> None:
    async with grpc.aio.insecure_channel(platform.address(service)) as channel:
        call = channel.unary_unary(METHODS[service])  # bytes in, bytes out
        for garbage in [b"\xff\xff\xff\xff\xff", b"\x0a\x02\xc3\x28", b"\x0a\xff\xff\xff\x0f"]:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await call(garbage, timeout=10)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, err.value.details()
            assert "not a valid message" in (err.value.details() or "")
