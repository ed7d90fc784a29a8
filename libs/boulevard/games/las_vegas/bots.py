"""Two Las Vegas bots, seeing only their seat's view: one random, one that counts notes."""

from __future__ import annotations

from collections.abc import Sequence

from boulevard.games.base import RandomSource, Seat
from boulevard.games.las_vegas.rules import WHITE, rank_dice
from boulevard.games.las_vegas.types import CasinoView, LasVegasView, PlaceDice

# What a die of one's own colour is worth keeping for a later turn, in dollars. Tuned by
# playing the heuristic against random bots (see tests/unit/games/las_vegas/test_bots.py).
DIE_KEEP_VALUE = 6_000
OPPONENT_WEIGHT = 0.5


def random_bot(
    view: LasVegasView, legal: Sequence[PlaceDice], seat: Seat, rng: RandomSource
) -> PlaceDice:
    return legal[rng.randrange(len(legal))]


def _shares(casino: CasinoView, dice: tuple[int, ...], white: int) -> dict[int, int]:
    """Who would take which value if the round ended with these dice (WHITE included)."""
    _, ranked = rank_dice(dice, white)
    return {p: value for value, p in zip(casino.notes, ranked, strict=False)}


def heuristic_bot(
    view: LasVegasView, legal: Sequence[PlaceDice], seat: Seat, rng: RandomSource
) -> PlaceDice:
    """Pick the placement that most improves (my winnings now − a share of the best
    opponent's) per die spent; ties broken at random."""
    roll = view.roll
    if roll is None or len(legal) == 1:
        return legal[0]
    best: list[PlaceDice] = []
    best_score = float("-inf")
    for command in legal:
        casino = view.casinos[command.number - 1]
        own = roll.own.count(command.number)
        white = roll.white.count(command.number)
        before = _shares(casino, casino.dice, casino.white)
        dice = tuple(n + own if s == seat else n for s, n in enumerate(casino.dice))
        after = _shares(casino, dice, casino.white + white)

        def edge(shares: dict[int, int]) -> float:
            others = [v for p, v in shares.items() if p not in (seat, WHITE)]
            return shares.get(seat, 0) - OPPONENT_WEIGHT * max(others, default=0)

        dice_left = view.dice_left[seat]
        # Spending dice matters less when few remain: they must be placed anyway.
        keep = DIE_KEEP_VALUE * own * (dice_left - own) / max(dice_left, 1)
        score = edge(after) - edge(before) - keep
        if score > best_score + 1e-9:
            best, best_score = [command], score
        elif abs(score - best_score) <= 1e-9:
            best.append(command)
    return best[rng.randrange(len(best))]
