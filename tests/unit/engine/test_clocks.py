"""Clocks in the engine core (in-memory store, a test clock): a seat that never moves is timed
out at its deadline, once, also by two replicas and after a restart; the platform's bot plays
it to the end; a move after the deadline is refused; and `audit game` passes the log."""

from __future__ import annotations

import random
import uuid

import pytest

from boulevard.audit.game_log import audit_game_log
from boulevard.eventlog.store import InMemoryEventStore
from boulevard.games import REGISTRY
from boulevard.games.base import CommandAccepted, SeatTimedOut
from boulevard.games.clock import ClockKind, TimeControl
from boulevard.games.codec import Codec
from boulevard.platform.auth import verify_token
from boulevard.platform.errors import FailedPrecondition
from services.engine.chance import LocalChance
from services.engine.engine import Engine, MemoryKeyValue
from tests.unit.engine.test_engine_core import KEY, seats, submit

CONTROL = TimeControl(ClockKind.REAL_TIME, base_ms=3_000, increment_ms=500)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def engine_on(store: InMemoryEventStore, clock: Clock, snapshots: MemoryKeyValue) -> Engine:
    return Engine(
        store,
        LocalChance(random.Random(7)),
        snapshots,
        KEY,
        snapshot_every=7,
        clock=clock,
    )


async def play_others(engine: Engine, game_id: str, tokens: tuple[str, ...], absent: int) -> None:
    """Every seat but `absent` moves at once when asked (100 ms apart); the sweeper plays
    the absent seat; to the end."""
    rng = random.Random(3)
    for _ in range(5_000):
        session = await engine.load(game_id)
        if session.finished is not None:
            return
        asked = [s for s in session.to_act() if s != absent]
        if not asked:
            engine.clock.now += 100  # type: ignore[attr-defined]
            await engine.sweep_clocks()
            continue
        seat = asked[0]
        legal = session.game.legal_commands(session.state, seat)
        command = session.game.bots["random"](
            session.game.view(session.state, seat), legal, seat, rng
        )
        engine.clock.now += 100  # type: ignore[attr-defined]
        claims = verify_token(KEY, tokens[seat])
        await submit(engine, game_id, claims, command, session.version, uuid.uuid4().hex)
    raise AssertionError("the game did not finish")


def events_of(store: InMemoryEventStore, game_id: str) -> list[object]:
    from boulevard.api.v1 import events_pb2

    codec = Codec(())
    out = []
    for r in store._streams[game_id]:
        env = events_pb2.EventEnvelope.FromString(r.data)
        if env.type in ("SeatTimedOut", "CommandAccepted"):
            out.append(codec.loads(env.payload))
    return out


@pytest.mark.parametrize("game_name", sorted(REGISTRY))  # each game's absence policy
async def test_a_seat_that_never_moves_times_out_and_the_bot_finishes(game_name: str) -> None:
    store, clock, snaps = InMemoryEventStore(), Clock(), MemoryKeyValue()
    engine = engine_on(store, clock, snaps)
    created = await engine.create_game("r", game_name, seats(3), time_control=CONTROL)
    gid = created.game_id
    session = await engine.load(gid)
    (stalled,) = session.to_act()[:1]
    due = engine.clock_due[gid]
    assert due == clock.now + CONTROL.base_ms  # nobody was asked before the first move
    clock.now = due - 1
    assert await engine.sweep_clocks() == 0
    clock.now = due + 40  # the sweeper comes a little late
    assert await engine.sweep_clocks() == 1
    timeouts = [e for e in events_of(store, gid) if isinstance(e, SeatTimedOut)]
    assert timeouts == [SeatTimedOut(stalled, due, engine.stand_in_key.public_hex)]
    # A move of the seat itself is refused now: its time ran out.
    claims = verify_token(KEY, created.tokens[stalled])
    session = await engine.load(gid)
    legal = session.game.legal_commands(session.state, stalled)
    if legal:
        with pytest.raises(FailedPrecondition, match="timed out"):
            await submit(engine, gid, claims, legal[0], 0, "late")
    await play_others(engine, gid, created.tokens, stalled)
    stand_ins = [e for e in events_of(store, gid) if isinstance(e, CommandAccepted) and e.stand_in]
    assert stand_ins and all(e.seat == stalled for e in stand_ins)
    log = [r.data for r in await store.read(gid)]
    report = audit_game_log(gid, log, finished=True)
    assert report.timeouts == 1 and report.stand_in_moves == len(stand_ins)
    # The money of the absent seat stayed its own: the bot's moves are the seat's.
    assert all(e.player_id == f"player-{stalled}" for e in stand_ins)


async def test_two_replicas_and_a_restart_record_the_timeout_once() -> None:
    store, clock, snaps = InMemoryEventStore(), Clock(), MemoryKeyValue()
    one = engine_on(store, clock, snaps)
    created = await one.create_game("r", "las_vegas", seats(2), time_control=CONTROL)
    gid = created.game_id
    due = one.clock_due[gid]
    # A second replica, and one started after the first "crashed": each rebuilds the
    # deadline from the log when it loads the game (the games index names it after a start).
    two = engine_on(store, clock, snaps)
    three = engine_on(store, clock, snaps)
    await two.load(gid)
    three.clock_due[gid] = 0
    assert two.clock_due[gid] == due
    clock.now = due + 5
    await two.sweep_clocks()
    await one.sweep_clocks()
    await three.sweep_clocks()
    timeouts = [e for e in events_of(store, gid) if isinstance(e, SeatTimedOut)]
    assert [t.deadline_unix_ms for t in timeouts] == [due]
    audit_game_log(gid, [r.data for r in await store.read(gid)])


async def test_the_sweeper_late_by_hours_still_names_the_deadline_passed() -> None:
    store, clock, snaps = InMemoryEventStore(), Clock(), MemoryKeyValue()
    engine = engine_on(store, clock, snaps)
    created = await engine.create_game("r", "las_vegas", seats(2), time_control=CONTROL)
    due = engine.clock_due[created.game_id]
    clock.now = due + 3 * 3600 * 1000  # the engine was down meanwhile
    fresh = engine_on(store, clock, snaps)
    fresh.clock_due[created.game_id] = 0
    await fresh.sweep_clocks()
    (timeout,) = [e for e in events_of(store, created.game_id) if isinstance(e, SeatTimedOut)]
    assert timeout.deadline_unix_ms == due
    audit_game_log(created.game_id, [r.data for r in await store.read(created.game_id)])


async def test_a_game_without_a_clock_has_no_deadline() -> None:
    store, clock, snaps = InMemoryEventStore(), Clock(), MemoryKeyValue()
    engine = engine_on(store, clock, snaps)
    created = await engine.create_game("r", "las_vegas", seats(2))
    assert created.game_id not in engine.clock_due
    clock.now += 10**9
    assert await engine.sweep_clocks() == 0


async def test_a_turn_based_seat_takes_its_place_back_and_finishes() -> None:
    from boulevard.audit.signing import reclaim_signing_bytes
    from boulevard.platform.errors import Aborted, PermissionDenied
    from tests.unit.engine.test_engine_core import SEAT_KEYS

    store, clock, snaps = InMemoryEventStore(), Clock(), MemoryKeyValue()
    engine = engine_on(store, clock, snaps)
    control = TimeControl(ClockKind.TURN_BASED, per_move_ms=2_000, reserve_ms=500)
    created = await engine.create_game("r", "las_vegas", seats(2), time_control=control)
    gid = created.game_id
    session = await engine.load(gid)
    (stalled,) = session.to_act()[:1]
    clock.now = engine.clock_due[gid] + 1
    await engine.sweep_clocks()  # timed out; the bot plays its turn, then it is seat 1's
    claims = verify_token(KEY, created.tokens[stalled])
    session = await engine.load(gid)
    version = session.version
    with pytest.raises(PermissionDenied, match="does not verify"):
        bad = SEAT_KEYS[5].sign(reclaim_signing_bytes(gid, stalled, version))
        await engine.reclaim_seat(gid, claims, version, bad)
    with pytest.raises(Aborted):
        old = SEAT_KEYS[stalled].sign(reclaim_signing_bytes(gid, stalled, version - 1))
        await engine.reclaim_seat(gid, claims, version - 1, old)
    signature = SEAT_KEYS[stalled].sign(reclaim_signing_bytes(gid, stalled, version))
    back = await engine.reclaim_seat(gid, claims, version, signature)
    assert back.version == version + 1
    again = await engine.reclaim_seat(gid, claims, version, signature)  # a retry
    assert again.version == back.version
    session = await engine.load(gid)
    assert session.clocks is not None and not session.clocks.seats[stalled].absent
    await play_others(engine, gid, created.tokens, absent=-1)  # everyone plays, itself too
    log = [r.data for r in await store.read(gid)]
    report = audit_game_log(gid, log, finished=True)
    assert report.timeouts == 1


async def test_a_real_time_seat_cannot_be_taken_back() -> None:
    from boulevard.audit.signing import reclaim_signing_bytes
    from tests.unit.engine.test_engine_core import SEAT_KEYS

    store, clock, snaps = InMemoryEventStore(), Clock(), MemoryKeyValue()
    engine = engine_on(store, clock, snaps)
    created = await engine.create_game("r", "las_vegas", seats(2), time_control=CONTROL)
    gid = created.game_id
    session = await engine.load(gid)
    (stalled,) = session.to_act()[:1]
    clock.now = engine.clock_due[gid] + 1
    await engine.sweep_clocks()
    version = (await engine.load(gid)).version
    signature = SEAT_KEYS[stalled].sign(reclaim_signing_bytes(gid, stalled, version))
    with pytest.raises(FailedPrecondition, match="turn-based"):
        await engine.reclaim_seat(
            gid, verify_token(KEY, created.tokens[stalled]), version, signature
        )


async def test_a_table_whose_humans_are_all_gone_finishes_with_bots() -> None:
    store, clock, snaps = InMemoryEventStore(), Clock(), MemoryKeyValue()
    engine = engine_on(store, clock, snaps)
    created = await engine.create_game("r", "lords_of_vegas", seats(3), time_control=CONTROL)
    gid = created.game_id
    for _ in range(100):  # every seat's clock runs out in turn; nobody ever moves
        session = await engine.load(gid)
        if session.finished is not None:
            break
        clock.now += CONTROL.base_ms + 1
        await engine.sweep_clocks()
    session = await engine.load(gid)
    assert session.finished is not None
    assert session.clocks is not None and all(c.absent for c in session.clocks.seats)
    report = audit_game_log(gid, [r.data for r in await store.read(gid)], finished=True)
    assert report.timeouts == 3 and report.stand_in_moves > 0


async def test_the_reclaim_receipt_carries_the_time_the_engine_took_the_seat_back() -> None:
    from boulevard.audit.signing import reclaim_signing_bytes
    from tests.unit.engine.test_engine_core import SEAT_KEYS

    store, clock, snaps = InMemoryEventStore(), Clock(), MemoryKeyValue()
    engine = engine_on(store, clock, snaps)
    control = TimeControl(ClockKind.TURN_BASED, per_move_ms=2_000)
    created = await engine.create_game("r", "las_vegas", seats(2), time_control=control)
    gid = created.game_id
    (stalled,) = (await engine.load(gid)).to_act()[:1]
    clock.now = engine.clock_due[gid] + 1
    await engine.sweep_clocks()
    clock.now += 7
    version = (await engine.load(gid)).version
    signature = SEAT_KEYS[stalled].sign(reclaim_signing_bytes(gid, stalled, version))
    back = await engine.reclaim_seat(
        gid, verify_token(KEY, created.tokens[stalled]), version, signature
    )
    assert back.receipt.version == back.version
    assert back.receipt.time_unix_ms == clock.now
