"""The clock rules of `audit game` (boulevard.audit.clocks): an honest timed game with a
timeout and the platform's bot passes; each way an operator could bend the clocks fails at
the version where it shows."""

from __future__ import annotations

import dataclasses

import pytest

from boulevard.audit.game_log import GameAuditFailed, audit_game_log
from boulevard.games.base import SeatTimedOut
from boulevard.games.clock import ClockKind, TimeControl
from tests.unit.audit.timed_log import GAME_ID, SEAT_KEYS, STAND_IN_KEY, TimedLog

REAL_TIME = TimeControl(ClockKind.REAL_TIME, base_ms=5_000, increment_ms=1_000)
TURN_BASED = TimeControl(ClockKind.TURN_BASED, per_move_ms=3_000, reserve_ms=1_000)


def fails_at(log: list[bytes], version: int, match: str) -> None:
    with pytest.raises(GameAuditFailed) as info:
        audit_game_log(GAME_ID, log)
    assert (info.value.version, match in info.value.message) == (version, True), info.value


def stalled(control: TimeControl = REAL_TIME) -> tuple[TimedLog, int]:
    """A game where the first seat asked never moves: the log so far, and that seat."""
    game = TimedLog("las_vegas", 3, control)
    (seat,) = sorted(game.asked())[:1]
    return game, seat


def test_a_timeout_at_its_deadline_and_the_bot_to_the_end_pass() -> None:
    game, seat = stalled()
    due = game.deadline(seat)
    game.time_out(seat, due + 250)  # the sweeper is a little late: allowed
    game.play_out()
    report = audit_game_log(GAME_ID, game.log(), finished=True)
    assert report.finished and report.timeouts == 1 and report.stand_in_moves > 0
    assert "1 seat(s) timed out" in report.summary()


def test_a_timeout_recorded_before_its_deadline_fails_there() -> None:
    game, seat = stalled()
    due = game.deadline(seat)
    game.time_out(seat, due - 1, deadline=due)
    fails_at(game.log(), game.version, "before its deadline")


def test_a_timeout_naming_another_deadline_fails() -> None:
    game, seat = stalled()
    due = game.deadline(seat)
    game.time_out(seat, due + 10, deadline=due + 10)
    fails_at(game.log(), game.version, f"the log's clock ran out at {due}")


def test_a_timeout_of_a_seat_not_asked_to_act_fails() -> None:
    game, seat = stalled()
    other = next(s for s in range(3) if s not in game.asked())
    game.time_out(other, game.deadline(seat) + 10**7, deadline=0)
    fails_at(game.log(), game.version, "its clock was not running")


def test_a_timeout_in_a_game_without_a_clock_fails() -> None:
    game, seat = stalled()
    game.time_out(seat, game.deadline(seat))
    envs = list(game.envs)
    created = dataclasses.replace(game.created, time_control=None)
    envs[0].payload = game.codec.dumps(created)
    fails_at(game.log(envs), game.version, "without a clock")


def test_a_bot_move_for_a_seat_that_had_not_timed_out_fails() -> None:
    game, seat = stalled()
    game.bot_move(seat, game.time + 10, stand_in=True)
    fails_at(game.log(), game.version - _events_after_command(game), "had not timed out")


def test_the_seats_own_move_after_its_deadline_fails() -> None:
    game, seat = stalled()
    game.bot_move(seat, game.deadline(seat) + 1)
    fails_at(game.log(), game.version - _events_after_command(game), "after its time had run out")


def test_a_move_just_before_the_deadline_passes() -> None:
    game, seat = stalled()
    game.bot_move(seat, game.deadline(seat) - 1)
    audit_game_log(GAME_ID, game.log())


def test_the_seats_own_move_while_absent_fails() -> None:
    game, seat = stalled()
    game.time_out(seat, game.deadline(seat))
    game.bot_move(seat, game.time + 10, stand_in=False)
    fails_at(game.log(), game.version - _events_after_command(game), "timed out and its player")


def test_a_bot_move_not_signed_with_the_stand_in_key_fails() -> None:
    game, seat = stalled()
    game.time_out(seat, game.deadline(seat))
    game.bot_move(seat, game.time + 10, key=SEAT_KEYS[5])
    fails_at(game.log(), game.version - _events_after_command(game), "under the stand-in key")


def test_envelope_times_running_backwards_fail() -> None:
    game, seat = stalled()
    game.bot_move(seat, game.time + 100)
    at = game.version - _events_after_command(game)
    envs = list(game.envs)
    for e in envs[at - 1 :]:
        e.time_unix_ms = envs[at - 2].time_unix_ms - 1
    fails_at(game.log(envs), at, "time runs backwards")


def test_a_turn_based_seat_takes_its_place_back_and_plays_on() -> None:
    game, seat = stalled(TURN_BASED)
    game.time_out(seat, game.deadline(seat) + 5)
    while seat not in game.asked():  # the bot plays it for a while
        game.bot_move(sorted(game.asked())[0], game.time + 100)
    game.bot_move(seat, game.time + 100)  # still absent: the bot's move
    game.reclaim(seat, game.time + 100)
    game.play_out()
    report = audit_game_log(GAME_ID, game.log(), finished=True)
    assert report.timeouts == 1 and report.finished


def test_a_reclaim_signed_by_another_key_fails() -> None:
    game, seat = stalled(TURN_BASED)
    game.time_out(seat, game.deadline(seat))
    game.reclaim(seat, game.time + 10, key=STAND_IN_KEY)
    fails_at(game.log(), game.version, "does not verify under seat")


def test_a_reclaim_of_a_seat_that_never_timed_out_fails() -> None:
    game, seat = stalled(TURN_BASED)
    game.reclaim(seat, game.time + 10)
    fails_at(game.log(), game.version, "had not timed out")


def test_a_reclaim_in_real_time_fails() -> None:
    game, seat = stalled(REAL_TIME)
    game.time_out(seat, game.deadline(seat))
    game.reclaim(seat, game.time + 10)
    fails_at(game.log(), game.version, "outside a turn-based game")


def test_a_timeout_is_recorded_at_most_once() -> None:
    game, seat = stalled()
    game.time_out(seat, game.deadline(seat))
    game.append([SeatTimedOut(seat, game.clocks.seats[seat].ran_out_ms, STAND_IN_KEY.public_hex)])
    fails_at(game.log(), game.version, "not running")


def _events_after_command(game: TimedLog) -> int:
    """How many envelopes the last append of a command wrote after its CommandAccepted."""
    for back, e in enumerate(reversed(game.envs)):
        if e.type == "CommandAccepted":
            return back
    raise AssertionError("no command in the log")
