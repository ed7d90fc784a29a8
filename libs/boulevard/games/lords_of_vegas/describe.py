"""Each Lords of Vegas event in words, for people watching a game (`boulevard watch`, the
`make run` demo). `names[seat]` is how a seat is called on screen. The web app's copy is
web/src/story.ts (tests/browser/test_story.py keeps the two saying the same)."""

from __future__ import annotations

from collections.abc import Sequence

from boulevard.games.lords_of_vegas.types import (
    CardDrawn,
    CasinoBuilt,
    CasinoRemodelled,
    CasinoReorganized,
    CasinoSprawled,
    Event,
    GambleOffered,
    GambleSettled,
    GameStarted,
    LayOffDecided,
    ReorganizedDiceAssigned,
    StartingCardsDealt,
    TradeAccepted,
    TradeOffer,
    TradeProposed,
    TradeRejected,
    TurnEnded,
)


def _offer(offer: TradeOffer, names: Sequence[str]) -> str:
    def side(money: int, lots: Sequence[str], dice: Sequence[str]) -> str:
        parts = [f"${money}"] if money else []
        parts += [f"lot {lot}" for lot in lots] + [f"die on {lot}" for lot in dice]
        return ", ".join(parts) or "nothing"

    give = side(offer.give_money, offer.give_lots, offer.give_dice)
    take = side(offer.take_money, offer.take_lots, offer.take_dice)
    action = f" and {offer.action.kind.value} on {offer.action.lot}" if offer.action else ""
    return f"{names[offer.proposer]} gives {give} to {names[offer.recipient]} for {take}{action}"


def describe(event: Event, names: Sequence[str]) -> str:
    match event:
        case GameStarted():
            return f"{event.players} players; {names[event.banker]} keeps the bank"
        case StartingCardsDealt():
            hands = "; ".join(
                f"{names[seat]} gets lots {', '.join(hand)}"
                for seat, hand in enumerate(event.hands)
            )
            return f"starting lots dealt: {hands}"
        case CardDrawn():
            who = names[event.seat]
            if event.card == "END":
                return f"{who} draws the End of Game card: final payout"
            paid = ", ".join(
                f"{p.colour.value} casino pays {names[p.boss]} {p.points} pts ${p.money}"
                for p in event.payouts
                if p.boss is not None
            )
            return f"{who} draws lot {event.card}; {event.pays} pays" + (
                f": {paid}" if paid else ""
            )
        case CasinoBuilt():
            return (
                f"{names[event.seat]} builds a {event.colour.value} casino on {event.lot} "
                f"(die {event.die})"
            )
        case CasinoSprawled():
            return (
                f"{names[event.seat]} sprawls the {event.colour.value} casino onto {event.lot} "
                f"(die {event.die})"
            )
        case CasinoRemodelled():
            return (
                f"{names[event.seat]} remodels {', '.join(event.lots)} from "
                f"{event.old_colour.value} to {event.colour.value}"
            )
        case CasinoReorganized():
            return f"{names[event.seat]} reorganizes the casino on {', '.join(event.lots)}"
        case ReorganizedDiceAssigned():
            dice = ", ".join(f"{value} on {lot}" for lot, value in event.placements)
            return f"{names[event.seat]} places the rerolled dice: {dice}"
        case GambleOffered():
            return (
                f"{names[event.seat]} gambles ${event.amount} at {names[event.boss]}'s casino "
                f"on {event.lot}"
            )
        case LayOffDecided():
            choice = "lays the bet off to the bank" if event.lay_off else "covers the bet"
            return f"{names[event.seat]} {choice}"
        case GambleSettled():
            won = any(t.target == f"seat:{event.seat}" for t in event.transfers)
            verdict = "wins" if won else "loses"
            return f"{names[event.seat]} rolls {event.roll} and {verdict} ${event.amount}"
        case TradeProposed():
            return f"trade proposed: {_offer(event.offer, names)}"
        case TradeAccepted():
            return f"trade done: {_offer(event.offer, names)}"
        case TradeRejected():
            return f"{names[event.offer.recipient]} turns the trade down"
        case TurnEnded():
            return f"{names[event.seat]} ends the turn; {names[event.next_seat]} is next"
    return type(event).__name__
