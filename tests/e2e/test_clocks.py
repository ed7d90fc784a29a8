"""Game clocks on the real services (test clocks of a few seconds): a seat that never moves
is timed out at its deadline and the platform's bot finishes its game, and every audit
passes; the same with the engine SIGKILLed between the deadline and the sweep; and a
timeout forged before its deadline with the engine's own NATS identity fails `audit game`
at its version."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import time
import uuid
from pathlib import Path

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2
from boulevard.audit.evidence import TIMEOUT, Accepted, Evidence, receipt_from_pb
from boulevard.contract.clocks import parse_time_control, time_control_to_proto
from boulevard.fairness import client_seed_commitment
from boulevard.games import get_game
from boulevard.games.base import SeatTimedOut
from boulevard.games.codec import Codec
from boulevard.seats.player import SeatPlayer, reveal_seed
from tests.e2e.conftest import Platform
from tests.e2e.test_audit_holes import append_as_engine
from tests.e2e.test_audit_report import audit
from tests.e2e.test_game_audit import audit_game, stored_log
from tests.e2e.test_games import OPERATOR_MD, seed_of, wait_reconciled
from tests.support.keys import seat_key

pytestmark = pytest.mark.e2e

GAME = "las_vegas"  # one seat asked at a time: the stalled seat is the only clock running


async def create_timed(
    stub: engine_pb2_grpc.EngineServiceStub,
    players: int,
    control: str,
    names: list[str] | None = None,
) -> engine_pb2.CreateGameResponse:
    request_id = uuid.uuid4().hex
    created: engine_pb2.CreateGameResponse = await stub.CreateGame(
        engine_pb2.CreateGameRequest(
            request_id=request_id,
            game=GAME,
            seats=[
                engine_pb2.SeatAssignment(
                    seat=i,
                    player_id=names[i] if names else f"p{i}",
                    client_seed_commitment=client_seed_commitment(seed_of(request_id, i)),
                    public_key=seat_key(i).public_hex,
                )
                for i in range(players)
            ],
            time_control=time_control_to_proto(parse_time_control(control)),  # type: ignore[arg-type]
        ),
        metadata=OPERATOR_MD,
    )
    for seat, token in enumerate(created.player_tokens):
        await reveal_seed(stub, created.game_id, token, seed_of(request_id, seat))
    return created


async def first_to_act(stub: engine_pb2_grpc.EngineServiceStub, game_id: str) -> int:
    for _ in range(100):
        game = await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id))
        if game.to_act:
            return int(game.to_act[0])
        await asyncio.sleep(0.05)
    raise AssertionError("nobody is asked to act")


async def play_all_but(
    stub: engine_pb2_grpc.EngineServiceStub,
    created: engine_pb2.CreateGameResponse,
    absent: int,
) -> None:
    """Every seat but `absent` plays its heuristic bot to the end."""
    game = get_game(GAME)
    players = [
        SeatPlayer(
            stub,
            created.game_id,
            GAME,
            seat,
            token,
            game.bots["heuristic"],
            random.Random(seat),
            seat_key(seat),
        )
        for seat, token in enumerate(created.player_tokens)
        if seat != absent
    ]
    await asyncio.wait_for(asyncio.gather(*(p.play() for p in players)), 120)


def timeouts_in(log: list[bytes]) -> list[tuple[int, SeatTimedOut]]:
    envs = [events_pb2.EventEnvelope.FromString(d) for d in log]
    codec = Codec(())
    return [(int(e.time_unix_ms), codec.loads(e.payload)) for e in envs if e.type == "SeatTimedOut"]


def stand_in_moves(log: list[bytes]) -> list[dict[str, object]]:
    envs = [events_pb2.EventEnvelope.FromString(d) for d in log]
    return [
        p
        for e in envs
        if e.type == "CommandAccepted" and (p := json.loads(e.payload)).get("stand_in")
    ]


def all_audits_pass(platform: Platform, game_id: str, timed_out: int = 1) -> None:
    """Every audit of the game passes, and the game audit counts `timed_out` time-outs at
    their deadlines (the log's `SeatTimedOut` events)."""
    result = audit_game(platform, game_id)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{timed_out} seat(s) timed out at their deadlines" in result.stdout, result.stdout
    for what in (["dice", game_id], ["ledger", "--game", game_id]):
        done = audit(platform, *what)  # every address from the platform's environment
        assert done.returncode == 0, done.stdout + done.stderr


async def finished_log(platform: Platform, game_id: str) -> list[bytes]:
    async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        for _ in range(600):
            game = await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id))
            if game.status == engine_pb2.GAME_STATUS_FINISHED:
                break
            await asyncio.sleep(0.1)
    reconciled = await wait_reconciled(platform, game_id)
    assert reconciled.reconciled, reconciled.message
    return await stored_log(platform, game_id)


def test_a_seat_that_never_moves_times_out_at_its_deadline_and_the_bot_finishes(
    platform: Platform, tmp_path: Path
) -> None:
    """…and the player stream tells the seat's player it timed out with a receipt the
    engine signed over the log that holds the timeout: kept, it passes the audit."""
    from tests.support.identity import mint

    names = [f"clock{i}-{uuid.uuid4().hex[:6]}" for i in range(3)]

    async def run() -> tuple[str, Evidence]:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create_timed(stub, 3, "2s+2s", names=names)
            stalled = await first_to_act(stub, created.game_id)
            stream = stub.WatchPlayer(
                engine_pb2.WatchPlayerRequest(),
                metadata=(("authorization", f"Bearer {mint(names[stalled], ('player',))}"),),
            )
            game = await stub.GetGame(engine_pb2.GetGameRequest(game_id=created.game_id))
            clocks = {c.seat: c for c in game.clocks}
            assert game.time_control.base_ms == 2000
            assert clocks[stalled].running and not clocks[(stalled + 1) % 3].running
            deadline = clocks[stalled].deadline_unix_ms
            assert 0 < clocks[stalled].remaining_ms <= 2000
            await play_all_but(stub, created, stalled)
            told = await asyncio.wait_for(
                next_of_kind(stream, engine_pb2.PLAYER_EVENT_KIND_TIMED_OUT), 30
            )
            stream.cancel()
            key = await stub.GetEngineKey(engine_pb2.GetEngineKeyRequest())
        receipt = receipt_from_pb(told.receipt)
        assert told.game_id == created.game_id and told.seat == stalled
        assert receipt.verify(bytes.fromhex(key.public_key)) and receipt.time_unix_ms > 0
        log = await finished_log(platform, created.game_id)
        # On a loaded machine a playing seat's 2 s may run out too: its own timeout, with
        # its own stand-in, is no part of what this test checks of the stalled seat's.
        timeouts = timeouts_in(log)
        [(at, timeout)] = [(at, t) for at, t in timeouts if t.seat == stalled]
        assert timeout.deadline_unix_ms == deadline
        assert deadline <= at < deadline + 5_000  # the sweeper came soon after
        moves = stand_in_moves(log)
        assert moves and {m["seat"] for m in moves} == {t.seat for _, t in timeouts}
        return created.game_id, Evidence(created.game_id, stalled, [Accepted(TIMEOUT, receipt)])

    game_id, evidence = asyncio.run(run())
    all_audits_pass(platform, game_id)
    kept = tmp_path / "timed-out.json"
    kept.write_text(evidence.dumps())
    result = audit_game(platform, game_id, "--evidence", str(kept))
    assert result.returncode == 0 and "1 receipts agree" in result.stdout, result.stdout


async def next_of_kind(
    stream: grpc.aio.UnaryStreamCall, kind: int
) -> engine_pb2.WatchPlayerResponse:
    async for update in stream:
        if update.kind == kind:
            return update  # type: ignore[no-any-return]
    raise AssertionError("the player stream ended")


def test_the_engine_killed_between_the_deadline_and_the_sweep(platform: Platform) -> None:
    """The engine dies before the deadline and comes back well after it: the restarted
    engine finds the game in its index, rebuilds the deadline from the log and records the
    timeout naming the deadline that passed, once."""

    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create_timed(stub, 2, "2s+2s")
            stalled = await first_to_act(stub, created.game_id)
            game = await stub.GetGame(engine_pb2.GetGameRequest(game_id=created.game_id))
            deadline = {c.seat: c for c in game.clocks}[stalled].deadline_unix_ms
        platform.services["engine"].kill()
        await asyncio.sleep(max(0.0, deadline / 1000 - time.time()) + 1.5)
        await platform.astart("engine")
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            await play_all_but(engine_pb2_grpc.EngineServiceStub(channel), created, stalled)
        log = await finished_log(platform, created.game_id)
        # The stalled seat timed out once. The other seat's 2 s may run out too on a loaded
        # machine (its first move waits for the restarted engine and the heuristic bot):
        # that is its own timeout, checked by the audit like any other, not this one's.
        timeouts = timeouts_in(log)
        [(at, timeout)] = [(at, t) for at, t in timeouts if t.seat == stalled]
        assert timeout.deadline_unix_ms == deadline
        assert at >= deadline + 1_500
        all_audits_pass(platform, created.game_id, len(timeouts))

    asyncio.run(run())


def test_a_timeout_forged_before_its_deadline_fails_the_audit_at_its_version(
    platform: Platform,
) -> None:
    """The operator, with the engine's NATS identity, records a seat timed out minutes
    before its deadline; the engine (restarted, so it reads the log again) takes the forged
    event as it stands and its bot plays the seat to the end. The finished game's audit
    fails at the forged version."""

    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create_timed(stub, 2, "10m")
            stalled = await first_to_act(stub, created.game_id)
            game = await stub.GetGame(engine_pb2.GetGameRequest(game_id=created.game_id))
            deadline = {c.seat: c for c in game.clocks}[stalled].deadline_unix_ms
            page = await stub.GetGameLog(engine_pb2.GetGameLogRequest(game_id=created.game_id))
        last = page.envelopes[-1]
        forged = events_pb2.EventEnvelope(
            event_id=uuid.uuid4().hex,
            type="SeatTimedOut",
            game_id=created.game_id,
            game=GAME,
            version=last.version + 1,
            time_unix_ms=int(time.time() * 1000),  # minutes before the deadline
            causation_id="clock:timeout",
            correlation_id=created.game_id,
            payload=Codec(()).dumps(SeatTimedOut(stalled, deadline, seat_key(5).public_hex)),
            prev_hash=bytes(last.chain_hash),
        )
        await append_as_engine(platform, created.game_id, forged)
        await platform.arestart("engine")
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            await play_all_but(engine_pb2_grpc.EngineServiceStub(channel), created, stalled)
        await finished_log(platform, created.game_id)
        result = audit_game(platform, created.game_id, "--no-ledger")
        assert result.returncode == 1, result.stdout + result.stderr
        assert f"at version {forged.version}" in result.stdout, result.stdout
        assert "before its deadline" in result.stdout, result.stdout

    asyncio.run(run())


@pytest.mark.timeout(300)
async def test_a_turn_based_player_who_left_comes_back_with_play_resume_and_finishes(
    platform: Platform, tmp_path: Path
) -> None:
    """Seat 0's player leaves (never moves); a day-per-move game, here 3 s per move, times
    the seat out and the platform's bot plays it while seat 1 plays on. The player comes
    back with `boulevard play --resume <game_id>` (its screen, driven by Textual's pilot):
    the seat is taken back with a signed reclaim, the player plays to the end, and the
    game's audit passes with the hand-over in the log."""
    from boulevard.cli.play import PlayApp
    from tests.support.identity import mint

    async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        created = await create_timed(stub, 2, "3s/move")
        stalled = await first_to_act(stub, created.game_id)
        game = get_game(GAME)
        other = 1 - stalled
        others = asyncio.create_task(
            SeatPlayer(
                stub,
                created.game_id,
                GAME,
                other,
                created.player_tokens[other],
                game.bots["heuristic"],
                random.Random(other),
                seat_key(other),
            ).play()
        )
        for _ in range(100):  # the seat's 3 s run out; the bot takes over
            log = await stored_log_live(platform, created.game_id)
            if timeouts_in(log) and stand_in_moves(log):
                break
            await asyncio.sleep(0.2)
        assert timeouts_in(log) and stand_in_moves(log)
        app = PlayApp(
            GAME,
            f"p{stalled}",
            2,
            token=mint(f"p{stalled}", ("player",), ttl=3600),
            matchmaking=platform.address("matchmaking"),
            engine=platform.address("engine"),
            dice=platform.address("dice"),
            ledger=platform.address("ledger"),
            evidence=tmp_path / "evidence.json",
            key=seat_key(stalled),
            resume=created.game_id,
        )
        moves = 0
        deadline = time.monotonic() + 240
        async with app.run_test(size=(150, 44)) as pilot:
            while not app.finished:
                assert time.monotonic() < deadline, f"no end; last status: {app.last_status}"
                assert not app.failed, app.last_status
                if app.choices:
                    await pilot.press("s")
                    await pilot.press("enter")
                    moves += 1
                await pilot.pause(0.02)
            # The screen keeps the evidence after the end: once the seed is revealed and a
            # ledger head covers the game's anchor (signed about a second later). Leaving
            # run_test before then closed the app with no evidence file written.
            while not app.last_status.startswith(("evidence kept", "note: no ledger head")):
                assert time.monotonic() < deadline, f"no evidence; status: {app.last_status}"
                assert not app.failed, app.last_status
                await pilot.pause(0.1)
        await asyncio.wait_for(others, 60)
    assert moves > 0
    log = await finished_log(platform, created.game_id)
    types = [events_pb2.EventEnvelope.FromString(d).type for d in log]
    assert types.count("SeatReclaimed") == 1
    own_moves_after = [
        json.loads(events_pb2.EventEnvelope.FromString(d).payload)
        for d in log[types.index("SeatReclaimed") :]
        if events_pb2.EventEnvelope.FromString(d).type == "CommandAccepted"
    ]
    assert any(m["seat"] == stalled and not m.get("stand_in") for m in own_moves_after)
    result = audit_game(platform, created.game_id)
    assert result.returncode == 0, result.stdout + result.stderr
    # The seat kept the reclaim's receipt with its moves': the evidence passes the audit.
    kept = Evidence.loads((tmp_path / "evidence.json").read_text())
    assert kept.accepted[0].kind == "reclaim", kept.accepted[:2]
    result = audit_game(platform, created.game_id, "--evidence", str(tmp_path / "evidence.json"))
    assert result.returncode == 0, result.stdout + result.stderr


async def stored_log_live(platform: Platform, game_id: str) -> list[bytes]:
    """A running game's log as served (a hidden shuffle re-encoded without its values)."""
    async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
        page = await engine_pb2_grpc.EngineServiceStub(channel).GetGameLog(
            engine_pb2.GetGameLogRequest(game_id=game_id)
        )
    return [bytes(e.envelope) for e in page.envelopes]


def test_games_mine_tells_a_player_where_it_is_their_turn_across_two_games(
    platform: Platform, tmp_path: object
) -> None:
    """Two games with a clock where one player sits: `boulevard games --mine` (their JWT)
    lists both, the one where it is their turn first, with their time left."""
    from tests.support.identity import mint

    me, other = f"me-{uuid.uuid4().hex[:6]}", f"them-{uuid.uuid4().hex[:6]}"

    async def run() -> tuple[str, str]:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            one = await create_timed(stub, 2, "1d/move", names=[me, other])
            two = await create_timed(stub, 2, "1d/move", names=[other, me])
            first = await first_to_act(stub, one.game_id)
            await first_to_act(stub, two.game_id)
            # Game one: whoever is first; game two: the same seat number, so one of the two
            # games is `me`'s turn and the other is not.
            assert first == await first_to_act(stub, two.game_id)
            mine = one.game_id if first == 0 else two.game_id
            theirs = two.game_id if mine == one.game_id else one.game_id
            return mine, theirs

    mine, theirs = asyncio.run(run())
    done = subprocess.run(
        [
            sys.executable, "-m", "boulevard.cli.main", "games", "--mine", "--json",
            "--token", mint(me, ("player",), ttl=600), "--engine", platform.address("engine"),
        ],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    listed = json.loads(done.stdout)
    assert listed["player_id"] == me
    games = {g["game_id"]: g for g in listed["games"]}
    assert list(games) == [mine, theirs]  # your turn first
    assert games[mine]["your_turn"] and not games[theirs]["your_turn"]
    assert 0 < games[mine]["remaining_ms"] <= 86_400_000
    assert games[mine]["deadline_unix_ms"] and games[theirs]["deadline_unix_ms"] is None
    text = subprocess.run(
        [
            sys.executable, "-m", "boulevard.cli.main", "games", "--mine",
            "--token", mint(me, ("player",), ttl=600), "--engine", platform.address("engine"),
        ],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert (
        "your turn, 23 h 59 min left" in text.stdout or "your turn, 1 d 0 h left" in text.stdout
    ), text.stdout
    assert "your turn in 1" in text.stdout


def test_the_player_stream_tells_each_player_when_it_is_their_turn_across_two_games(
    platform: Platform,
) -> None:
    """Two players at two tables (seated in opposite orders): each one's WatchPlayer stream
    (their JWT only) names both games when it opens, and says YOUR_TURN when a move of the
    other makes it their turn."""
    from tests.support.identity import mint

    a, b = f"a-{uuid.uuid4().hex[:6]}", f"b-{uuid.uuid4().hex[:6]}"

    async def first_messages(
        stub: engine_pb2_grpc.EngineServiceStub, who: str, want: int
    ) -> tuple[grpc.aio.UnaryStreamCall, list[engine_pb2.WatchPlayerResponse]]:
        call = stub.WatchPlayer(
            engine_pb2.WatchPlayerRequest(),
            metadata=(("authorization", f"Bearer {mint(who, ('player',), ttl=600)}"),),
        )
        got = [await asyncio.wait_for(call.read(), 10) for _ in range(want)]
        return call, got

    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            one = await create_timed(stub, 2, "1d/move", names=[a, b])
            two = await create_timed(stub, 2, "1d/move", names=[b, a])
            first = await first_to_act(stub, one.game_id)
            assert first == await first_to_act(stub, two.game_id)
            streams = {}
            for who in (a, b):
                call, opening = await first_messages(stub, who, 2)
                assert {m.game_id for m in opening} == {one.game_id, two.game_id}
                assert all(m.kind == engine_pb2.PLAYER_EVENT_KIND_PLAYING for m in opening)
                # Seat `first` is to act at both tables: that is one of a's games and one of
                # b's, so each player is told it is their turn in exactly one.
                assert sum(m.your_turn for m in opening) == 1, opening
                streams[who] = call
            # Whoever is to act at table one moves until the other seat is asked there.
            game = get_game(GAME)
            mover = first
            token = one.player_tokens[mover]
            player = SeatPlayer(
                stub, one.game_id, GAME, mover, token, game.bots["heuristic"],
                random.Random(1), seat_key(mover),
            )  # fmt: skip
            waiting_for = [a, b][1 - mover]
            for _ in range(20):
                g = await stub.GetGame(engine_pb2.GetGameRequest(game_id=one.game_id))
                if (1 - mover) in g.to_act:
                    break
                await player._act(game)
            told = await asyncio.wait_for(streams[waiting_for].read(), 10)
            assert (told.game_id, told.kind) == (
                one.game_id,
                engine_pb2.PLAYER_EVENT_KIND_YOUR_TURN,
            )
            assert told.your_turn and told.clock.running and told.clock.remaining_ms > 0
            # A few streams per player (each looks at their games twice a second): a's is
            # open, three more are served, the fifth is refused.
            more = [(await first_messages(stub, a, 1))[0] for _ in range(3)]
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await first_messages(stub, a, 1)
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            for call in [*streams.values(), *more]:
                call.cancel()

    asyncio.run(run())
