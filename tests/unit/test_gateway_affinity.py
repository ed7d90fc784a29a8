"""The gateway sends a game's engine calls to the replica that owns its game id
(boulevard.contract.routing), calls without a game id to the first replica, and a call
whose owner is down to the next replica in the game's order.

Two small gRPC servers on loopback stand in for engine replicas and answer with their own
address, so the test sees which one each call reached; the gateway's ASGI app runs
in-process."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.request import Headers, RequestContext

from boulevard.api.v1 import engine_pb2
from boulevard.contract.routing import ranked
from services.gateway.app import PROTO_SERVICES, Backends, build_app
from services.gateway.forward import endpoints
from services.gateway.settings import GatewaySettings
from tests.support.engine_replica import SERVICE, Replica, running


@pytest.fixture
async def replicas() -> AsyncIterator[list[Replica]]:
    async with running(Replica(), Replica()) as started:
        yield started


def gateway(targets: str) -> httpx.AsyncClient:
    app = build_app(GatewaySettings(gateway_engine_target=targets))
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8080"
    )


async def answered_by(client: httpx.AsyncClient, method: str, body: dict[str, str]) -> str:
    reply = await client.post(f"/{SERVICE}/{method}", json=body)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    return str(data.get("game") or data.get("nextPageToken"))


def games_of_each(addresses: list[str]) -> dict[str, str]:
    """A game id owned by each replica."""
    owned: dict[str, str] = {}
    for i in range(100):
        owned.setdefault(ranked(f"game-{i}", addresses)[0], f"game-{i}")
    assert len(owned) == len(addresses)
    return owned


async def test_each_games_calls_reach_its_owner(replicas: list[Replica]) -> None:
    addresses = [r.address for r in replicas]
    async with gateway(",".join(addresses)) as client:
        for owner, game_id in games_of_each(addresses).items():
            for _ in range(3):
                assert await answered_by(client, "GetGame", {"gameId": game_id}) == owner
        # No game id: the first replica listed.
        assert await answered_by(client, "ListGames", {}) == addresses[0]


async def test_a_game_whose_owner_is_down_goes_to_the_next_replica(
    replicas: list[Replica],
) -> None:
    addresses = [r.address for r in replicas]
    owned = games_of_each(addresses)
    async with gateway(",".join(addresses)) as client:
        game_id = owned[addresses[0]]
        assert await answered_by(client, "GetGame", {"gameId": game_id}) == addresses[0]
        await replicas[0].stop()
        for _ in range(3):  # the first call finds it down, the next ones skip it
            assert await answered_by(client, "GetGame", {"gameId": game_id}) == addresses[1]
        assert await answered_by(client, "ListGames", {}) == addresses[1]


async def test_with_every_replica_down_the_caller_hears_unavailable(
    replicas: list[Replica],
) -> None:
    addresses = [r.address for r in replicas]
    for r in replicas:
        await r.stop()
    async with gateway(",".join(addresses)) as client:
        reply = await client.post(f"/{SERVICE}/GetGame", json={"gameId": "g"})
        assert reply.json()["code"] == "unavailable"


async def test_one_target_is_todays_single_backend(replicas: list[Replica]) -> None:
    async with gateway(replicas[1].address) as client:
        for i in range(5):
            got = await answered_by(client, "GetGame", {"gameId": f"game-{i}"})
            assert got == replicas[1].address


@contextlib.asynccontextmanager
async def watch_forwarder(
    targets: str,
) -> AsyncIterator[Callable[[str], AsyncGenerator[Any, None]]]:
    """The gateway's WatchGame forwarder over `targets`, called as connectrpc calls it: a
    function of a game id to the stream of messages the browser would get. Closing that
    stream (`aclose`) is what connectrpc does when the browser goes away."""
    backends = Backends(GatewaySettings(gateway_engine_target=targets))
    endpoint = endpoints(PROTO_SERVICES["engine"], backends.engine_channels)[
        f"/{SERVICE}/WatchGame"
    ]

    def watch(game_id: str) -> AsyncGenerator[Any, None]:
        ctx = RequestContext(
            method=endpoint.method, http_method="POST", request_headers=Headers(), timeout_ms=20_000
        )
        stream = endpoint.function(engine_pb2.WatchGameRequest(game_id=game_id), ctx)
        assert isinstance(stream, AsyncGenerator)  # the forwarder is an async generator
        return stream

    try:
        yield watch
    finally:
        await backends.close()


async def test_a_watch_reaches_its_owner_and_a_browser_leaving_frees_its_watcher(
    replicas: list[Replica],
) -> None:
    addresses = [r.address for r in replicas]
    async with watch_forwarder(",".join(addresses)) as watch:
        for owner, game_id in games_of_each(addresses).items():
            stream = aiter(watch(game_id))
            first = await anext(stream)
            assert first.events[0].game_id == owner
            assert [r.watching for r in replicas] == [int(r.address == owner) for r in replicas]
            await stream.aclose()
            for r in replicas:
                await r.until_watching(0)


async def test_a_watch_whose_owner_is_down_opens_on_the_next_and_a_cut_one_ends(
    replicas: list[Replica],
) -> None:
    """Before its first message a watch moves on to the next replica; once it delivered, a
    cut stream is the browser's to resume (from the next version), with the service's code;
    with no replica left, the browser hears UNAVAILABLE."""
    addresses = [r.address for r in replicas]
    first, second = replicas
    game_id = games_of_each(addresses)[first.address]
    async with watch_forwarder(",".join(addresses)) as watch:
        stream = aiter(watch(game_id))
        assert (await anext(stream)).events[0].game_id == first.address
        await first.stop()
        with pytest.raises(ConnectError) as cut:
            async for _update in stream:
                pass
        assert cut.value.code is Code.UNAVAILABLE
        assert second.watches == []

        got = [update.events[0].game_id async for update in islice(watch(game_id), 3)]
        assert got == [second.address] * 3
        await second.until_watching(0)

        await second.stop()
        with pytest.raises(ConnectError) as down:
            await anext(aiter(watch(game_id)))
        assert down.value.code is Code.UNAVAILABLE


async def islice(stream: AsyncGenerator[Any, None], n: int) -> AsyncIterator[Any]:
    """The first `n` items of `stream`, which is closed after them."""
    try:
        for _ in range(n):
            yield await anext(stream)
    finally:
        await stream.aclose()


def test_only_the_engine_target_may_list_replicas() -> None:
    with pytest.raises(ValueError, match="only the engine's may list replicas"):
        GatewaySettings(gateway_dice_target="a:1,b:2")
    assert GatewaySettings(gateway_engine_target="a:1, b:2").targets_of("engine") == (
        "a:1",
        "b:2",
    )
