"""Two Long Shot bots, seeing only their seat's view: one random, one that buys horses it
can afford and bets on the leaders."""

from __future__ import annotations

from collections.abc import Sequence

from boulevard.games.base import RandomSource, Seat
from boulevard.games.long_shot.data import CardKind
from boulevard.games.long_shot.types import (
    BuyHorse,
    CardView,
    Command,
    Die,
    DiscardCards,
    HorseView,
    LongShotView,
    MoveHorses,
    PassTurn,
    PlaceBet,
    PlayCard,
    Reroll,
)


def random_bot(
    view: LongShotView, legal: Sequence[Command], seat: Seat, rng: RandomSource
) -> Command:
    """A random kind of command first, then a random one of that kind: a hand full of
    discard pairs does not drown out buying and betting."""
    kinds = sorted({type(c).__name__ for c in legal})
    kind = kinds[rng.randrange(len(kinds))]
    of_kind = [c for c in legal if type(c).__name__ == kind]
    return of_kind[rng.randrange(len(of_kind))]


def _horse(view: LongShotView, number: int | None) -> HorseView | None:
    return view.horses[number - 1] if number is not None else None


def _stake(view: LongShotView, seat: Seat, horse: HorseView) -> bool:
    """The seat gains when this horse places: it owns it or bet on it."""
    return horse.owner == seat or any(b.seat == seat and b.horse == horse.number for b in view.bets)


def _card_score(view: LongShotView, seat: Seat, command: PlayCard, card: CardView) -> float:
    """What playing this card is worth to the seat, roughly in dollars (≤ 0: not worth it)."""
    horse = _horse(view, command.horse)
    track = view.track_length
    match card.kind:
        case CardKind.MONEY | CardKind.LUCKY_NUMBA:
            return float(card.amount)
        case CardKind.STEAL:
            return float(card.amount) if card.amount else 3.0
        case CardKind.BET:
            if horse is None:
                return 0.0
            cost = 0 if card.free else card.amount
            return (
                card.amount * horse.show * horse.position / track - cost + (5 if card.free else 0)
            )
        case CardKind.MOVE | CardKind.HORSE | CardKind.WINNERS_CIRCLE:
            if card.kind is CardKind.WINNERS_CIRCLE and card.amount:
                return float(card.amount)
            target = horse if card.kind is not CardKind.HORSE else _horse(view, card.horse)
            if target is None:
                return 0.0
            mine = _stake(view, seat, target)
            steps = card.steps
            return 4.0 * steps * (1 if mine else -1) * (1 + target.position / track)
    return 0.0


def heuristic_bot(
    view: LongShotView, legal: Sequence[Command], seat: Seat, rng: RandomSource
) -> Command:
    """Reroll a 0; move every own horse it may; then the best of: a card worth playing,
    the dearest horse it can afford (keeping $5 for a bet), a $5 bet on the leading
    bettable horse, discarding two cards it cannot use; else pass."""
    if any(isinstance(c, MoveHorses) for c in legal):
        if view.move_die == 0 and Reroll(seat, Die.MOVE) in legal:
            return Reroll(seat, Die.MOVE)
        moves = [c for c in legal if isinstance(c, MoveHorses)]
        return max(moves, key=lambda c: len(c.horses))
    cards = {c.card: c for c in view.hand}
    money = view.money[seat]
    best_card: tuple[float, PlayCard] | None = None
    for command in legal:
        if isinstance(command, PlayCard):
            score = _card_score(view, seat, command, cards[command.card])
            if best_card is None or score > best_card[0]:
                best_card = (score, command)
    if best_card is not None and best_card[0] >= 8:
        return best_card[1]
    buys = [
        c for c in legal if isinstance(c, BuyHorse) and view.horses[c.horse - 1].price <= money - 5
    ]
    if buys:
        return max(buys, key=lambda c: (view.horses[c.horse - 1].price, -c.horse))
    bets = [c for c in legal if isinstance(c, PlaceBet)]
    if bets:
        return max(
            bets, key=lambda c: (view.horses[c.horse - 1].position, view.horses[c.horse - 1].win)
        )
    if best_card is not None and best_card[0] > 0:
        return best_card[1]
    discards = [c for c in legal if isinstance(c, DiscardCards)]
    if discards and len(view.hand) >= 4:

        def useless(c: DiscardCards) -> int:
            return sum(
                cards[x].kind in (CardKind.WINNERS_CIRCLE, CardKind.LUCKY_NUMBA) for x in c.cards
            )

        return max(discards, key=useless)
    return PassTurn(seat)
