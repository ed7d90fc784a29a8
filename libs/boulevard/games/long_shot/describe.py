"""Each Long Shot event in words, for people watching a game (`boulevard watch`, the
`make run` demo). `names[seat]` is how a seat is called on screen. The web app's copy is
web/src/story.ts (tests/browser/test_story.py keeps the two saying the same)."""

from __future__ import annotations

from collections.abc import Sequence

from boulevard.games.long_shot.types import (
    BetPlaced,
    CardDrawn,
    CardPlayed,
    CardsDiscarded,
    Event,
    FeatureUsed,
    GameStarted,
    HorseBought,
    HorseFinished,
    HorseMoved,
    MoneyStolen,
    MoneyTaken,
    Passed,
    RaceEnded,
    RerollUsed,
    RollResolved,
    StealStarted,
    TurnEnded,
    ZeroRolled,
)


def ordinal(n: int) -> str:
    """1 -> "1st", 2 -> "2nd", 3 -> "3rd", 4 -> "4th", 11 -> "11th"."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def describe(event: Event, names: Sequence[str]) -> str:
    match event:
        case GameStarted():
            each = f"; each gets ${event.transfers[0].amount}" if event.transfers else ""
            return f"{event.players} players{each}"
        case FeatureUsed():
            return f"{names[event.seat]} collects ${event.amount} from horse {event.horse}"
        case RerollUsed():
            return f"{names[event.seat]} re-rolls the {event.die.value} die"
        case HorseMoved():
            if event.spaces < 0:
                return f"horse {event.horse} falls back {-event.spaces} to {event.position}"
            return f"horse {event.horse} runs {event.spaces} to {event.position}"
        case HorseFinished():
            return f"horse {event.horse} crosses the line {ordinal(event.place)}"
        case ZeroRolled():
            owner = "nobody" if event.victim is None else names[event.victim]
            return (
                f"{names[event.seat]} rolls a 0 for horse {event.horse}: no horse moves "
                f"(it belongs to {owner})"
            )
        case RollResolved():
            return f"{names[event.seat]} is done rolling"
        case CardDrawn():
            return f"{names[event.seat]} draws a card"
        case CardPlayed():
            horse = "" if event.horse is None else f" on horse {event.horse}"
            target = "" if event.target is None else f" against {names[event.target]}"
            return f"{names[event.seat]} plays card {event.card}{horse}{target}"
        case MoneyTaken():
            return f"{names[event.seat]} takes ${event.amount} from the bank"
        case MoneyStolen():
            return f"{names[event.seat]} takes ${event.amount} from {names[event.victim]}"
        case StealStarted():
            return f"{names[event.seat]} takes a random card from {names[event.victim]}"
        case HorseBought():
            return f"{names[event.seat]} buys horse {event.horse} for ${event.price}"
        case BetPlaced():
            free = " (a free bet)" if event.free else ""
            return f"{names[event.seat]} bets ${event.amount} on horse {event.horse}{free}"
        case CardsDiscarded():
            cards = ", ".join(str(c) for c in event.cards)
            return f"{names[event.seat]} discards cards {cards}"
        case Passed():
            return f"{names[event.seat]} passes"
        case TurnEnded():
            return f"{names[event.seat]} ends the turn; {names[event.next]} is next"
        case RaceEnded():
            placed = ", ".join(
                f"horse {horse} {ordinal(place)}" for place, horse in enumerate(event.finish, 1)
            )
            return f"the race is over: {placed}"
    return type(event).__name__
