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

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.contract.routing import ranked
from boulevard.platform.replicas import Replicas, engine_channel
from boulevard.seats.watching import each_event
from services.matchmaking.settings import MatchmakingSettings
from tests.support.engine_replica import REFUSED, Replica, running


@pytest.fixture
async def replicas() -> AsyncIterator[list[Replica]]:
    async with running(Replica(hold=3), Replica(hold=3)) as started:
        yield started


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


async def test_a_stream_left_mid_iteration_cancels_its_call(replicas: list[Replica]) -> None:
    """A watcher that stops reading (a `break`, its task cancelled) must not hold the
    replica's watcher, one of a seat's few watch slots, until the channel closes: leaving the
    iteration ends the call, though the stream object is still referenced."""
    owner = replicas[0]
    game_id = games_of_each([r.address for r in replicas])[owner.address]
    async with engine_channel(f"{replicas[0].address},{replicas[1].address}") as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        stream = stub.WatchGame(engine_pb2.WatchGameRequest(game_id=game_id), timeout=20)
        async for update in stream:
            assert update.events[0].game_id == owner.address
            assert owner.watching == 1
            break
        await owner.until_watching(0)

        # A task cancelled while it waits for the next message (the replica holds the
        # stream open after its `hold` events) ends its call the same way.
        stream = stub.WatchGame(engine_pb2.WatchGameRequest(game_id=game_id), timeout=20)

        async def read_all() -> None:
            async for _update in stream:
                pass

        reader = asyncio.create_task(read_all())
        await owner.until_watching(1)
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        await owner.until_watching(0)


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
