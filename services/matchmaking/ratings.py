"""Ratings: openskill's Plackett-Luce model, multiplayer and rank-based. Pure.

Each seat is a team of one; a seat's rank is the place of its group in the game's ranking
(seats sharing a group tie). Bots take part at the default rating (so beating bots counts a
little) but their ratings are never stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from openskill.models import PlackettLuce

_MODEL = PlackettLuce()
DEFAULT_MU: float = _MODEL.mu
DEFAULT_SIGMA: float = _MODEL.sigma


@dataclass(frozen=True, slots=True)
class Skill:
    mu: float = DEFAULT_MU
    sigma: float = DEFAULT_SIGMA

    @property
    def ordinal(self) -> float:
        return self.mu - 3 * self.sigma


def ranks_of(ranking: Sequence[Sequence[int]], seats: int) -> list[int]:
    """Each seat's place (1 = best) from groups of seats, best first."""
    ranks = [0] * seats
    for place, group in enumerate(ranking, start=1):
        for seat in group:
            if not 0 <= seat < seats:
                raise ValueError(f"seat {seat} in the ranking of a {seats}-seat game")
            ranks[seat] = place
    if 0 in ranks:
        raise ValueError(f"seats {[s for s, r in enumerate(ranks) if r == 0]} are not ranked")
    return ranks


def rate(before: Sequence[Skill], ranking: Sequence[Sequence[int]]) -> list[Skill]:
    """Every seat's skill after a game with this ranking."""
    if len(before) < 2:
        return list(before)
    ranks = ranks_of(ranking, len(before))
    teams = [[_MODEL.rating(mu=s.mu, sigma=s.sigma)] for s in before]
    after = _MODEL.rate(teams, ranks=[float(r) for r in ranks])
    return [Skill(team[0].mu, team[0].sigma) for team in after]
