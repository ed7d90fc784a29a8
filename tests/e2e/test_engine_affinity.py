"""Two engine replicas behind one gateway, and under the Python SDK and the CLI: a game's
calls all reach the replica that owns its game id (boulevard.contract.routing), and the game
plays on when that replica stops.

The shared platform's engine is replica A; the test starts a second engine process, B, on
the same NATS, and a gateway whose engine target lists both. It makes a game that B owns and
plays moves through the gateway: B's own counters show every call; then B stops and the next
moves, through the same gateway, are served by A. The game was created on A, so A holds a
copy from before B's moves: a move decided on what that copy shows is ABORTED once, and A
then serves the game from the log.

The SDK's test plays a game B owns with `SeatPlayer`s over `engine_channel("A,B")` (what
`boulevard play` and matchmaking's bots use) while `boulevard watch` follows it with
BOULEVARD_ENGINE_TARGET="A,B"; the seats pause at a version, B's counters show every move,
then B stops and the same seats and the same watch finish the game through A. And
`boulevard play --engine A,B` plays a matchmade game through whichever replica owns it."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from prometheus_client.parser import text_string_to_metric_families

from boulevard.api.v1 import engine_connect, engine_pb2, engine_pb2_grpc
from boulevard.contract.routing import owner
from boulevard.games import get_game
from boulevard.messaging.server import free_port
from boulevard.platform.replicas import engine_channel
from boulevard.seats.player import SeatPlayer
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


async def owned_by(b: str, a: str) -> engine_pb2.CreateGameResponse:
    """A two-seat Las Vegas game (seeds revealed) whose id B owns, made on A (as a call
    without a game id may be), so A caches its opening."""
    async with grpc.aio.insecure_channel(a) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        for _ in range(20):  # half the game ids are B's
            game = await create(stub, "las_vegas", 2)
            if owner(game.game_id, [a, b]) == b:
                return game
    raise AssertionError("no game id owned by B in 20")


def moves_made(env: dict[str, str]) -> float:
    """The engine's count of moves accepted: SubmitAction calls (the gateway's) and
    SubmitActions messages (the seats' streams, counted per message)."""
    return calls(env, "SubmitAction") + calls(env, "SubmitActions")


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


async def move(
    client: engine_connect.EngineServiceClient, game_id: str, tokens: list[str]
) -> tuple[int, int]:
    """One move through the gateway by the first seat to act (its first legal action), as
    a client makes it: ABORTED (it decided on a version the game has left) means read the
    game again and decide again. The game's version after it, and the ABORTED answers."""
    for aborted in range(3):
        game = await client.get_game(engine_pb2.GetGameRequest(game_id=game_id))
        seat = game.to_act[0]
        legal = await client.list_legal_actions(
            engine_pb2.ListLegalActionsRequest(game_id=game_id, player_token=tokens[seat])
        )
        request = signed_submit(
            game_id, tokens[seat], seat, seat_key(seat), legal.actions[0], legal.version
        )
        try:
            done = await client.submit_action(request)
        except ConnectError as err:
            if err.code is not Code.ABORTED:
                raise
            continue
        return int(done.version), aborted
    raise AssertionError("ABORTED three times in a row")


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
            game = await owned_by(b, a)
            game_id, tokens = game.game_id, list(game.player_tokens)
            before = {m: calls(replica_b.env, m) for m in METHODS}
            async with engine_connect.EngineServiceClient(gateway.url) as client:
                version = 0
                for _ in range(3):
                    version, aborted = await move(client, game_id, tokens)
                    assert aborted == 0  # one replica serves the game: no race to lose
                # Every call of the game reached B (B serves no one else). A's counters
                # are not checked: bots of other tests' games may still be moving there.
                assert {m: calls(replica_b.env, m) - before[m] for m in METHODS} == {
                    m: 3 for m in METHODS
                }

                replica_b.stop()
                at_stop = calls(platform.env, "SubmitAction")
                # B is down: only A can answer these. A still caches the game as it was
                # made: its first answers come from that copy, and the move decided on
                # them is ABORTED once; that drops the copy, and A reads the log.
                lost = 0
                for _ in range(3):
                    after, aborted = await move(client, game_id, tokens)
                    assert after > version
                    version, lost = after, lost + aborted
                assert lost <= 1
                assert calls(platform.env, "SubmitAction") - at_stop >= 3

        try:
            asyncio.run(run())
        except ConnectError:
            print(replica_b.log()[-3000:])
            raise
    finally:
        gateway.stop()


PAUSE_AT = 12  # the version from which the SDK's seats wait until B is stopped


def cli(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "boulevard.cli.main", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_an_sdk_and_cli_games_calls_reach_its_owner_and_it_plays_on_when_the_owner_stops(
    platform: Platform, replica_b: ServiceProcess
) -> None:
    a, b = platform.address("engine"), replica_b.address
    routed_env = {**platform.env, "BOULEVARD_ENGINE_TARGET": f"{a},{b}"}
    las_vegas = get_game("las_vegas")

    async def run() -> None:
        game = await owned_by(b, a)
        game_id = game.game_id
        asked = calls(replica_b.env, "GetGame")
        watch = cli(routed_env, "watch", game_id, "--speed", "0")
        try:
            # The CLI routes by the same list: its first call (GetGame) reaches B.
            for _ in range(200):
                if calls(replica_b.env, "GetGame") > asked:
                    break
                await asyncio.sleep(0.1)
            assert calls(replica_b.env, "GetGame") == asked + 1
            await play(game_id, list(game.player_tokens))
            said, _ = await asyncio.to_thread(watch.communicate, timeout=60)
        finally:
            if watch.poll() is None:
                watch.kill()
                watch.communicate()
        # The spectator's stream broke with B and went on through A, to the end.
        assert watch.returncode == 0, said
        assert "game over —" in said, said

    async def play(game_id: str, tokens: list[str]) -> None:
        go_on, paused = asyncio.Event(), asyncio.Event()

        def person(seat: int) -> Any:
            """The game's bot as a `Chooser` that waits, from PAUSE_AT on, until B is
            stopped, then looks again (None): what a person leaving the keyboard does."""
            bot, rng = las_vegas.bots["heuristic"], random.Random(seat)

            async def choose(view: Any, commands: Any, version: int) -> Any:
                if version >= PAUSE_AT and not go_on.is_set():
                    paused.set()
                    await go_on.wait()
                    return None
                return bot(view, commands, seat, rng)

            return choose

        before_moves = moves_made(replica_b.env)
        async with engine_channel(f"{a},{b}") as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            players = [
                SeatPlayer(
                    stub,
                    game_id,
                    "las_vegas",
                    seat,
                    token,
                    las_vegas.bots["heuristic"],
                    random.Random(seat),
                    seat_key(seat),
                    choose=person(seat),
                )
                for seat, token in enumerate(tokens)
            ]
            playing = asyncio.gather(*(p.play() for p in players))
            try:
                await asyncio.wait_for(asyncio.shield(paused.wait()), 30)
                # The game stands still (its seat to act is choosing): every move so far
                # was a SubmitAction B served (B serves no one else), none went to A.
                moved = sum(p.moves for p in players)
                assert moved > 0
                assert moves_made(replica_b.env) - before_moves == moved
                # The CLI's calls go to the owner too: `game show`'s GetGame reached B.
                shown = calls(replica_b.env, "GetGame")
                show = cli(routed_env, "game", "show", game_id, "--json")
                out, _ = await asyncio.to_thread(show.communicate, timeout=30)
                assert show.returncode == 0, out
                assert calls(replica_b.env, "GetGame") == shown + 1

                await asyncio.to_thread(replica_b.stop)
                at_stop = moves_made(platform.env)
                go_on.set()
                await asyncio.wait_for(asyncio.shield(playing), 60)
            finally:
                playing.cancel()
                await asyncio.gather(playing, return_exceptions=True)
            assert sum(p.moves for p in players) > moved
            assert moves_made(platform.env) - at_stop >= sum(p.moves for p in players) - moved
            got = await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id))
            assert got.status == engine_pb2.GAME_STATUS_FINISHED

    try:
        asyncio.run(run())
    except BaseException:
        print(replica_b.log()[-3000:])
        raise


@pytest.mark.timeout(300)
async def test_boulevard_play_given_the_replicas_plays_through_its_games_owner(
    platform: Platform, replica_b: ServiceProcess
) -> None:
    """`boulevard play --engine A,B`: the screen opens its engine channel before
    matchmaking has seated it in a game, then every call of that game goes to the game's
    owner. B serves no one else (the shared platform's bots call A), so B's count of
    moves says where the person's went."""
    from boulevard.cli.play import PlayApp
    from tests.e2e.test_play import SIZE
    from tests.support.identity import mint

    a, b = platform.address("engine"), replica_b.address
    before = moves_made(replica_b.env)
    player = f"person-{uuid.uuid4().hex[:6]}"
    app = PlayApp(
        "las_vegas",
        player,
        3,
        token=mint(player, ("player",), ttl=3600),
        matchmaking=platform.address("matchmaking"),
        engine=f"{a},{b}",
        dice=platform.address("dice"),
        bot_fill=1,
    )
    moves = 0
    deadline = time.monotonic() + 240
    async with app.run_test(size=SIZE) as pilot:
        while not app.finished:
            assert time.monotonic() < deadline, f"no end; last status: {app.last_status}"
            assert not app.failed, app.last_status
            if app.choices:
                await pilot.press("s")  # the bot's suggestion
                await pilot.press("enter")
                moves += 1
            await pilot.pause(0.02)
        while app.dice_ok is None and time.monotonic() < deadline:
            await pilot.pause(0.1)
        assert app.dice_ok, app.dice_verdict
    assert moves > 0
    served = moves_made(replica_b.env) - before
    if owner(app.game_id, [a, b]) == b:
        assert served >= 1, "the owner B served none of the person's moves"
    else:
        assert served == 0, f"B served {served} moves of a game A owns"
