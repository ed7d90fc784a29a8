"""Game rules in-process: full random 4-player games per second, events per second through
`evolve`, and the CPU cost of deciding and replaying one complete game.

    .venv/bin/python bench/games.py [--games N] [--game lords_of_vegas]

Beside our figures it measures the raw limit of the same kind of work in the same run (a
pure-Python fold of frozen dataclasses with `dataclasses.replace` and a `match`, as in
../shared/PERFORMANCE.md) and prints the ratio.
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass, replace
from typing import Any

from boulevard.games import REGISTRY
from boulevard.games.base import ChanceResolved, GameConfig, GameDefinition
from boulevard.games.playout import playout


@dataclass(frozen=True, slots=True)
class _Counter:
    n: int = 0
    total: int = 0


@dataclass(frozen=True, slots=True)
class _Added:
    amount: int


@dataclass(frozen=True, slots=True)
class _Reset:
    pass


def _raw_fold_rate(events: int = 300_000) -> float:
    """Events/s of the simplest immutable fold: replace() on a frozen dataclass via match."""
    stream: list[_Added | _Reset] = [_Added(i % 7) if i % 50 else _Reset() for i in range(events)]
    state = _Counter()
    start = time.process_time()
    for ev in stream:
        match ev:
            case _Added(amount=amount):
                state = replace(state, n=state.n + 1, total=state.total + amount)
            case _Reset():
                state = replace(state, total=0)
    return events / (time.process_time() - start)


def _replay(game: GameDefinition[Any, Any, Any, Any], events: list[Any]) -> Any:
    state = game.initial_state()
    for ev in events:
        state = game.evolve(state, ev)
    return state


def _decide_and_replay(
    game: GameDefinition[Any, Any, Any, Any], script: list[tuple[str, Any]]
) -> Any:
    """What the engine does for one game: decide every command and evolve every event
    (chance answers fed back as recorded), without bots or legal-command listing."""
    state = game.initial_state()
    for kind, item in script:
        if kind == "chance":
            state = game.evolve(state, item)
            continue
        for ev in game.new_game(item) if kind == "new" else game.decide(item, state):
            state = game.evolve(state, ev)
    return state


def _record_script(
    game: GameDefinition[Any, Any, Any, Any], config: GameConfig, seed: int
) -> list[tuple[str, Any]]:
    """Re-derive the command sequence of a random game from its events (commands are not
    events, so we capture them by wrapping the bot)."""
    commands: list[Any] = []
    bot = game.bots["random"]

    def recording_bot(view: Any, legal: Any, seat: int, rng: Any) -> Any:
        command = bot(view, legal, seat, rng)
        commands.append(command)
        return command

    result = playout(game, config, random.Random(seed), recording_bot)
    script: list[tuple[str, Any]] = [("new", config)]
    # Interleave: chance events appear in the log between the events of commands.
    it = iter(commands)
    state = game.initial_state()
    for ev in game.new_game(config):
        state = game.evolve(state, ev)
    pending = [ev for ev in result.events[len(game.new_game(config)) :]]
    k = 0
    while k < len(pending):
        if isinstance(pending[k], ChanceResolved):
            script.append(("chance", pending[k]))
            state = game.evolve(state, pending[k])
            k += 1
            continue
        command = next(it)
        produced = game.decide(command, state)
        script.append(("command", command))
        for ev in produced:
            state = game.evolve(state, ev)
        k += len(produced)
    return script


def bench_game(name: str, games: int, players: int) -> None:
    game = REGISTRY[name]
    config = GameConfig(players)
    events_total = 0
    commands_total = 0
    logs: list[list[Any]] = []
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    for seed in range(games):
        result = playout(game, config, random.Random(seed), game.bots["random"])
        events_total += len(result.events)
        commands_total += result.commands
        logs.append(result.events)
    wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu

    start = time.process_time()
    for events in logs:
        _replay(game, events)
    replay_cpu = time.process_time() - start

    scripts = [_record_script(game, config, seed) for seed in range(min(games, 50))]
    start = time.process_time()
    for script in scripts:
        _decide_and_replay(game, script)
    decide_cpu = (time.process_time() - start) / len(scripts)

    raw = _raw_fold_rate()
    evolve_rate = events_total / replay_cpu
    per_game_events = events_total / games
    rows = [
        ("full games per second (bots, legal_commands, decide, evolve)", f"{games / wall:,.1f}"),
        ("CPU per full game", f"{1000 * cpu / games:.1f} ms"),
        ("events / commands per game", f"{per_game_events:.0f} / {commands_total / games:.0f}"),
        ("events/s through evolve (replay)", f"{evolve_rate:,.0f}"),
        ("raw fold (frozen dataclass, match + replace)", f"{raw:,.0f}"),
        ("ratio evolve / raw fold", f"{evolve_rate / raw:.2f}"),
        ("CPU to decide + replay one game (no bots)", f"{1000 * decide_cpu:.1f} ms"),
        ("CPU to replay one game from its log", f"{1000 * replay_cpu / games:.1f} ms"),
    ]
    print(f"{name}, {players} players, {games} random games (random bots, seeded chance)")
    for label, value in rows:
        print(f"  {label:<62} {value:>14}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--game", action="append", help="game name (default: all that seat 4)")
    args = parser.parse_args()
    names = args.game or [
        n for n, g in sorted(REGISTRY.items()) if g.min_players <= args.players <= g.max_players
    ]
    for name in names:
        bench_game(name, args.games, args.players)


if __name__ == "__main__":
    main()
