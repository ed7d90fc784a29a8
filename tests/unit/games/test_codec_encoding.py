"""The codec's encoding, chosen per type since issue 28, is the one its docstring promises —
here written out plainly, value by value, as the specification: every event of random games
of every game, and every state along them (what snapshots encode), encode to the same plain
data and the same canonical bytes. (The golden histories, tests/unit/audit, check the bytes
of real logs: the audit re-encodes each payload.)"""

from __future__ import annotations

import dataclasses
import json
import random
from enum import Enum
from typing import Any

import pytest

from boulevard.games import REGISTRY, get_game
from boulevard.games.base import OMITTED_AT_DEFAULT, CommandAccepted, GameConfig
from boulevard.games.codec import Codec, to_plain
from boulevard.games.playout import resolve_locally


def spec(value: Any) -> Any:
    """`{"type": …}`-less plain data as the module docstring says: tuples as lists,
    frozensets as sorted lists, enums by value, nested dataclasses as dicts (a field added
    later left out at its default), dicts as sorted [key, value] pairs."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if f.metadata.get(OMITTED_AT_DEFAULT) and v == f.default:
                continue
            out[f.name] = spec(v)
        return out
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [spec(v) for v in value]
    if isinstance(value, frozenset | set):
        return sorted((spec(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, dict):
        pairs = sorted(value.items(), key=lambda kv: json.dumps(spec(kv[0]), sort_keys=True))
        return [[spec(k), spec(v)] for k, v in pairs]
    return value


def played(name: str, seed: int, games: int = 3, cap: int = 200) -> tuple[list[Any], list[Any]]:
    """The events and the states of `games` random 4-seat games of `name`."""
    game = get_game(name)
    rng = random.Random(seed)
    events: list[Any] = []
    states: list[Any] = []
    for _ in range(games):
        state = game.initial_state()
        for event in game.new_game(GameConfig(4, ())):
            events.append(event)
            state = game.evolve(state, event)
        for _ in range(cap):
            if game.outcome(state).finished:
                break
            request = game.chance(state)
            if request is not None:
                new = [resolve_locally(request, rng)]
            else:
                choices = [c for seat in range(4) for c in game.legal_commands(state, seat)]
                command = choices[rng.randrange(len(choices))]
                events.append(command)  # commands are encoded too (CommandAccepted)
                new = list(game.decide(command, state))
            for event in new:
                events.append(event)
                state = game.evolve(state, event)
            states.append(state)
    # The platform's record of a command, with its later field at its default and not.
    for stand_in in (False, True):
        events.append(CommandAccepted(0, "p0", "k1", 3, "0a", "ff", stand_in=stand_in))
    return events, states


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_events_and_states_encode_as_the_specification_says(name: str) -> None:
    game = get_game(name)
    codec = Codec((*game.event_types, *game.command_types))
    events, states = played(name, seed=len(name))
    for event in events:
        assert to_plain(event) == spec(event)
        expected = {"type": type(event).__name__, **spec(event)}
        canonical = json.dumps(expected, sort_keys=True, separators=(",", ":")).encode()
        assert codec.dumps(event) == canonical
    for state in states:
        assert to_plain(state) == spec(state)
