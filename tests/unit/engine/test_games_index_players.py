"""The games index's per-player lookup (what WatchPlayer reads several times a second)
stays equal to a scan over every game, through puts, late deliveries and deletes."""

from __future__ import annotations

import json
import random
from typing import Any

from services.engine.games_index import GamesIndex


def summary(players: list[str]) -> bytes:
    return json.dumps(
        {"game": "las_vegas", "status": "active", "version": 1, "players": players}
    ).encode()


def scan(index: GamesIndex, player: str) -> list[str]:
    return sorted(key for key, info in index.items() if player in info.players)


def test_games_of_a_player_match_a_scan_of_every_game() -> None:
    index = GamesIndex(kv=Any, nc=Any)  # type: ignore[arg-type]  # apply() needs neither
    rng = random.Random(23)
    people = ["ann", "bob", "cy", "dee", "bot-1"]
    for revision in range(1, 2001):
        key = f"g{rng.randrange(40)}"
        if rng.random() < 0.2:
            index.apply(key, revision, None)  # deleted or purged
        else:
            seats = rng.sample(people, rng.randint(2, 4))
            # now and then a late delivery, older than what is held: ignored by both views
            index.apply(key, revision - rng.choice((0, 0, 0, 5)), summary(seats))
        for player in people:
            assert [k for k, _ in index.games_of(player)] == scan(index, player)
    assert index.games_of("nobody") == []
