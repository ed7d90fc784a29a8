"""Checked-in complete games: the rules must decide exactly the recorded events again."""

from __future__ import annotations

import pytest

from boulevard.games.base import ChanceResolved, GameConfig
from boulevard.games.las_vegas import GAME
from boulevard.games.las_vegas.types import DicePlaced, PlaceDice
from tests.unit.games.las_vegas.golden import GOLDEN, Golden, read


@pytest.mark.parametrize("golden", GOLDEN, ids=lambda g: g.name)
def test_golden_game_is_decided_and_replayed_identically(golden: Golden) -> None:
    header, events, final = read(golden)
    log = list(events)
    config = GameConfig(header["players"], (("white_dice", str(header["white_dice"]).lower()),))
    assert tuple(log[:1]) == tuple(GAME.new_game(config))

    state = GAME.evolve(GAME.initial_state(), log[0])
    i = 1
    while i < len(log):
        event = log[i]
        if isinstance(event, ChanceResolved):
            request = GAME.chance(state)
            assert request is not None and (request.purpose, request.count) == (
                event.purpose,
                len(event.values),
            )
            batch: tuple[object, ...] = (event,)
        else:
            # Every other event follows from a placement: re-decide it from the command.
            assert isinstance(event, DicePlaced), event
            batch = tuple(GAME.decide(PlaceDice(event.seat, event.casino), state))
            assert tuple(log[i : i + len(batch)]) == batch
        for recorded in batch:
            state = GAME.evolve(state, recorded)
        i += len(batch)

    outcome = GAME.outcome(state)
    assert outcome.finished
    assert list(outcome.scores) == final["money"]
    assert [list(g) for g in outcome.ranking] == final["ranking"]
