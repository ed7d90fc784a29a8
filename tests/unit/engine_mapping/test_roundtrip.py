"""Every legal command and every view of random games survives the trip through the engine's
protos: dataclass → message → bytes → message → the same dataclass."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from boulevard.api.v1 import engine_pb2
from boulevard.contract.mapping import (
    action_to_command,
    command_to_action,
    game_view_type,
    proto_to_view,
    view_to_proto,
)
from boulevard.games import REGISTRY
from boulevard.games.base import GameConfig, GameDefinition
from boulevard.games.playout import playout

AnyGame = GameDefinition[Any, Any, Any, Any]

# (players, options) per game: every table size, and the variants that change the view.
TABLES: dict[str, list[tuple[int, tuple[tuple[str, str], ...]]]] = {
    "las_vegas": [(2, ()), (3, (("white_dice", "true"),)), (5, ())],
    "lords_of_vegas": [(2, ()), (4, ())],
}
SEEDS = (1, 2)


def _tables(name: str) -> list[tuple[int, tuple[tuple[str, str], ...]]]:
    game = REGISTRY[name]
    return TABLES.get(name, [(game.min_players, ()), (game.max_players, ())])


CASES = [
    pytest.param(name, players, options, seed, id=f"{name}-{players}p-{seed}")
    for name in sorted(REGISTRY)
    for players, options in _tables(name)
    for seed in SEEDS
]


def _states(game: AnyGame, config: GameConfig, seed: int) -> list[Any]:
    """Every state a random game passes through, first to last."""
    played = playout(game, config, random.Random(seed), game.bots["random"])
    assert game.outcome(played.state).finished
    state = game.initial_state()
    states = [state]
    for event in played.events:
        state = game.evolve(state, event)
        states.append(state)
    return states


def _roundtrip_command(game: AnyGame, command: object) -> object:
    wire = command_to_action(game, command).SerializeToString()
    return action_to_command(game, engine_pb2.Action.FromString(wire))


def _roundtrip_view(game: AnyGame, view: object) -> object:
    message = view_to_proto(game, view)
    assert message.rendered == game.render(view)
    return proto_to_view(game, engine_pb2.GameView.FromString(message.SerializeToString()))


@pytest.mark.parametrize(("name", "players", "options", "seed"), CASES)
def test_every_legal_command_and_view_round_trips(
    name: str, players: int, options: tuple[tuple[str, str], ...], seed: int
) -> None:
    game = REGISTRY[name]
    config = GameConfig(players, options)
    seen_commands: set[type] = set()
    for state in _states(game, config, seed):
        if state == game.initial_state():
            continue  # no seats yet: nothing to see or do
        for seat in (*range(players), None):
            view = game.view(state, seat)
            assert type(view) is game_view_type(game)
            assert _roundtrip_view(game, view) == view
            if seat is None:
                continue
            for command in game.legal_commands(state, seat):
                assert _roundtrip_command(game, command) == command
                seen_commands.add(type(command))
    assert seen_commands, "a whole game offered no command"


def test_frozensets_go_on_the_wire_sorted() -> None:
    """Deterministic bytes (same view, same message) whatever a frozenset's iteration order."""
    game = REGISTRY["lords_of_vegas"]
    played = playout(game, GameConfig(2), random.Random(3), game.bots["random"])
    lots = [f"{block}{n}" for block in "ABCDEF" for n in range(1, 4)]
    forward = dataclasses.replace(played.state, reorganized=frozenset(lots))
    backward = dataclasses.replace(played.state, reorganized=frozenset(reversed(lots)))
    message = view_to_proto(game, game.view(forward, 0))
    assert list(message.lords_of_vegas.reorganized) == sorted(lots)
    assert (
        message.SerializeToString()
        == view_to_proto(game, game.view(backward, 0)).SerializeToString()
    )
    assert _roundtrip_view(game, game.view(forward, 0)) == game.view(forward, 0)
