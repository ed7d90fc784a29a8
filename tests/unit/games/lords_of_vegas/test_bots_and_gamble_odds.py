"""Bots finish games; the gamble's house edge is the field bet's 2/36."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from boulevard.games.base import GameConfig
from boulevard.games.lords_of_vegas import GAME
from boulevard.games.lords_of_vegas.rules import gamble_settlement
from boulevard.games.playout import playout


def _gambler_return(bet: int, roll: int, lay_off: bool = False) -> int:
    """The gambler's net result of one bet, from the game's own settlement function."""
    net = 0
    for payer, payee, amount in gamble_settlement(bet, roll, lay_off, boss_cash=10**6):
        if payee == "gambler":
            net += amount
        if payer == "gambler":
            net -= amount
    return net


@pytest.mark.parametrize("seed", range(6))
def test_four_heuristic_bots_finish_a_game(seed: int) -> None:
    result = playout(GAME, GameConfig(4), random.Random(seed), GAME.bots["heuristic"])
    outcome = GAME.outcome(result.state)
    assert outcome.finished
    assert max(outcome.scores) > 0


def test_heuristic_bots_beat_random_bots_more_often_than_not() -> None:
    wins = 0
    for seed in range(10):
        bots = {0: GAME.bots["heuristic"], 1: GAME.bots["random"]}
        result = playout(GAME, GameConfig(2), random.Random(seed), bots)
        wins += GAME.outcome(result.state).winners == (0,)
    assert wins >= 6


def test_the_gamble_returns_minus_2_in_36_exactly_over_all_rolls() -> None:
    for lay_off in (False, True):  # a lay-off moves money between boss and bank only
        total = sum(
            Fraction(_gambler_return(10, a + b, lay_off), 10)
            for a in range(1, 7)
            for b in range(1, 7)
        )
        assert total / 36 == Fraction(-2, 36)


def test_simulated_gambles_return_minus_5_6_percent_within_the_confidence_interval() -> None:
    rng = random.Random(20100)
    n = 200_000
    returns = [_gambler_return(1, rng.randrange(1, 7) + rng.randrange(1, 7)) for _ in range(n)]
    mean = sum(returns) / n
    sd = math.sqrt(sum((r - mean) ** 2 for r in returns) / (n - 1))
    half_width = 4 * sd / math.sqrt(n)  # a 4-sigma interval: a false alarm about 1 in 16,000
    assert abs(mean - (-2 / 36)) < half_width
    assert half_width < 0.01  # tight enough to tell −5.6% from 0
