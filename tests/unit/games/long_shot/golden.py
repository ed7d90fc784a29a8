"""Golden Long Shot games: complete logs (commands and the events each caused, chance
answers in between) checked in, re-decided and replayed by the tests.

Regenerate (only when a rule change is intended, and say so in the commit):
    .venv/bin/python -m tests.unit.games.long_shot.golden
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from boulevard.games.base import ChanceResolved, GameConfig
from boulevard.games.codec import Codec
from boulevard.games.long_shot import GAME
from boulevard.games.playout import playout

DIRECTORY = Path(__file__).parent / "golden"
EVENTS = Codec(GAME.event_types)
COMMANDS = Codec(GAME.command_types)


@dataclass(frozen=True)
class Golden:
    name: str
    players: int
    bot: str
    seed: int

    @property
    def path(self) -> Path:
        return DIRECTORY / f"{self.name}.jsonl"


GOLDEN = (
    Golden("three_players_heuristic", 3, "heuristic", 2009),
    Golden("five_players_random", 5, "random", 2010),
    Golden("eight_players_heuristic", 8, "heuristic", 2011),
)


def write(golden: Golden) -> None:
    commands: list[Any] = []
    bot = GAME.bots[golden.bot]

    def recording(view: Any, legal: Any, seat: int, rng: Any) -> Any:
        command = bot(view, legal, seat, rng)
        commands.append(command)
        return command

    config = GameConfig(golden.players)
    game = playout(GAME, config, random.Random(golden.seed), recording)
    lines = [json.dumps({"players": golden.players})]
    state = GAME.initial_state()
    pending = iter(commands)
    events = list(game.events)
    i = 0
    while i < len(events):
        event = events[i]
        if i == 0 or isinstance(event, ChanceResolved):
            lines.append(json.dumps({"event": EVENTS.encode(event)}, sort_keys=True))
            state = GAME.evolve(state, event)
            i += 1
            continue
        command = next(pending)
        lines.append(json.dumps({"command": COMMANDS.encode(command)}, sort_keys=True))
        for produced in GAME.decide(command, state):
            assert produced == events[i]
            lines.append(json.dumps({"event": EVENTS.encode(produced)}, sort_keys=True))
            state = GAME.evolve(state, produced)
            i += 1
    outcome = GAME.outcome(game.state)
    lines.append(
        json.dumps({"money": list(outcome.scores), "ranking": [list(g) for g in outcome.ranking]})
    )
    golden.path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def read(golden: Golden) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """(header, log lines, final result) of a checked-in golden game."""
    lines = golden.path.read_text(encoding="utf-8").splitlines()
    header, *log, final = (json.loads(line) for line in lines)
    return header, log, final


if __name__ == "__main__":
    DIRECTORY.mkdir(exist_ok=True)
    for golden in GOLDEN:
        write(golden)
        print(golden.path)
