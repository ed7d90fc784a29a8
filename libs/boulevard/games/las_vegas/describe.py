"""Each Las Vegas event in words, for people watching a game (`boulevard watch`, the
`make run` demo). `names[seat]` is how a seat is called on screen. The web app's copy is
web/src/story.ts (tests/browser/test_story.py keeps the two saying the same)."""

from __future__ import annotations

from collections.abc import Sequence

from boulevard.games.las_vegas.types import (
    CasinoPaidOut,
    DicePlaced,
    Event,
    GameEnded,
    GameStarted,
    RoundStarted,
)


def describe(event: Event, names: Sequence[str]) -> str:
    match event:
        case GameStarted():
            white = " with white dice" if event.white_dice else ""
            return f"{event.players} players{white}; {names[event.start_player]} starts"
        case RoundStarted():
            return f"round {event.round} begins; {names[event.start_player]} starts"
        case DicePlaced():
            white = f" and {event.white} white" if event.white else ""
            return f"{names[event.seat]} places {event.own} dice{white} on casino {event.casino}"
        case CasinoPaidOut():
            if not event.awards:
                return f"casino {event.casino} pays nobody"
            paid = ", ".join(f"{names[a.seat]} ${a.value:,}" for a in event.awards)
            return f"casino {event.casino} pays {paid}"
        case GameEnded():
            return "the fourth round is over"
    return type(event).__name__
