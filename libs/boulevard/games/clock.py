"""Game clocks: a pure function of a game's log (docs/auditing.md, "Clocks").

A game created with a `TimeControl` gives every seat a clock. The engine, every replica and
every auditor compute the clocks the same way, from nothing but the log: the times the
engine recorded on the envelopes (`EventEnvelope.time_unix_ms`) and the game's state after
each envelope. No clock is read here: the caller says what time it is.

The rules, in full:

- A seat's clock **runs** while the seat is *asked to act*: it is not absent (timed out)
  and the game offers it at least one command (`legal_commands(state, seat)` is not empty;
  `asked_to_act`). All four games offer commands only to the seats whose decision the game
  waits for (the current player, a boss deciding a lay-off, a bidder answering), and none
  while chance is pending or the game is over, so that is whose clock runs. Several seats
  asked at once all run.
- Time passes only between envelopes: the interval from one envelope's time to the next is
  charged to every seat that was running after the first. Envelopes appended together share
  one time, so the seats asked at intermediate versions of one append are never charged.
- A seat's time is two amounts: the current **move's allowance** (turn-based: `per_move_ms`,
  fresh after each of its moves; real time: none) and its **bank** (real time: `base_ms` to
  start with and `increment_ms` added after each of its moves; turn-based: `reserve_ms`,
  never refilled). Time is taken from the allowance first, then from the bank, and never
  below zero.
- A **move** is one accepted command of the seat (a `CommandAccepted`).
- A running seat's **deadline** is the last envelope's time plus its remaining time, or,
  once its time has reached zero, the instant it did (later envelopes do not move it). When it
  passes, the engine records `SeatTimedOut` with that deadline; from then on the seat is
  absent (its clock stops) and the platform's bot plays it. A seat that takes its place back
  (`SeatReclaimed`, turn-based games) starts a fresh move's allowance with what is left of
  its bank.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # base imports this module (GameCreated records a TimeControl)
    from boulevard.games.base import GameDefinition

Seat = int


class ClockKind(StrEnum):
    REAL_TIME = "real_time"  # a bank per seat for the whole game, plus an increment per move
    TURN_BASED = "turn_based"  # a fixed time for each move, plus a small reserve


class ClockError(ValueError):
    """A time control that makes no sense, or a log whose times run backwards."""


# Bounds that keep any arithmetic on a clock far from overflow in every language (int64 ms),
# and a game finishable: at most 30 days per move or per game's bank.
MAX_CLOCK_MS = 30 * 24 * 3600 * 1000


@dataclass(frozen=True, slots=True)
class TimeControl:
    """How much time each seat has (all amounts in milliseconds).

    Real time (`REAL_TIME`): `base_ms` per seat for the whole game, and `increment_ms`
    added after each of the seat's moves (e.g. 10 min + 20 s). Turn-based (`TURN_BASED`):
    `per_move_ms` for each move (e.g. 1 day), and `reserve_ms` to draw on once a move's
    time is spent, never refilled. No clock at all is `GameCreated.time_control = None`."""

    kind: ClockKind
    base_ms: int = 0
    increment_ms: int = 0
    per_move_ms: int = 0
    reserve_ms: int = 0

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem:
            raise ClockError(problem)

    def problem(self) -> str:
        """Why this control is not allowed ("" when it is)."""
        amounts = (self.base_ms, self.increment_ms, self.per_move_ms, self.reserve_ms)
        if any(isinstance(a, bool) or not isinstance(a, int) for a in amounts):
            return "time control amounts are whole milliseconds"
        if any(a < 0 or a > MAX_CLOCK_MS for a in amounts):
            return f"time control amounts are 0..{MAX_CLOCK_MS} ms (30 days)"
        if self.kind is ClockKind.REAL_TIME:
            if self.base_ms <= 0:
                return "a real-time control needs a base time (base_ms > 0)"
            if self.per_move_ms or self.reserve_ms:
                return "a real-time control has a base and an increment, no per-move time"
        elif self.kind is ClockKind.TURN_BASED:
            if self.per_move_ms <= 0:
                return "a turn-based control needs a time per move (per_move_ms > 0)"
            if self.base_ms or self.increment_ms:
                return "a turn-based control has a time per move and a reserve, no base"
        else:
            return f"unknown clock kind {self.kind!r}"
        return ""

    @property
    def start_bank_ms(self) -> int:
        return self.base_ms if self.kind is ClockKind.REAL_TIME else self.reserve_ms

    def describe(self) -> str:
        """In words, for people: "10 min + 20 s", "1 day per move (+ 2 h reserve)"."""
        if self.kind is ClockKind.REAL_TIME:
            text = duration_words(self.base_ms)
            if self.increment_ms:
                text += f" + {duration_words(self.increment_ms)}"
            return text
        text = f"{duration_words(self.per_move_ms)} per move"
        if self.reserve_ms:
            text += f" (+ {duration_words(self.reserve_ms)} reserve)"
        return text


def duration_words(ms: int) -> str:
    """A duration for people, in its largest whole unit: 1 day, 3 h, 10 min, 20 s, 1.5 s."""
    for unit, size in (("day", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            n = ms // size
            return f"{n} {unit}{'s' if unit == 'day' and n != 1 else ''}"
    if ms >= 1000:
        return f"{ms / 1000:g} s"
    return f"{ms} ms"


def _real_time(minutes: int, increment_s: int) -> TimeControl:
    return TimeControl(
        ClockKind.REAL_TIME, base_ms=minutes * 60_000, increment_ms=increment_s * 1000
    )


def _turn_based(days: int, reserve_h: int) -> TimeControl:
    return TimeControl(
        ClockKind.TURN_BASED, per_move_ms=days * 86_400_000, reserve_ms=reserve_h * 3_600_000
    )


# Each game's default control of each kind: what "the game's default" (`--clock default`,
# `TimeControl.game_default`) means, sized to the game's length (the values and why:
# docs/matchmaking.md, "Time controls"). Platform policy, not rules: they live here, not in
# the game packages, so changing one is no new rules version. It changes only games created
# afterwards, since GameCreated records the concrete control.
DEFAULT_CONTROLS: dict[str, dict[ClockKind, TimeControl]] = {
    "las_vegas": {ClockKind.REAL_TIME: _real_time(10, 10), ClockKind.TURN_BASED: _turn_based(1, 0)},
    "long_shot": {ClockKind.REAL_TIME: _real_time(10, 10), ClockKind.TURN_BASED: _turn_based(1, 0)},
    "lords_of_vegas": {
        ClockKind.REAL_TIME: _real_time(20, 20),
        ClockKind.TURN_BASED: _turn_based(1, 2),
    },
    "vegas_showdown": {
        ClockKind.REAL_TIME: _real_time(20, 20),
        ClockKind.TURN_BASED: _turn_based(1, 2),
    },
}


def default_control(game: str, kind: ClockKind) -> TimeControl:
    """`game`'s default control of `kind`; ClockError for a game without one."""
    control = DEFAULT_CONTROLS.get(game, {}).get(kind)
    if control is None:
        raise ClockError(f"no default {kind.value} time control for game {game!r}")
    return control


@dataclass(frozen=True, slots=True)
class SeatClock:
    """One seat's time as of the last envelope: what is left of the current move's
    allowance, what is left of its bank, and whether it timed out (absent)."""

    allowance_ms: int
    bank_ms: int
    absent: bool = False
    moves: int = 0  # moves made (each refills the allowance, adds the increment)
    # When its time reached zero (its deadline, passed), 0 while it has time left: later
    # envelopes before the timeout is recorded must not move the deadline along.
    ran_out_ms: int = 0

    @property
    def remaining_ms(self) -> int:
        return self.allowance_ms + self.bank_ms

    def deadline_from(self, time_ms: int) -> int:
        """Its deadline if its clock runs from `time_ms` on."""
        return self.ran_out_ms if self.ran_out_ms else time_ms + self.remaining_ms


@dataclass(frozen=True, slots=True)
class Clocks:
    """Every seat's clock as of `time_ms`, the time of the last envelope folded in."""

    control: TimeControl
    seats: tuple[SeatClock, ...]
    time_ms: int


@dataclass(frozen=True, slots=True)
class SeatTime:
    """What a client draws: a seat's remaining time at some instant, and whether its clock
    runs (then `deadline_unix_ms` is when it reaches zero; 0 while it is stopped)."""

    seat: Seat
    remaining_ms: int
    running: bool
    deadline_unix_ms: int
    absent: bool


def start(control: TimeControl, seats: int, time_ms: int) -> Clocks:
    """The clocks at the game's creation (GameCreated's envelope time)."""
    clock = SeatClock(control.per_move_ms, control.start_bank_ms)
    return Clocks(control, (clock,) * seats, time_ms)


def running(clocks: Clocks, asked: Iterable[Seat]) -> frozenset[Seat]:
    """The seats whose clocks run, given the seats asked to act: those not absent."""
    return frozenset(s for s in asked if 0 <= s < len(clocks.seats) and not clocks.seats[s].absent)


def elapse(clocks: Clocks, time_ms: int, asked: Iterable[Seat]) -> Clocks:
    """Move the clocks on to `time_ms` (the next envelope's time), charging the interval to
    the running seats among `asked` (the seats asked to act after the last envelope).
    Raises ClockError when time runs backwards: the engine records a time never earlier
    than the one before it, whatever its replicas' clocks say."""
    if time_ms < clocks.time_ms:
        raise ClockError(
            f"the envelope's time {time_ms} is before the previous envelope's {clocks.time_ms}"
        )
    spent = time_ms - clocks.time_ms
    if spent == 0:
        return clocks
    runs = running(clocks, asked)
    if not runs:
        return replace(clocks, time_ms=time_ms)
    seats = list(clocks.seats)
    for s in runs:
        seats[s] = _charge(seats[s], clocks.time_ms, spent)
    return Clocks(clocks.control, tuple(seats), time_ms)


def _charge(clock: SeatClock, since_ms: int, spent: int) -> SeatClock:
    from_allowance = min(clock.allowance_ms, spent)
    from_bank = min(clock.bank_ms, spent - from_allowance)
    ran_out = clock.ran_out_ms
    if not ran_out and spent >= clock.remaining_ms:
        ran_out = since_ms + clock.remaining_ms
    return replace(
        clock,
        allowance_ms=clock.allowance_ms - from_allowance,
        bank_ms=clock.bank_ms - from_bank,
        ran_out_ms=ran_out,
    )


def moved(clocks: Clocks, seat: Seat) -> Clocks:
    """A move of `seat` was accepted (at `clocks.time_ms`): a fresh move's allowance and,
    in real time, the increment, once."""
    control = clocks.control
    clock = clocks.seats[seat]
    after = replace(
        clock,
        allowance_ms=control.per_move_ms,
        bank_ms=min(clock.bank_ms + control.increment_ms, MAX_CLOCK_MS),
        moves=clock.moves + 1,
        ran_out_ms=0,
    )
    return _with_seat(clocks, seat, after)


def timed_out(clocks: Clocks, seat: Seat) -> Clocks:
    """The seat's time ran out: it is absent from now on, with nothing left."""
    return _with_seat(clocks, seat, replace(clocks.seats[seat], allowance_ms=0, absent=True))


def reclaimed(clocks: Clocks, seat: Seat) -> Clocks:
    """The seat's player is back: a fresh move's allowance, what is left of the bank."""
    clock = clocks.seats[seat]
    back = replace(clock, allowance_ms=clocks.control.per_move_ms, absent=False, ran_out_ms=0)
    return _with_seat(clocks, seat, back)


def _with_seat(clocks: Clocks, seat: Seat, clock: SeatClock) -> Clocks:
    seats = list(clocks.seats)
    seats[seat] = clock
    return replace(clocks, seats=tuple(seats))


def deadline(clocks: Clocks, seat: Seat, asked: Iterable[Seat]) -> int | None:
    """When the seat's time runs out if nothing else happens: None while its clock is
    stopped (not asked to act, or absent)."""
    if seat not in running(clocks, asked):
        return None
    return clocks.seats[seat].deadline_from(clocks.time_ms)


def overdue(clocks: Clocks, asked: Iterable[Seat], now_ms: int) -> list[tuple[Seat, int]]:
    """The running seats whose deadline is at or before `now_ms`, with their deadlines."""
    out = []
    for s in sorted(running(clocks, asked)):
        due = clocks.seats[s].deadline_from(clocks.time_ms)
        if due <= now_ms:
            out.append((s, due))
    return out


def next_deadline(clocks: Clocks, asked: Iterable[Seat]) -> int | None:
    """The earliest deadline among the running seats (None: no clock runs)."""
    dues = [clocks.seats[s].deadline_from(clocks.time_ms) for s in running(clocks, asked)]
    return min(dues) if dues else None


def seat_times(clocks: Clocks, asked: Iterable[Seat], now_ms: int) -> tuple[SeatTime, ...]:
    """Every seat's time at `now_ms` (not before the last envelope's time): what views and
    WatchGame carry so a client draws a ticking clock."""
    runs = running(clocks, asked)
    now_ms = max(now_ms, clocks.time_ms)
    out = []
    for s, clock in enumerate(clocks.seats):
        if s in runs:
            due = clock.deadline_from(clocks.time_ms)
            out.append(SeatTime(s, max(0, due - now_ms), True, due, clock.absent))
        else:
            out.append(SeatTime(s, clock.remaining_ms, False, 0, clock.absent))
    return tuple(out)


def asked_to_act(
    game: GameDefinition[Any, Any, Any, Any], state: Any, seats: int
) -> frozenset[Seat]:
    """The seats the game asks to act in `state`: those it offers a command. Nobody once
    the game is over."""
    if game.outcome(state).finished:
        return frozenset()
    return frozenset(s for s in range(seats) if game.legal_commands(state, s))
