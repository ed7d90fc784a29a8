"""Golden Vegas Showdown games: complete logs with the commands that made them, checked in,
re-decided and replayed by the tests.

Regenerate (only when a rule change is intended, and say so in the commit):
    .venv/bin/python -m tests.unit.games.vegas_showdown.golden
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from boulevard.games.base import GameConfig, Seat
from boulevard.games.codec import Codec
from boulevard.games.playout import playout
from boulevard.games.vegas_showdown import GAME

DIRECTORY = Path(__file__).parent / "golden"
EVENTS = Codec(GAME.event_types)
COMMANDS = Codec(GAME.command_types)


@dataclass(frozen=True)
class Golden:
    name: str
    players: int
    seed: int
    bot: str

    @property
    def path(self) -> Path:
        return DIRECTORY / f"{self.name}.jsonl"


GOLDEN = (
    Golden("heuristic-3p", 3, 2005, "heuristic"),
    Golden("heuristic-4p", 4, 2006, "heuristic"),
    Golden("random-5p", 5, 2007, "random"),
)


def write(golden: Golden) -> None:
    commands: list[Any] = []
    bot = GAME.bots[golden.bot]

    def recording(view: Any, legal: Any, seat: Seat, rng: Any) -> Any:
        command = bot(view, legal, seat, rng)
        commands.append(command)
        return command

    game = playout(GAME, GameConfig(golden.players), random.Random(golden.seed), recording)
    outcome = GAME.outcome(game.state)
    lines = [
        json.dumps({"players": golden.players}),
        *(json.dumps({"event": EVENTS.encode(e)}, sort_keys=True) for e in game.events),
        *(json.dumps({"command": COMMANDS.encode(c)}, sort_keys=True) for c in commands),
        json.dumps(
            {
                "fame": list(outcome.scores),
                "ranking": [list(g) for g in outcome.ranking],
                "reason": game.state.end_reason,
            }
        ),
    ]
    golden.path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def read(golden: Golden) -> tuple[dict[str, Any], list[Any], list[Any], dict[str, Any]]:
    """(header, events, commands, final result) of a checked-in golden game."""
    lines = [json.loads(line) for line in golden.path.read_text(encoding="utf-8").splitlines()]
    header, *body, final = lines
    events = [EVENTS.decode(x["event"]) for x in body if "event" in x]
    commands = [COMMANDS.decode(x["command"]) for x in body if "command" in x]
    return header, events, commands, final


if __name__ == "__main__":
    DIRECTORY.mkdir(exist_ok=True)
    for golden in GOLDEN:
        write(golden)
        print(golden.path)
