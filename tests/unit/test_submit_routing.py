"""A seat's SubmitActions stream through `boulevard.platform.replicas` reaches the replica
that owns its first message's game (what the unary SubmitAction reaches), and the SDK's
`SubmitStream` opens it at sit-down (`open`) on an engine that knows `open`, opens it on
the first move on one from before `open`, and calls an engine without the stream (an older
release) unary instead.

Small gRPC servers on loopback stand in for the replicas: each answers a stream's move with
its own address (in `idempotency_key`) and an `open` with `opened` (`Semantics.OPEN`); one
from before `open` reads it as a move without a token, as that engine did, and ends the
stream UNAUTHENTICATED (`Semantics.OLD`) or refuses it alone (`Semantics.REFUSES`); the
oldest answers only the unary call (`streams=False`)."""

from __future__ import annotations

import enum
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


SEEN: dict[str, list[engine_pb2.SubmitActionsRequest]] = {}  # each replica's messages, in order


class Semantics(enum.Enum):
    OPEN = "knows open"
    OLD = "from before open: ends the stream on a move without a token"
    REFUSES = "from before open: refuses a message it cannot read alone"


async def replica(
    streams: bool, semantics: Semantics = Semantics.OPEN, expires_after: int = 0
) -> tuple[str, grpc.aio.Server]:
    """A replica; with `expires_after` N, each stream ends UNAUTHENTICATED (its token's
    expiry) after its Nth answer."""
    address = f"127.0.0.1:{free_port()}"
    seen: list[engine_pb2.SubmitActionsRequest] = []

    async def submit_actions(
        requests: AsyncIterator[engine_pb2.SubmitActionsRequest], ctx: Any
    ) -> AsyncIterator[engine_pb2.SubmitActionsResponse]:
        answered = 0
        async for message in requests:
            seen.append(message)
            if expires_after and answered == expires_after:
                await ctx.abort(grpc.StatusCode.UNAUTHENTICATED, "player token expired")
            answered += 1
            if message.HasField("open") and semantics is Semantics.OPEN:
                opened = engine_pb2.SubmitActionsOpened(seat=1, expires_unix_ms=5)
                yield engine_pb2.SubmitActionsResponse(opened=opened)
                continue
            if not message.HasField("submit"):
                # What an engine from before `open` makes of one: a move with no token.
                if semantics is Semantics.REFUSES:
                    error = engine_pb2.SubmitActionError(code=3, message="not a move")
                    yield engine_pb2.SubmitActionsResponse(error=error)
                    continue
                await ctx.abort(grpc.StatusCode.UNAUTHENTICATED, "a player token is required")
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
    SEEN[address] = seen
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


def open_of(game_id: str) -> engine_pb2.SubmitActionsRequest:
    return engine_pb2.SubmitActionsRequest(
        open=engine_pb2.SubmitActionsOpen(game_id=game_id, player_token="t")
    )


async def test_an_open_goes_to_its_games_owner() -> None:
    started = [await replica(streams=True) for _ in range(3)]
    addresses = [a for a, _ in started]
    try:
        async with Replicas(addresses) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            games = [f"g{i:031x}" for i in range(12)]
            for game_id in games:
                assert game_id_of(open_of(game_id)) == game_id
                moves = SubmitStream(stub)
                assert await moves.open(game_id, "t")
                reply = await moves.submit(game_move(game_id).submit)
                assert reply.version == 9
                await moves.close()
            # Each replica saw exactly the opens (and moves) of the games it owns.
            for address in addresses:
                mine = {g for g in games if owner(g, addresses) == address}
                assert {game_id_of(m) for m in SEEN[address]} == mine, address
    finally:
        for _, server in started:
            await server.stop(None)


async def test_the_sdk_opens_the_stream_before_the_first_move() -> None:
    address, server = await replica(streams=True)
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            moves = SubmitStream(engine_pb2_grpc.EngineServiceStub(channel))
            assert not moves.ready
            assert await moves.open("g", "t")
            assert moves.ready and moves.opens and moves.opened == 1
            assert (await moves.submit(game_move("g").submit)).version == 9
            assert moves.opened == 1  # the move went on the stream opened before it
            seen = SEEN[address]
            assert [m.HasField("open") for m in seen] == [True, False]
            assert seen[0].open.game_id == "g" and seen[0].open.player_token == "t"
            # An open again (a renewed token) goes on the same stream.
            assert await moves.open("g", "t2")
            assert moves.opened == 1 and seen[-1].open.player_token == "t2"
            await moves.close()
            assert not moves.ready
    finally:
        await server.stop(None)


@pytest.mark.parametrize("semantics", [Semantics.OLD, Semantics.REFUSES])
async def test_the_sdk_opens_on_the_first_move_with_an_engine_from_before_open(
    semantics: Semantics,
) -> None:
    address, server = await replica(streams=True, semantics=semantics)
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            moves = SubmitStream(engine_pb2_grpc.EngineServiceStub(channel))
            assert not await moves.open("g", "t")
            assert moves.opens is False and not moves.ready and not moves.unary
            # The first move opens a stream, as before `open`, and moves go on it.
            assert (await moves.submit(game_move("g").submit)).version == 9
            assert (await moves.submit(game_move("g").submit)).version == 9
            assert moves.opened == 2 and moves.ready and not moves.unary
            # `open` is not tried again: nothing is sent, the stream is left as it is.
            sent = len(SEEN[address])
            assert not await moves.open("g", "t")
            assert len(SEEN[address]) == sent and moves.ready
            await moves.close()
    finally:
        await server.stop(None)


async def test_the_sdk_opens_with_an_engine_without_the_stream_then_goes_unary() -> None:
    address, server = await replica(streams=False)
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            moves = SubmitStream(engine_pb2_grpc.EngineServiceStub(channel))
            assert not await moves.open("g", "t")
            assert moves.unary and moves.opened == 1
            assert (await moves.submit(game_move("g").submit)).version == 7
            assert not await moves.open("g", "t") and moves.opened == 1
    finally:
        await server.stop(None)


async def test_an_open_with_a_renewed_token_opens_again_when_the_stream_had_ended() -> None:
    """The stream ended at its token's expiry under the client (its status not read yet):
    the open with the renewed token goes on a fresh stream."""
    address, server = await replica(streams=True, expires_after=1)
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            moves = SubmitStream(engine_pb2_grpc.EngineServiceStub(channel))
            assert await moves.open("g", "t")
            assert await moves.open("g", "renewed")  # the first stream ends on it
            assert moves.opened == 2 and moves.ready and moves.opens
            await moves.close()
    finally:
        await server.stop(None)
