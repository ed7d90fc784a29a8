"""Two engine replicas behind one gateway: a game's calls all reach the replica that owns
its game id (boulevard.contract.routing), and the game plays on when that replica stops.

The shared platform's engine is replica A; the test starts a second engine process, B, on
the same NATS, and a gateway whose engine target lists both. It makes a game that B owns and
plays moves through the gateway: B's own counters show every call (and A none of the moves
before the stop: only B holds the game); then B stops and the next moves, through the same
gateway, are served by A, which loads the game from the log."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Iterator

import grpc
import pytest
from connectrpc.errors import ConnectError
from prometheus_client.parser import text_string_to_metric_families

from boulevard.api.v1 import engine_connect, engine_pb2, engine_pb2_grpc
from boulevard.contract.routing import owner
from boulevard.messaging.server import free_port
from boulevard.seats.signing import signed_submit
from tests.e2e.conftest import Platform
from tests.e2e.test_games import create
from tests.e2e.test_gateway import Gateway
from tests.support.keys import seat_key
from tests.support.processes import ServiceProcess, metrics_url

pytestmark = pytest.mark.e2e

METHODS = ("GetGame", "ListLegalActions", "SubmitAction")  # what one `move` calls


@pytest.fixture
def replica_b(platform: Platform) -> Iterator[ServiceProcess]:
    env = {
        **platform.env,
        "BOULEVARD_ENGINE_PORT": str(free_port()),
        "BOULEVARD_ENGINE_METRICS_PORT": str(free_port()),
    }
    proc = ServiceProcess("engine", env, platform.log_dir)
    proc.log_path = platform.log_dir / "engine-b.log"
    from boulevard.cli.up import wait_serving

    proc.start()
    try:
        asyncio.run(wait_serving(proc.address, 30, proc.process))
        yield proc
    except BaseException:
        print(proc.log()[-3000:])
        raise
    finally:
        proc.stop()


def calls(env: dict[str, str], method: str) -> float:
    """The engine's count of OK gRPC calls of `method` (its own /metrics)."""
    with urllib.request.urlopen(metrics_url(env, "engine"), timeout=5) as reply:
        text = reply.read().decode()
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "boulevard_grpc_requests_total"
        and s.labels.get("method") == method
        and s.labels.get("code") == "OK"
    )


async def move(client: engine_connect.EngineServiceClient, game_id: str, tokens: list[str]) -> int:
    """One move through the gateway by the first seat to act (its first legal action); the
    game's version after it."""
    game = await client.get_game(engine_pb2.GetGameRequest(game_id=game_id))
    seat = game.to_act[0]
    legal = await client.list_legal_actions(
        engine_pb2.ListLegalActionsRequest(game_id=game_id, player_token=tokens[seat])
    )
    request = signed_submit(
        game_id, tokens[seat], seat, seat_key(seat), legal.actions[0], legal.version
    )
    done = await client.submit_action(request)
    return int(done.version)


def test_a_games_calls_reach_its_owner_and_it_plays_on_when_the_owner_stops(
    platform: Platform, replica_b: ServiceProcess, tmp_path_factory: pytest.TempPathFactory
) -> None:
    a, b = platform.address("engine"), replica_b.address
    gateway = Gateway(
        {**platform.env, "BOULEVARD_GATEWAY_ENGINE_TARGET": f"{a},{b}"},
        platform.log_dir / "gateway-affinity.log",
    ).start()
    try:

        async def run() -> None:
            async with grpc.aio.insecure_channel(b) as channel:
                stub = engine_pb2_grpc.EngineServiceStub(channel)
                for _ in range(20):  # half the game ids are B's
                    game = await create(stub, "las_vegas", 2)
                    if owner(game.game_id, [a, b]) == b:
                        break
                else:
                    raise AssertionError("no game id owned by B in 20")
            game_id, tokens = game.game_id, list(game.player_tokens)
            before = {m: calls(replica_b.env, m) for m in METHODS}
            async with engine_connect.EngineServiceClient(gateway.url) as client:
                version = 0
                for _ in range(3):
                    version = await move(client, game_id, tokens)
                # Every call of the game reached B (B serves no one else). A's counters
                # are not checked: bots of other tests' games may still be moving there.
                assert {m: calls(replica_b.env, m) - before[m] for m in METHODS} == {
                    m: 3 for m in METHODS
                }

                replica_b.stop()
                at_stop = calls(platform.env, "SubmitAction")
                for _ in range(3):  # B is down: only A can answer these
                    after = await move(client, game_id, tokens)
                    assert after > version
                    version = after
                assert calls(platform.env, "SubmitAction") - at_stop >= 3

        try:
            asyncio.run(run())
        except ConnectError:
            print(replica_b.log()[-3000:])
            raise
    finally:
        gateway.stop()
