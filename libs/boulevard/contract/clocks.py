"""Time controls and seat clocks between the protos (`TimeControl`, `SeatClock` in
events.proto) and boulevard.games.clock. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from boulevard.api.v1 import events_pb2
from boulevard.games.clock import ClockError, ClockKind, SeatTime, TimeControl, default_control

# What a client asks for: a concrete control, the game's default of a kind (a ClockKind:
# `TimeControl.game_default` on the wire), or None (no clock).
ClockRequest = TimeControl | ClockKind | None

_KINDS = {
    events_pb2.CLOCK_KIND_REAL_TIME: ClockKind.REAL_TIME,
    events_pb2.CLOCK_KIND_TURN_BASED: ClockKind.TURN_BASED,
}
_PROTO_KINDS = {kind: value for value, kind in _KINDS.items()}


def time_control_from_proto(
    message: events_pb2.TimeControl | None, game: str = ""
) -> TimeControl | None:
    """The control a request asks for; None when absent or UNSPECIFIED (no clock). A
    `game_default` request resolves to `game`'s default control of its kind (records never
    carry one: without `game` it is refused). Raises ClockError (a ValueError) for one that
    makes no sense."""
    if message is None or message.kind == events_pb2.CLOCK_KIND_UNSPECIFIED:
        if message is not None and message.game_default:
            raise ClockError("a game default control names its kind (real time or turn-based)")
        return None
    kind = _KINDS.get(message.kind)
    if kind is None:
        raise ClockError(f"unknown clock kind {message.kind}")
    if message.game_default:
        if message.base_ms or message.increment_ms or message.per_move_ms or message.reserve_ms:
            raise ClockError("a game default control gives no amounts (the game's apply)")
        if not game:
            raise ClockError("a game default control is for requests naming a game")
        return default_control(game, kind)
    return TimeControl(
        kind,
        base_ms=message.base_ms,
        increment_ms=message.increment_ms,
        per_move_ms=message.per_move_ms,
        reserve_ms=message.reserve_ms,
    )


def time_control_to_proto(control: TimeControl | ClockKind) -> events_pb2.TimeControl:
    """The wire form of a concrete control, or of a request for the game's default of a
    kind (a ClockKind)."""
    if isinstance(control, ClockKind):
        return events_pb2.TimeControl(kind=_PROTO_KINDS[control], game_default=True)
    return events_pb2.TimeControl(
        kind=_PROTO_KINDS[control.kind],
        base_ms=control.base_ms,
        increment_ms=control.increment_ms,
        per_move_ms=control.per_move_ms,
        reserve_ms=control.reserve_ms,
    )


def seat_clocks_to_proto(times: Iterable[SeatTime]) -> list[events_pb2.SeatClock]:
    return [
        events_pb2.SeatClock(
            seat=t.seat,
            remaining_ms=t.remaining_ms,
            running=t.running,
            deadline_unix_ms=t.deadline_unix_ms,
            absent=t.absent,
        )
        for t in times
    ]


def parse_time_control(text: str) -> ClockRequest:
    """A control from the words a person types (the CLI's `--clock`): "none", "10m+20s"
    (real time: base + increment), "1d/move", "1d/move+1h" (turn-based: per move + reserve),
    "default" or "default/move" (the game's default real-time or turn-based control, as a
    ClockKind: the service resolves it). Units: ms, s, m, h, d."""
    text = text.strip().lower().replace(" ", "")
    if text in ("", "none"):
        return None
    if text == "default":
        return ClockKind.REAL_TIME
    if text == "default/move":
        return ClockKind.TURN_BASED
    if "/move" in text:
        per_move, _, reserve = text.partition("/move")
        return TimeControl(
            ClockKind.TURN_BASED,
            per_move_ms=_duration(per_move),
            reserve_ms=_duration(reserve.lstrip("+")) if reserve else 0,
        )
    base, _, increment = text.partition("+")
    return TimeControl(
        ClockKind.REAL_TIME,
        base_ms=_duration(base),
        increment_ms=_duration(increment) if increment else 0,
    )


_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def _duration(text: str) -> int:
    for unit in sorted(_UNITS, key=len, reverse=True):
        if text.endswith(unit):
            number = text[: -len(unit)]
            try:
                return round(float(number) * _UNITS[unit])
            except ValueError:
                break
    raise ClockError(f"not a duration: {text!r} (e.g. 10m, 20s, 1d, 500ms)")


def clock_line(clocks: Sequence[events_pb2.SeatClock], names: Sequence[str]) -> str:
    """Every seat's time as the update carried it: "alice 4 min 10 s ▶, bob 10 min,
    carol absent (bot)" (▶: running; the time is as of the update)."""
    parts = []
    for c in clocks:
        who = names[c.seat] if c.seat < len(names) else f"seat {c.seat}"
        if c.absent:
            parts.append(f"{who} absent (bot)")
            continue
        parts.append(f"{who} {clock_words(c.remaining_ms)}{' ▶' if c.running else ''}")
    return ", ".join(parts)


def clock_words(ms: int) -> str:
    """Time left for people: "1 d 3 h", "4 min 10 s", "8.2 s"."""
    seconds = ms / 1000
    if seconds < 10:
        return f"{seconds:.1f} s"
    s = int(seconds)
    days, s = divmod(s, 86_400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {s} s" if s else f"{minutes} min"
    return f"{s} s"
