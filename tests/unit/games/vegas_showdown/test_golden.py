"""Checked-in complete games: the rules must decide exactly the recorded events again from
the recorded commands, and replaying the events must give the recorded result."""

from __future__ import annotations

import pytest

from boulevard.games.base import ChanceResolved, GameConfig
from boulevard.games.vegas_showdown import GAME
from tests.unit.games.vegas_showdown.golden import GOLDEN, Golden, read


@pytest.mark.parametrize("golden", GOLDEN, ids=lambda g: g.name)
def test_golden_game_is_decided_and_replayed_identically(golden: Golden) -> None:
    header, log, commands, final = read(golden)
    first = tuple(GAME.new_game(GameConfig(header["players"])))
    assert tuple(log[: len(first)]) == first
    state = GAME.initial_state()
    for event in first:
        state = GAME.evolve(state, event)
    i = len(first)
    pending = iter(commands)
    while i < len(log):
        event = log[i]
        if isinstance(event, ChanceResolved):
            request = GAME.chance(state)
            assert request is not None and request.purpose == event.purpose
            batch: tuple[object, ...] = (event,)
        else:
            command = next(pending)
            assert command in GAME.legal_commands(state, command.seat)
            batch = tuple(GAME.decide(command, state))
            assert tuple(log[i : i + len(batch)]) == batch
        for recorded in batch:
            state = GAME.evolve(state, recorded)
        i += len(batch)
    assert next(pending, None) is None
    outcome = GAME.outcome(state)
    assert outcome.finished and state.end_reason == final["reason"]
    assert list(outcome.scores) == final["fame"]
    assert [list(g) for g in outcome.ranking] == final["ranking"]
