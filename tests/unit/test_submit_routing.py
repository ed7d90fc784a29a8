"""A seat's SubmitActions stream through `boulevard.platform.replicas` reaches the replica
that owns its first move's game (what the unary SubmitAction reaches), and the SDK's
`SubmitStream` calls an engine without the stream (an older release) unary instead.

Small gRPC servers on loopback stand in for the replicas: each answers a stream's move with
its own address (in `idempotency_key`), and the old one only the unary call."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.contract.routing import owner
from boulevard.messaging.server import free_port
from boulevard.platform.replicas import Replicas, game_id_of
from boulevard.seats.submitting import SubmitStream

SERVICE = "boulevard.v1.EngineService"


async def replica(streams: bool) -> tuple[str, grpc.aio.Server]:
    address = f"127.0.0.1:{free_port()}"

    async def submit_actions(
        requests: AsyncIterator[engine_pb2.SubmitActionsRequest], _ctx: Any
    ) -> AsyncIterator[engine_pb2.SubmitActionsResponse]:
        async for message in requests:
            if message.submit.idempotency_key == "refuse":
                error = engine_pb2.SubmitActionError(code=10, message="reload and decide again")
                yield engine_pb2.SubmitActionsResponse(idempotency_key="refuse", error=error)
                continue
            yield engine_pb2.SubmitActionsResponse(
                idempotency_key=address, accepted=engine_pb2.SubmitActionResponse(version=9)
            )

    async def submit_action(
        _request: engine_pb2.SubmitActionRequest, _ctx: Any
    ) -> engine_pb2.SubmitActionResponse:
        return engine_pb2.SubmitActionResponse(version=7)

    handlers = {
        "SubmitAction": grpc.unary_unary_rpc_method_handler(
            submit_action,
            request_deserializer=engine_pb2.SubmitActionRequest.FromString,
            response_serializer=engine_pb2.SubmitActionResponse.SerializeToString,
        )
    }
    if streams:
        handlers["SubmitActions"] = grpc.stream_stream_rpc_method_handler(
            submit_actions,
            request_deserializer=engine_pb2.SubmitActionsRequest.FromString,
            response_serializer=engine_pb2.SubmitActionsResponse.SerializeToString,
        )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    server.add_insecure_port(address)
    await server.start()
    return address, server


def game_move(game_id: str) -> engine_pb2.SubmitActionsRequest:
    return engine_pb2.SubmitActionsRequest(
        submit=engine_pb2.SubmitActionRequest(game_id=game_id, idempotency_key="k")
    )


async def test_a_stream_goes_to_its_first_moves_owner() -> None:
    started = [await replica(streams=True) for _ in range(3)]
    addresses = [a for a, _ in started]
    try:
        async with Replicas(addresses) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)  # type: ignore[arg-type]
            games = [f"g{i:031x}" for i in range(12)]
            assert {owner(g, addresses) for g in games} == set(addresses)  # every replica
            for game_id in games:
                assert game_id_of(game_move(game_id)) == game_id
                call = stub.SubmitActions()
                await call.write(game_move(game_id))
                reply = await call.read()
                assert reply.idempotency_key == owner(game_id, addresses), game_id
                await call.done_writing()
                assert await call.read() is grpc.aio.EOF
    finally:
        for _, server in started:
            await server.stop(None)


async def test_the_sdk_calls_an_engine_without_the_stream_unary() -> None:
    address, server = await replica(streams=False)
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            moves = SubmitStream(engine_pb2_grpc.EngineServiceStub(channel))
            request = game_move("g" + "0" * 31).submit
            assert (await moves.submit(request)).version == 7  # UNIMPLEMENTED: unary
            assert moves.unary and moves.opened == 1
            assert (await moves.submit(request)).version == 7
            assert moves.opened == 1  # no stream tried again
            await moves.close()
    finally:
        await server.stop(None)


async def test_a_refused_move_raises_what_submit_action_raises() -> None:
    address, server = await replica(streams=True)
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            moves = SubmitStream(engine_pb2_grpc.EngineServiceStub(channel))
            refused = engine_pb2.SubmitActionRequest(game_id="g", idempotency_key="refuse")
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await moves.submit(refused)
            assert err.value.code() == grpc.StatusCode.ABORTED
            assert err.value.details() == "reload and decide again"
            # The stream stays: the next move goes on it.
            assert (await moves.submit(game_move("g").submit)).version == 9
            assert moves.opened == 1 and not moves.unary
            await moves.close()
    finally:
        await server.stop(None)
