"""Each Vegas Showdown event in words, for people watching a game (`boulevard watch`, the
`make run` demo). `names[seat]` is how a seat is called on screen; tiles are called by id
and tracks by name, as the events hold them. The web app's copy is web/src/story.ts
(tests/browser/test_story.py keeps the two saying the same)."""

from __future__ import annotations

from collections.abc import Sequence

from boulevard.games.vegas_showdown.types import (
    BidPlaced,
    Event,
    EventCardDone,
    EventCardDrawn,
    GameEnded,
    GameStarted,
    IncomeCollected,
    Placement,
    PricesLowered,
    PublicityTaken,
    Renovated,
    RenovationCancelled,
    RenovationStaged,
    TileBought,
    TileFlipped,
    TilePlaced,
    TurnEnded,
)


def _track(name: str) -> str:
    return name.replace("_", " ")


def _at(p: Placement) -> str:
    return f"tile {p.tile} at column {p.col}, row {p.row}, turned {p.rotation}"


def _fame(fame: Sequence[int], names: Sequence[str]) -> str:
    won = ", ".join(f"{names[seat]} +{f}" for seat, f in enumerate(fame) if f)
    return f"; fame {won}" if won else ""


def describe(event: Event, names: Sequence[str]) -> str:
    match event:
        case GameStarted():
            return f"{event.players} players on {event.sheet} sheets"
        case PricesLowered():
            gone = ", ".join(str(t) for t in event.removed)
            return "premier prices go down" + (f"; tiles {gone} leave the game" if gone else "")
        case EventCardDrawn():
            later = "" if event.done else " (it waits until it can be carried out)"
            return f"event card {event.card.replace('_', ' ')}{later}{_fame(event.fame, names)}"
        case EventCardDone():
            return f"event card {event.card.replace('_', ' ')} is carried out" + _fame(
                event.fame, names
            )
        case TileFlipped():
            return (
                f"tile {event.tile} comes up on {_track(event.track)}, minimum bid ${event.minimum}"
            )
        case IncomeCollected():
            return "income is paid"
        case BidPlaced():
            outbid = "" if event.outbid is None else f", outbidding {names[event.outbid]}"
            return f"{names[event.seat]} bids ${event.amount} on {_track(event.track)}{outbid}"
        case Renovated():
            parts = [f"removes tile {t}" for t in event.removed]
            parts += [f"places {_at(p)}" for p in event.placed]
            return f"{names[event.seat]} renovates" + (
                f": {', '.join(parts)}" if parts else ", changing nothing"
            )
        case RenovationStaged():
            if event.removed is not None:
                return f"{names[event.seat]} renovating: takes tile {event.removed} off"
            assert event.placed is not None
            return f"{names[event.seat]} renovating: places {_at(event.placed)}"
        case RenovationCancelled():
            return f"{names[event.seat]} drops the renovation"
        case PublicityTaken():
            placed = "" if event.placed is None else f" and places {_at(event.placed)}"
            return f"{names[event.seat]} takes publicity, fame +{event.fame}{placed}"
        case TileBought():
            return (
                f"{names[event.seat]} buys tile {event.tile} of {_track(event.track)} "
                f"for ${event.price}"
            )
        case TilePlaced():
            if event.placement is None:
                return f"{names[event.seat]} places no tile"
            return f"{names[event.seat]} places {_at(event.placement)}"
        case TurnEnded():
            return f"turn {event.turn} ends; {names[event.button]} has the button"
        case GameEnded():
            scores = ", ".join(f"{names[s.seat]} {s.total}" for s in event.scores)
            why = event.reason.replace("_", " ")
            return f"the game ends ({why}): fame {scores}"
    return type(event).__name__
