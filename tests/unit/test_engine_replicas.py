"""The Python SDK's channel over several engine replicas (boulevard.platform.replicas): each
call reaches the replica that owns its request's game id (boulevard.contract.routing, the
gateway's choice too), a call without one the first replica listed, a call whose owner is
down the next replica in the game's order; a replica that answers UNAVAILABLE itself keeps
the call; a watch stream cut by its replica's stop goes on from the next event on the next
replica (`each_event(..., retries=…)`). One address is a plain channel, as always.

Small gRPC servers on loopback stand in for the replicas and answer with their own address,
so the test sees which one each call reached."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2
from boulevard.contract.routing import ranked
from boulevard.messaging.server import free_port
from boulevard.platform.replicas import Replicas, engine_channel
from boulevard.seats.watching import each_event
from services.matchmaking.settings import MatchmakingSettings

SERVICE = "boulevard.v1.EngineService"
REFUSED = "refused-game"  # GetGame of this id: the replica answers UNAVAILABLE itself


class Replica:
    """A gRPC server answering GetGame and ListGames with its own address, and WatchGame
    with events from the requested version on, each named after the replica (`hold` stops
    the stream after that many, leaving it open)."""

    def __init__(self, hold: int = 1_000) -> None:
        self.address = f"127.0.0.1:{free_port()}"
        self.hold = hold
        self.server: grpc.aio.Server | None = None
        self.watches: list[int] = []  # from_version of each WatchGame served

    async def start(self) -> None:
        name = self.address

        async def get_game(
            request: engine_pb2.GetGameRequest, ctx: grpc.aio.ServicerContext
        ) -> engine_pb2.GetGameResponse:
            if request.game_id == REFUSED:
                await ctx.abort(grpc.StatusCode.UNAVAILABLE, f"{name}: the event store is down")
            return engine_pb2.GetGameResponse(game_id=request.game_id, game=name)

        async def list_games(
            _request: engine_pb2.ListGamesRequest, _ctx: grpc.aio.ServicerContext
        ) -> engine_pb2.ListGamesResponse:
            return engine_pb2.ListGamesResponse(next_page_token=name)

        async def watch_game(
            request: engine_pb2.WatchGameRequest, _ctx: grpc.aio.ServicerContext
        ) -> AsyncIterator[engine_pb2.WatchGameResponse]:
            self.watches.append(request.from_version)
            first = max(request.from_version, 1)
            for version in range(first, first + self.hold):
                event = events_pb2.EventEnvelope(version=version, type="Tick", game_id=name)
                yield engine_pb2.WatchGameResponse(events=[event])
            await asyncio.Event().wait()  # open, with nothing more to say

        unary = grpc.unary_unary_rpc_method_handler
        handler = grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "GetGame": unary(
                    get_game,
                    request_deserializer=engine_pb2.GetGameRequest.FromString,
                    response_serializer=engine_pb2.GetGameResponse.SerializeToString,
                ),
                "ListGames": unary(
                    list_games,
                    request_deserializer=engine_pb2.ListGamesRequest.FromString,
                    response_serializer=engine_pb2.ListGamesResponse.SerializeToString,
                ),
                "WatchGame": grpc.unary_stream_rpc_method_handler(
                    watch_game,
                    request_deserializer=engine_pb2.WatchGameRequest.FromString,
                    response_serializer=engine_pb2.WatchGameResponse.SerializeToString,
                ),
            },
        )
        self.server = grpc.aio.server()
        self.server.add_generic_rpc_handlers((handler,))
        self.server.add_insecure_port(self.address)
        await self.server.start()

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop(grace=None)
            self.server = None


@pytest.fixture
async def replicas() -> AsyncIterator[list[Replica]]:
    started = [Replica(hold=3), Replica(hold=3)]
    for r in started:
        await r.start()
    try:
        yield started
    finally:
        for r in started:
            await r.stop()


def games_of_each(addresses: list[str]) -> dict[str, str]:
    """A game id owned by each replica."""
    owned: dict[str, str] = {}
    for i in range(100):
        owned.setdefault(ranked(f"game-{i}", addresses)[0], f"game-{i}")
    assert len(owned) == len(addresses)
    return owned


async def answered_by(stub: engine_pb2_grpc.EngineServiceStub, game_id: str) -> str:
    got = await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id), timeout=5)
    return str(got.game)


async def test_each_games_calls_reach_its_owner_and_others_the_first(
    replicas: list[Replica],
) -> None:
    addresses = [r.address for r in replicas]
    async with engine_channel(",".join(addresses)) as channel:
        assert isinstance(channel, Replicas)
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        for owner, game_id in games_of_each(addresses).items():
            for _ in range(3):
                assert await answered_by(stub, game_id) == owner
        listed = await stub.ListGames(engine_pb2.ListGamesRequest(), timeout=5)
        assert listed.next_page_token == addresses[0]
        # The same choice with the replicas listed the other way round: a game's owner
        # depends on the names only; a call without a game id follows the list.
        async with engine_channel(",".join(reversed(addresses))) as other:
            again = engine_pb2_grpc.EngineServiceStub(other)
            for owner, game_id in games_of_each(addresses).items():
                assert await answered_by(again, game_id) == owner
            listed = await again.ListGames(engine_pb2.ListGamesRequest(), timeout=5)
            assert listed.next_page_token == addresses[1]


async def test_a_game_whose_owner_is_down_goes_to_the_next_replica(
    replicas: list[Replica],
) -> None:
    addresses = [r.address for r in replicas]
    game_id = games_of_each(addresses)[addresses[0]]
    async with engine_channel(",".join(addresses)) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        assert await answered_by(stub, game_id) == addresses[0]
        await replicas[0].stop()
        for _ in range(3):  # the first call finds it down, the next ones skip it
            assert await answered_by(stub, game_id) == addresses[1]
        listed = await stub.ListGames(engine_pb2.ListGamesRequest(), timeout=5)
        assert listed.next_page_token == addresses[1]
        await replicas[1].stop()
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await answered_by(stub, game_id)
        assert caught.value.code() is grpc.StatusCode.UNAVAILABLE


async def test_a_reachable_replica_answering_unavailable_keeps_the_call(
    replicas: list[Replica],
) -> None:
    """Its NATS is down, say: the other replicas share that NATS, so the error is the
    caller's (to retry later), and nothing is sent twice."""
    addresses = [r.address for r in replicas]
    async with engine_channel(",".join(addresses)) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await answered_by(stub, REFUSED)
        assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
        assert caught.value.details().startswith(ranked(REFUSED, addresses)[0])


async def test_a_stream_goes_to_the_owner_and_on_from_the_next_event_when_it_stops(
    replicas: list[Replica],
) -> None:
    addresses = [r.address for r in replicas]
    owner, other = replicas
    game_id = games_of_each(addresses)[owner.address]
    async with engine_channel(",".join(addresses)) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        seen: list[tuple[int, str]] = []
        request = engine_pb2.WatchGameRequest(game_id=game_id)
        async for update in each_event(stub, request, retries=5, timeout=20):
            seen.append((update.event.version, update.event.game_id))
            if len(seen) == 3:
                await owner.stop()  # the stream breaks: on from version 4, elsewhere
            if len(seen) == 6:
                break
    assert seen == [(v, owner.address) for v in (1, 2, 3)] + [(v, other.address) for v in (4, 5, 6)]
    assert (owner.watches, other.watches) == ([0], [4])


async def test_without_retries_a_broken_stream_is_the_callers(replicas: list[Replica]) -> None:
    owner = replicas[0]
    game_id = games_of_each([r.address for r in replicas])[owner.address]
    async with engine_channel(f"{replicas[0].address},{replicas[1].address}") as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        seen = 0
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            async for _update in each_event(stub, engine_pb2.WatchGameRequest(game_id=game_id)):
                seen += 1
                if seen == 3:
                    await owner.stop()
        assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
    assert replicas[1].watches == []


async def test_one_address_is_a_plain_channel(replicas: list[Replica]) -> None:
    async with engine_channel(f" {replicas[1].address} ") as channel:
        assert isinstance(channel, grpc.aio.Channel)
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        for i in range(5):
            assert await answered_by(stub, f"game-{i}") == replicas[1].address
    with pytest.raises(ValueError, match="no engine address"):
        engine_channel(" , ")


def test_matchmakings_bots_take_the_replica_list_or_the_one_engine() -> None:
    assert MatchmakingSettings().engine_address() == "127.0.0.1:50052"
    assert MatchmakingSettings(engine_host="engine", engine_port=1).engine_address() == "engine:1"
    both = "engine-0.engine-headless:50052,engine-1.engine-headless:50052"
    assert MatchmakingSettings(engine_target=both).engine_address() == both
