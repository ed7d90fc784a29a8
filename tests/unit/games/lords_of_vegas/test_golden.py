"""Golden games: complete games recorded as JSONL (commands, the events each produced, chance
answers, and the final result). Replaying them re-decides every command and must produce the
same events and the same result, so any change to the rules' behaviour shows up here.

Regenerate (only after an intended rules change):
    python -m tests.unit.games.lords_of_vegas.test_golden
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from boulevard.games.base import ChanceResolved, GameConfig
from boulevard.games.codec import Codec
from boulevard.games.lords_of_vegas import GAME
from boulevard.games.playout import resolve_locally

GOLDEN = Path(__file__).parent / "golden"
EVENTS = Codec(GAME.event_types)
COMMANDS = Codec(GAME.command_types)
GAMES = {
    "heuristic-2p.jsonl": (2, 7, "heuristic"),
    "heuristic-4p.jsonl": (4, 11, "heuristic"),
    "random-3p.jsonl": (3, 5, "random"),
}


def record(players: int, seed: int, bot_name: str) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    bot = GAME.bots[bot_name]
    lines: list[dict[str, Any]] = [{"config": {"players": players}}]
    state = GAME.initial_state()
    for ev in GAME.new_game(GameConfig(players)):
        state = GAME.evolve(state, ev)
        lines.append({"event": EVENTS.encode(ev)})
    while True:
        request = GAME.chance(state)
        if request is not None:
            answer = resolve_locally(request, rng)
            state = GAME.evolve(state, answer)
            lines.append({"chance": EVENTS.encode(answer)})
            continue
        if GAME.outcome(state).finished:
            break
        seat = next(s for s in range(players) if GAME.legal_commands(state, s))
        command = bot(GAME.view(state, seat), GAME.legal_commands(state, seat), seat, rng)
        events = GAME.decide(command, state)
        lines.append(
            {"command": COMMANDS.encode(command), "events": [EVENTS.encode(e) for e in events]}
        )
        for ev in events:
            state = GAME.evolve(state, ev)
    result = GAME.outcome(state)
    lines.append(
        {
            "result": {
                "ranking": [list(group) for group in result.ranking],
                "points": list(state.points),
                "cash": list(state.cash),
                "reason": result.reason,
            }
        }
    )
    return lines


@pytest.mark.parametrize("name", sorted(GAMES))
def test_golden_game_replays_event_for_event(name: str) -> None:
    lines = [json.loads(line) for line in (GOLDEN / name).read_text().splitlines()]
    players = lines[0]["config"]["players"]
    state = GAME.initial_state()
    for line in lines[1:]:
        if "event" in line:
            state = GAME.evolve(state, EVENTS.decode(line["event"]))
        elif "chance" in line:
            answer = EVENTS.decode(line["chance"])
            assert isinstance(answer, ChanceResolved)
            request = GAME.chance(state)
            assert request is not None and request.purpose == answer.purpose
            state = GAME.evolve(state, answer)
        elif "command" in line:
            events = GAME.decide(COMMANDS.decode(line["command"]), state)
            assert [EVENTS.encode(e) for e in events] == line["events"]
            for ev in events:
                state = GAME.evolve(state, ev)
        else:
            result = GAME.outcome(state)
            assert result.finished
            assert [list(g) for g in result.ranking] == line["result"]["ranking"]
            assert list(state.points) == line["result"]["points"]
            assert list(state.cash) == line["result"]["cash"]
            assert result.reason == line["result"]["reason"]
            assert len(state.cash) == players


def main() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for name, (players, seed, bot) in GAMES.items():
        lines = record(players, seed, bot)
        text = "\n".join(json.dumps(line, sort_keys=True, separators=(",", ":")) for line in lines)
        (GOLDEN / name).write_text(text + "\n")
        print(name, len(lines), "lines")


if __name__ == "__main__":
    main()
