"""Time controls between protos, words and boulevard.games.clock."""

from __future__ import annotations

import pytest

from boulevard.api.v1 import events_pb2
from boulevard.contract.clocks import (
    parse_time_control,
    time_control_from_proto,
    time_control_to_proto,
)
from boulevard.games.clock import ClockError, ClockKind, TimeControl


@pytest.mark.parametrize(
    ("words", "control"),
    [
        ("none", None),
        ("10m+20s", TimeControl(ClockKind.REAL_TIME, base_ms=600_000, increment_ms=20_000)),
        ("5s", TimeControl(ClockKind.REAL_TIME, base_ms=5_000)),
        ("1d/move", TimeControl(ClockKind.TURN_BASED, per_move_ms=86_400_000)),
        (
            "1d/move+1h",
            TimeControl(ClockKind.TURN_BASED, per_move_ms=86_400_000, reserve_ms=3_600_000),
        ),
        ("1.5s/move", TimeControl(ClockKind.TURN_BASED, per_move_ms=1_500)),
    ],
)
def test_words_and_protos_round_trip(words: str, control: TimeControl | None) -> None:
    assert parse_time_control(words) == control
    if control is not None:
        assert time_control_from_proto(time_control_to_proto(control)) == control


@pytest.mark.parametrize("words", ["10x", "m", "1d/move+", "+5s", "-5s"])
def test_words_that_are_no_control_are_refused(words: str) -> None:
    with pytest.raises(ClockError):
        parse_time_control(words)


def test_an_absent_or_unspecified_control_is_no_clock_and_a_bad_one_is_refused() -> None:
    assert time_control_from_proto(None) is None
    assert time_control_from_proto(events_pb2.TimeControl()) is None
    with pytest.raises(ClockError, match="needs a base"):
        time_control_from_proto(events_pb2.TimeControl(kind=events_pb2.CLOCK_KIND_REAL_TIME))
    with pytest.raises(ClockError, match="unknown clock kind"):
        time_control_from_proto(events_pb2.TimeControl(kind=7))  # type: ignore[arg-type]


def test_the_clock_line_people_read() -> None:
    from boulevard.contract.clocks import clock_line, clock_words

    clocks = [
        events_pb2.SeatClock(seat=0, remaining_ms=250_000, running=True),
        events_pb2.SeatClock(seat=1, remaining_ms=600_000),
        events_pb2.SeatClock(seat=2, absent=True),
    ]
    line = clock_line(clocks, ["alice", "bob", "carol"])
    assert line == "alice 4 min 10 s ▶, bob 10 min, carol absent (bot)"
    assert clock_words(8_200) == "8.2 s"
    assert clock_words(97_200_000) == "1 d 3 h"


def test_every_game_has_a_default_of_each_kind_and_a_default_request_resolves_to_it() -> None:
    """The words "default" and "default/move" are requests for the game's control of that kind; only
    a caller naming the game (matchmaking, CreateGame) can resolve one, and it resolves to
    exactly the game's concrete control, so it meets tickets asking for that control."""
    from boulevard.games import REGISTRY
    from boulevard.games.clock import default_control

    assert parse_time_control("default") is ClockKind.REAL_TIME
    assert parse_time_control("Default/Move") is ClockKind.TURN_BASED
    for game in REGISTRY:
        for kind in ClockKind:
            control = default_control(game, kind)
            assert control.kind is kind
            asked = time_control_to_proto(kind)
            assert asked.game_default and not (asked.base_ms or asked.per_move_ms)
            assert time_control_from_proto(asked, game) == control
            with pytest.raises(ClockError, match="naming a game"):
                time_control_from_proto(asked)  # a record never carries a default


def test_a_default_request_with_amounts_or_without_a_kind_is_refused() -> None:
    game = "las_vegas"
    with pytest.raises(ClockError, match="no default"):
        time_control_from_proto(time_control_to_proto(ClockKind.REAL_TIME), "chess")
    with pytest.raises(ClockError, match="no amounts"):
        time_control_from_proto(
            events_pb2.TimeControl(
                kind=events_pb2.CLOCK_KIND_REAL_TIME, game_default=True, base_ms=1000
            ),
            game,
        )
    with pytest.raises(ClockError, match="names its kind"):
        time_control_from_proto(events_pb2.TimeControl(game_default=True), game)
