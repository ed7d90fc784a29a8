"""The heuristic bot plays sensibly: against three random bots it wins most games."""

from __future__ import annotations

import random

from boulevard.games.base import GameConfig
from boulevard.games.long_shot import GAME
from boulevard.games.playout import playout


def test_the_heuristic_bot_beats_random_bots() -> None:
    games, wins = 40, 0
    for seed in range(games):
        bots = {0: GAME.bots["heuristic"], **{s: GAME.bots["random"] for s in (1, 2, 3)}}
        played = playout(GAME, GameConfig(4), random.Random(seed), bots)
        outcome = GAME.outcome(played.state)
        assert outcome.finished
        wins += 0 in outcome.winners
    # A random seat would win about a quarter of them; the heuristic wins most (88% in
    # 200 games when this was written).
    assert wins >= games // 2
