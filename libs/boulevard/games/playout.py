"""Play a game in-process: chance answered from a caller-given generator, seats by bots.

Used by tests, benchmarks and the registry-wide conformance test. The random generator is
passed in, so the rules packages stay free of global randomness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from boulevard.games.base import (
    Bot,
    ChanceKind,
    ChanceRequest,
    ChanceResolved,
    GameConfig,
    GameDefinition,
    RandomSource,
    Seat,
)


def resolve_locally(request: ChanceRequest, rng: RandomSource) -> ChanceResolved:
    """Answer a chance request without the dice service (tests and benchmarks only)."""
    if request.kind is ChanceKind.ROLL:
        values = tuple(rng.randrange(1, request.sides + 1) for _ in range(request.count))
    else:
        items = list(range(request.count))
        for i in range(len(items) - 1, 0, -1):
            j = rng.randrange(0, i + 1)
            items[i], items[j] = items[j], items[i]
        values = tuple(items)
    return ChanceResolved(request.purpose, request.kind, values, -1, request.sides)


@dataclass
class Playout:
    state: Any
    events: list[Any]
    commands: int


def playout(
    game: GameDefinition[Any, Any, Any, Any],
    config: GameConfig,
    rng: RandomSource,
    bots: Mapping[Seat, Bot] | Bot,
    max_commands: int = 20_000,
) -> Playout:
    """Play to the end (or `max_commands`), returning the final state and every event.

    Seats act in seat order among those with legal commands, which is how a table of bots
    behind the engine behaves when each polls its own legal commands.
    """
    state = game.initial_state()
    events: list[Any] = []

    def apply(evs: Sequence[Any]) -> None:
        nonlocal state
        for ev in evs:
            state = game.evolve(state, ev)
            events.append(ev)

    apply(game.new_game(config))
    commands = 0
    while commands < max_commands:
        request = game.chance(state)
        if request is not None:
            apply([resolve_locally(request, rng)])
            continue
        if game.outcome(state).finished:
            break
        for seat in range(config.players):
            legal = game.legal_commands(state, seat)
            if legal:
                bot = bots[seat] if isinstance(bots, Mapping) else bots
                command = bot(game.view(state, seat), legal, seat, rng)
                apply(game.decide(command, state))
                commands += 1
                break
        else:
            raise RuntimeError("no seat has a legal command, no chance pending, not finished")
    return Playout(state, events, commands)
