"""The two bots: they play only legal moves, and the heuristic one plays sensibly."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from boulevard.games.base import GameConfig
from boulevard.games.las_vegas import GAME
from boulevard.games.las_vegas.bots import heuristic_bot, random_bot
from boulevard.games.las_vegas.types import PlaceDice, Roll
from boulevard.games.playout import playout
from tests.unit.games.las_vegas.builders import At, K, table


def test_registered_bots() -> None:
    assert GAME.bots == {"random": random_bot, "heuristic": heuristic_bot}


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=8), st.integers(0, 2**16))
def test_bots_choose_among_the_legal_commands(dice: list[int], seed: int) -> None:
    t = table(players=3, current=1, dice_left=(8, len(dice), 8), roll=Roll(tuple(dice), ()))
    legal = GAME.legal_commands(t.state, 1)
    for bot in GAME.bots.values():
        assert bot(GAME.view(t.state, 1), legal, 1, random.Random(seed)) in legal


def test_heuristic_takes_the_lead_on_a_rich_casino() -> None:
    # Seat 0 leads casino 6 ($90k) with 2 dice; seat 1 rolled three 6s and a 1.
    t = table(
        players=2,
        casinos={6: At(notes=(90 * K,), dice=(2, 0)), 1: At(notes=(10 * K, 10 * K, 30 * K))},
        current=1,
        dice_left=(6, 4),
        roll=Roll((6, 6, 6, 1), ()),
    )
    legal = GAME.legal_commands(t.state, 1)
    assert heuristic_bot(GAME.view(t.state, 1), legal, 1, random.Random(0)) == PlaceDice(1, 6)


def test_heuristic_beats_random_most_of_the_time() -> None:
    wins = 0
    games = 40
    for g in range(games):
        seat = g % 2
        bots = {seat: heuristic_bot, 1 - seat: random_bot}
        white = "true" if g % 4 >= 2 else "false"
        game = playout(GAME, GameConfig(2, (("white_dice", white),)), random.Random(g), bots)
        wins += seat in GAME.outcome(game.state).winners
    assert wins >= 0.7 * games
