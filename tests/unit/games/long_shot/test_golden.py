"""Checked-in complete games: the rules must decide exactly the recorded events again.

They were recorded before rules were pinned, so under rules version 1; one of them has a
re-rolled 0, which version 2 decides differently (test_rules_v2.py)."""

from __future__ import annotations

import pytest

from boulevard.games.base import ChanceResolved, GameConfig
from boulevard.games.versions import rules_for
from tests.unit.games.long_shot.golden import COMMANDS, EVENTS, GOLDEN, Golden, read

GAME = rules_for("long_shot", "").definition  # version 1


@pytest.mark.parametrize("golden", GOLDEN, ids=lambda g: g.name)
def test_golden_game_is_decided_and_replayed_identically(golden: Golden) -> None:
    header, log, final = read(golden)
    first = EVENTS.decode(log[0]["event"])
    assert (first,) == tuple(GAME.new_game(GameConfig(header["players"])))
    state = GAME.evolve(GAME.initial_state(), first)
    i = 1
    commands = 0
    while i < len(log):
        if "event" in log[i]:
            event = EVENTS.decode(log[i]["event"])
            assert isinstance(event, ChanceResolved), event
            request = GAME.chance(state)
            assert request is not None
            assert (request.purpose, request.kind, request.count, request.sides) == (
                event.purpose,
                event.kind,
                len(event.values),
                event.sides,
            )
            state = GAME.evolve(state, event)
            i += 1
            continue
        command = COMMANDS.decode(log[i]["command"])
        assert GAME.chance(state) is None and command in GAME.legal_commands(state, command.seat)
        decided = tuple(GAME.decide(command, state))
        recorded = tuple(EVENTS.decode(line["event"]) for line in log[i + 1 : i + 1 + len(decided)])
        assert decided == recorded
        for event in decided:
            state = GAME.evolve(state, event)
        i += 1 + len(decided)
        commands += 1
    outcome = GAME.outcome(state)
    assert outcome.finished and commands > 50
    assert list(outcome.scores) == final["money"]
    assert [list(g) for g in outcome.ranking] == final["ranking"]
