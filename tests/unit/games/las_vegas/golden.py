"""Golden Las Vegas games: complete logs checked in, re-decided and replayed by the tests.

Regenerate (only when a rule change is intended, and say so in the commit):
    .venv/bin/python -m tests.unit.games.las_vegas.golden
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from boulevard.games.base import GameConfig
from boulevard.games.codec import Codec
from boulevard.games.las_vegas import GAME
from boulevard.games.playout import playout

DIRECTORY = Path(__file__).parent / "golden"
CODEC = Codec(GAME.event_types)


@dataclass(frozen=True)
class Golden:
    name: str
    players: int
    white_dice: bool
    seed: int

    @property
    def config(self) -> GameConfig:
        return GameConfig(self.players, (("white_dice", "true" if self.white_dice else "false"),))

    @property
    def path(self) -> Path:
        return DIRECTORY / f"{self.name}.jsonl"


GOLDEN = (
    Golden("two_players_white_dice", 2, True, 2012),
    Golden("three_players_white_dice", 3, True, 2013),
    Golden("five_players", 5, False, 2015),
)


def write(golden: Golden) -> None:
    game = playout(GAME, golden.config, random.Random(golden.seed), GAME.bots["heuristic"])
    outcome = GAME.outcome(game.state)
    lines = [
        json.dumps({"players": golden.players, "white_dice": golden.white_dice}),
        *(json.dumps(CODEC.encode(e), sort_keys=True) for e in game.events),
        json.dumps({"money": list(outcome.scores), "ranking": [list(g) for g in outcome.ranking]}),
    ]
    golden.path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def read(golden: Golden) -> tuple[dict[str, Any], Iterator[Any], dict[str, Any]]:
    """(header, events, final result) of a checked-in golden game."""
    lines = golden.path.read_text(encoding="utf-8").splitlines()
    header, *events, final = (json.loads(line) for line in lines)
    return header, (CODEC.decode(e) for e in events), final


if __name__ == "__main__":
    DIRECTORY.mkdir(exist_ok=True)
    for golden in GOLDEN:
        write(golden)
        print(golden.path)
