"""A view mapped `like` another view's message (a copy, with the differing top-level fields
written anew; issue 28) is the same message, byte for byte, as the view mapped from scratch:
for every game, every seat and the spectator, against another seat's view at the same
version and against the view one move earlier (where more fields differ, nested and
repeated ones among them)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from boulevard.contract import mapping
from boulevard.games import REGISTRY, get_game
from boulevard.games.base import GameConfig
from boulevard.games.playout import resolve_locally


def states(name: str, seed: int, games: int = 2, cap: int = 100) -> list[Any]:
    """The states of `games` random 4-seat games of `name` (each cut at `cap` commands)."""
    game = get_game(name)
    rng = random.Random(seed)
    out = []
    for _ in range(games):
        state = game.initial_state()
        for event in game.new_game(GameConfig(4, ())):
            state = game.evolve(state, event)
        for _ in range(cap):
            if game.outcome(state).finished:
                break
            request = game.chance(state)
            if request is not None:
                state = game.evolve(state, resolve_locally(request, rng))
                continue
            choices = [c for seat in range(4) for c in game.legal_commands(state, seat)]
            for event in game.decide(choices[rng.randrange(len(choices))], state):
                state = game.evolve(state, event)
            out.append(state)
        out.append(state)
    return out


def same(a: Any, b: Any) -> None:
    assert a == b
    assert a.SerializeToString() == b.SerializeToString()
    assert a.SerializeToString(deterministic=True) == b.SerializeToString(deterministic=True)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_a_view_mapped_like_another_is_the_view_mapped_afresh(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    game = get_game(name)
    view_type = mapping.game_view_type(game)
    all_states = states(name, seed=len(name))
    mapping.view_to_proto(game, game.view(all_states[0], 0))  # the view's writer compiled
    copies = 0
    field_writers = mapping._field_writers

    def counting(desc: Any, tp: Any) -> Any:
        nonlocal copies
        copies += tp is view_type  # once the view's writer is compiled: the copying path only
        return field_writers(desc, tp)

    monkeypatch.setattr(mapping, "_field_writers", counting)
    before: tuple[Any, Any] | None = None
    for state in all_states:
        first = game.view(state, 0)
        first_message = mapping.view_to_proto(game, first)
        for seat in (None, 0, 1, 2, 3):
            view = game.view(state, seat)
            fresh = mapping.view_to_proto(game, view)
            same(mapping.view_to_proto(game, view, (first, first_message)), fresh)
            if before is not None:
                same(mapping.view_to_proto(game, view, before), fresh)
        before = (first, first_message)
    assert copies > 0  # the copying path was taken, not only the mapping from scratch
