"""Do boardgame.io's Las Vegas (bench/bgio/las_vegas.js) and Boulevard's play the same game?

`node bench/bgio/check.js N` plays N random games with boardgame.io's own local client (its
reducer, its seeded PRNG) and records each: the banknote shuffle, then every step's roll, the
seat's legal moves and the move chosen, and the final money and ranking. This replays each
game move for move through Boulevard's rules (`boulevard.games.las_vegas`), feeding its
chance requests boardgame.io's draws, and fails on the first difference: a chance request
Boulevard would not make (another purpose, kind, count or sides, or at another moment), other
legal moves, another seat to act, or other scores or ranking at the end. So a bench that
compares the two compares the same rules.

Usage: python bench/bgio_check.py [GAMES]   (default 200; needs `npm ci --prefix bench/bgio`)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from boulevard.games import get_game
from boulevard.games.base import ChanceKind, ChanceResolved, GameConfig
from boulevard.games.las_vegas.types import ROLL_TURN, SHUFFLE_BANKNOTES, PlaceDice

BGIO = Path(__file__).resolve().parent / "bgio"


class Mismatch(AssertionError):
    """The two implementations disagreed; the message says where."""


def replay(trace: dict[str, Any], index: int) -> int:
    """Replay one recorded boardgame.io game through Boulevard's rules; its number of moves.
    Raises Mismatch on the first difference."""
    game = get_game("las_vegas")
    players = int(trace["players"])
    state = game.initial_state()
    for event in game.new_game(GameConfig(players)):
        state = game.evolve(state, event)

    def expect(ok: bool, what: str) -> None:
        if not ok:
            raise Mismatch(f"game {index}: {what}")

    request = game.chance(state)
    expect(
        request is not None
        and request.purpose == SHUFFLE_BANKNOTES
        and request.kind is ChanceKind.SHUFFLE
        and request.count == len(trace["shuffle"]),
        f"Boulevard asks {request} first, boardgame.io shuffled {len(trace['shuffle'])} notes",
    )
    assert request is not None
    state = game.evolve(
        state, ChanceResolved(request.purpose, request.kind, tuple(trace["shuffle"]))
    )
    for number, step in enumerate(trace["steps"]):
        where = f"move {number} (seat {step['seat']})"
        request = game.chance(state)
        roll = tuple(step["roll"])
        expect(
            request is not None
            and request.purpose == ROLL_TURN
            and request.kind is ChanceKind.ROLL
            and request.count == len(roll)
            and all(1 <= v <= request.sides for v in roll),
            f"{where}: Boulevard asks {request}, boardgame.io rolled {roll}",
        )
        assert request is not None
        state = game.evolve(
            state, ChanceResolved(request.purpose, request.kind, roll, -1, request.sides)
        )
        expect(game.chance(state) is None, f"{where}: Boulevard wants more chance")
        for seat in range(players):
            legal = sorted(c.number for c in game.legal_commands(state, seat))
            theirs = step["legal"] if seat == step["seat"] else []
            expect(legal == theirs, f"{where}: seat {seat} may play {legal}, not {theirs}")
        for event in game.decide(PlaceDice(seat=step["seat"], number=step["move"]), state):
            state = game.evolve(state, event)
    outcome = game.outcome(state)
    expect(outcome.finished, "boardgame.io's game ended, Boulevard's did not")
    expect(
        list(outcome.scores) == trace["money"],
        f"scores {list(outcome.scores)} vs boardgame.io's {trace['money']}",
    )
    ranking = [list(group) for group in outcome.ranking]
    expect(ranking == trace["ranking"], f"ranking {ranking} vs boardgame.io's {trace['ranking']}")
    return len(trace["steps"])


def check(games: int, players: int = 4) -> tuple[int, int]:
    """Play `games` random games in boardgame.io and replay each through Boulevard's rules:
    (games, moves) checked. Raises Mismatch on a difference."""
    out = subprocess.run(
        ["node", str(BGIO / "check.js"), str(games), str(players)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    traces = [json.loads(line) for line in out.splitlines()]
    if len(traces) != games:
        raise Mismatch(f"boardgame.io played {len(traces)} games, not {games}")
    moves = sum(replay(trace, i) for i, trace in enumerate(traces))
    return games, moves


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    for seats in (2, 3, 4, 5):
        checked, moves = check(count if seats == 4 else max(1, count // 4), seats)
        print(
            f"{seats} players: {checked} random games, {moves:,} moves: the same rolls asked, "
            "the same legal moves, the same scores and ranking in boardgame.io and Boulevard"
        )
