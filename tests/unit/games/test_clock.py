"""The clock function (boulevard.games.clock): property tests over random logs and times."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from boulevard.games import clock
from boulevard.games.base import GameConfig, GameCreated, PlayerSeat
from boulevard.games.clock import ClockError, ClockKind, TimeControl
from boulevard.games.codec import Codec

SEATS = 4


@dataclass(frozen=True)
class Step:
    """One envelope of a made-up log: `dt` ms after the previous one; `mover` moved in it
    (a CommandAccepted), and afterwards the game asks `asked` to act."""

    dt: int
    asked: frozenset[int]
    mover: int | None
    timeout: bool = False  # the envelope times out the first overdue seat, if any


controls = st.one_of(
    st.builds(
        TimeControl,
        kind=st.just(ClockKind.REAL_TIME),
        base_ms=st.integers(1, 600_000),
        increment_ms=st.integers(0, 30_000),
    ),
    st.builds(
        TimeControl,
        kind=st.just(ClockKind.TURN_BASED),
        per_move_ms=st.integers(1, 86_400_000),
        reserve_ms=st.integers(0, 3_600_000),
    ),
)
seat_sets = st.frozensets(st.integers(0, SEATS - 1), max_size=SEATS)
steps = st.lists(
    st.builds(
        Step,
        dt=st.one_of(st.just(0), st.integers(0, 200_000), st.integers(0, 10**8)),
        asked=seat_sets,
        mover=st.one_of(st.none(), st.integers(0, SEATS - 1)),
        timeout=st.booleans(),
    ),
    max_size=40,
)


def fold(control: TimeControl, log: list[Step]) -> tuple[clock.Clocks, frozenset[int]]:
    """The clocks after `log`, as the engine and the audit fold them: each envelope's time
    first (charged to the seats asked after the one before), then what it records."""
    clocks = clock.start(control, SEATS, 1_000)
    asked: frozenset[int] = frozenset()
    for step in log:
        clocks = clock.elapse(clocks, clocks.time_ms + step.dt, asked)
        if step.timeout:
            due = clock.overdue(clocks, asked, clocks.time_ms)
            if due:
                clocks = clock.timed_out(clocks, due[0][0])
        elif step.mover is not None:
            clocks = clock.moved(clocks, step.mover)
        asked = step.asked
    return clocks, asked


@given(controls, steps, st.integers(0, 10**9))
def test_remaining_time_is_never_negative(
    control: TimeControl, log: list[Step], later: int
) -> None:
    clocks, asked = fold(control, log)
    for seat in clocks.seats:
        assert seat.allowance_ms >= 0
        assert seat.bank_ms >= 0
    for time in clock.seat_times(clocks, asked, clocks.time_ms + later):
        assert time.remaining_ms >= 0


@given(controls, steps, seat_sets, st.integers(1, 10**8))
def test_only_the_seats_asked_to_act_have_a_running_clock(
    control: TimeControl, log: list[Step], asked: frozenset[int], dt: int
) -> None:
    before, _ = fold(control, log)
    after = clock.elapse(before, before.time_ms + dt, asked)
    for s in range(SEATS):
        was, now = before.seats[s], after.seats[s]
        if s in asked and not was.absent:
            assert now.remaining_ms == max(0, was.remaining_ms - dt)
        else:
            assert now == was, f"seat {s} was not asked to act, yet its clock moved"


@given(controls, steps)
def test_the_increment_is_added_once_per_move(control: TimeControl, log: list[Step]) -> None:
    """Against a model that counts: a seat's time is what it started with, plus one
    increment per move, minus the time it was asked to act (while it never ran out)."""
    clocks = clock.start(control, SEATS, 0)
    asked: frozenset[int] = frozenset()
    for step in log:
        before = clocks
        clocks = clock.elapse(clocks, clocks.time_ms + step.dt, asked)
        if step.mover is not None:
            clocks = clock.moved(clocks, step.mover)
            was = clocks.seats[step.mover]
            spent = (
                before.seats[step.mover].remaining_ms
                - clock.elapse(before, before.time_ms + step.dt, asked)
                .seats[step.mover]
                .remaining_ms
            )
            assert was.moves == before.seats[step.mover].moves + 1
            assert was.allowance_ms == control.per_move_ms
            assert was.bank_ms == min(
                before.seats[step.mover].bank_ms
                - max(0, spent - before.seats[step.mover].allowance_ms)
                + control.increment_ms,
                clock.MAX_CLOCK_MS,
            )
        asked = step.asked
    moves = [0] * SEATS
    for step in log:
        if step.mover is not None:
            moves[step.mover] += 1
    assert [c.moves for c in clocks.seats] == moves


@given(controls, steps)
def test_real_time_is_base_plus_increments_minus_time_asked(
    control: TimeControl, log: list[Step]
) -> None:
    if control.kind is not ClockKind.REAL_TIME:
        return
    clocks = clock.start(control, SEATS, 0)
    asked: frozenset[int] = frozenset()
    ran = [0] * SEATS
    out = [False] * SEATS  # the seat reached zero at some point: the model stops there
    for step in log:
        for s in asked:
            ran[s] += step.dt
        clocks = clock.elapse(clocks, clocks.time_ms + step.dt, asked)
        for s in range(SEATS):
            out[s] = out[s] or clocks.seats[s].remaining_ms == 0
        if step.mover is not None:
            clocks = clock.moved(clocks, step.mover)
        asked = step.asked
    for s in range(SEATS):
        moves = clocks.seats[s].moves
        if not out[s] and control.base_ms + control.increment_ms * moves <= clock.MAX_CLOCK_MS:
            assert clocks.seats[s].remaining_ms == (
                control.base_ms + control.increment_ms * moves - ran[s]
            )


@given(controls, steps, st.integers(0, 10**9))
def test_a_deadline_is_when_the_remaining_time_reaches_zero(
    control: TimeControl, log: list[Step], later: int
) -> None:
    clocks, asked = fold(control, log)
    now = clocks.time_ms + later
    due = dict(clock.overdue(clocks, asked, now))
    for t in clock.seat_times(clocks, asked, now):
        deadline = clock.deadline(clocks, t.seat, asked)
        assert t.running == (deadline is not None)
        if deadline is None:
            assert t.seat not in due
            continue
        assert t.deadline_unix_ms == deadline
        assert t.remaining_ms == max(0, deadline - now)
        assert (t.seat in due) == (deadline <= now)
        if deadline < clocks.time_ms:  # it ran out earlier and stays where it ran out
            assert clocks.seats[t.seat].remaining_ms == 0
            assert deadline == clocks.seats[t.seat].ran_out_ms
            continue
        # Folding up to the deadline leaves exactly nothing, and a moment before, something.
        at = clock.elapse(clocks, deadline, asked)
        assert at.seats[t.seat].remaining_ms == 0
        assert at.seats[t.seat].ran_out_ms == deadline
        if deadline > clocks.time_ms:
            assert clock.elapse(clocks, deadline - 1, asked).seats[t.seat].remaining_ms == 1


@given(controls, steps)
def test_an_absent_seat_clock_stays_stopped_until_it_is_reclaimed(
    control: TimeControl, log: list[Step]
) -> None:
    clocks, _ = fold(control, log)
    out = clock.timed_out(clocks, 2)
    assert clock.deadline(out, 2, {0, 1, 2, 3}) is None
    assert clock.elapse(out, out.time_ms + 5_000, {2}).seats[2] == out.seats[2]
    back = clock.reclaimed(out, 2)
    assert not back.seats[2].absent
    assert back.seats[2].allowance_ms == control.per_move_ms
    assert clock.deadline(back, 2, {2}) == back.time_ms + back.seats[2].remaining_ms


def test_turn_based_spends_the_move_then_the_reserve() -> None:
    day, hour = 86_400_000, 3_600_000
    control = TimeControl(ClockKind.TURN_BASED, per_move_ms=day, reserve_ms=2 * hour)
    clocks = clock.start(control, 2, 0)
    assert clock.deadline(clocks, 0, {0}) == day + 2 * hour
    clocks = clock.elapse(clocks, day + hour, {0})
    assert (clocks.seats[0].allowance_ms, clocks.seats[0].bank_ms) == (0, hour)
    clocks = clock.moved(clocks, 0)  # the next move has its full day again, the reserve not
    assert clock.deadline(clocks, 0, {0}) == day + hour + day + hour
    assert clocks.seats[1].remaining_ms == day + 2 * hour  # seat 1 was never asked


def test_real_time_ten_minutes_plus_twenty_seconds() -> None:
    control = TimeControl(ClockKind.REAL_TIME, base_ms=600_000, increment_ms=20_000)
    clocks = clock.start(control, 2, 0)
    clocks = clock.moved(clock.elapse(clocks, 30_000, {0}), 0)
    assert clocks.seats[0].remaining_ms == 600_000 - 30_000 + 20_000
    assert control.describe() == "10 min + 20 s"
    tb = TimeControl(ClockKind.TURN_BASED, per_move_ms=86_400_000, reserve_ms=7_200_000)
    assert tb.describe() == "1 day per move (+ 2 h reserve)"


def test_time_running_backwards_is_refused() -> None:
    clocks = clock.start(TimeControl(ClockKind.REAL_TIME, base_ms=1000), 2, 5_000)
    with pytest.raises(ClockError, match="before the previous"):
        clock.elapse(clocks, 4_999, {0})


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"kind": ClockKind.REAL_TIME}, "needs a base"),
        ({"kind": ClockKind.REAL_TIME, "base_ms": 1, "per_move_ms": 5}, "no per-move"),
        ({"kind": ClockKind.TURN_BASED}, "needs a time per move"),
        ({"kind": ClockKind.TURN_BASED, "per_move_ms": 1, "base_ms": 5}, "no base"),
        ({"kind": ClockKind.REAL_TIME, "base_ms": -1}, "0.."),
        ({"kind": ClockKind.REAL_TIME, "base_ms": clock.MAX_CLOCK_MS + 1}, "30 days"),
    ],
)
def test_a_time_control_that_makes_no_sense_is_refused(
    kwargs: dict[str, object], problem: str
) -> None:
    with pytest.raises(ClockError, match=problem):
        TimeControl(**kwargs)  # type: ignore[arg-type]


def test_a_game_created_without_a_clock_encodes_as_it_always_did() -> None:
    """Stored GameCreated events re-encode to their stored bytes (the audit compares)."""
    codec = Codec(())
    created = GameCreated("las_vegas", GameConfig(2), (PlayerSeat(0, "a"), PlayerSeat(1, "b")), "c")
    assert b"time_control" not in codec.dumps(created)
    timed = GameCreated(
        "las_vegas",
        GameConfig(2),
        created.seats,
        "c",
        time_control=TimeControl(ClockKind.TURN_BASED, per_move_ms=5_000),
    )
    assert codec.loads(codec.dumps(timed)) == timed
    assert b'"time_control":{' in codec.dumps(timed)


def test_a_passed_deadline_stays_where_it_was_when_more_envelopes_follow() -> None:
    """Seat 0's time runs out while seat 1 plays on (both asked): the timeout recorded later
    names the instant it ran out, not the later envelope's time."""
    clocks = clock.start(TimeControl(ClockKind.REAL_TIME, base_ms=1_000), 2, 0)
    clocks = clock.elapse(clocks, 1_500, {0, 1})
    clocks = clock.elapse(clocks, 4_000, {0, 1})
    assert clock.deadline(clocks, 0, {0, 1}) == 1_000
    assert clock.overdue(clocks, {0, 1}, 4_000) == [(0, 1_000), (1, 1_000)]
    assert clock.timed_out(clocks, 0).seats[0].ran_out_ms == 1_000
