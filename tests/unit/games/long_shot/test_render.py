"""The plain-text board of a Long Shot view (what `boulevard watch` and the demo print)."""

from __future__ import annotations

from boulevard.games.long_shot import GAME
from boulevard.games.long_shot.render import render
from tests.unit.games.long_shot.support import horse_roll, rolled, table


def test_the_roll_line_says_which_die_is_not_rolled_yet() -> None:
    """Between the horse die and the move die the board read "roll: horse 3 moves None"."""
    half = GAME.evolve(table(), horse_roll(3))
    assert "  roll: horse 3, moves not rolled yet" in render(GAME.view(half, None)).splitlines()
    both = rolled(table(), 3, 3)
    assert "  roll: horse 3, moves 3" in render(GAME.view(both, None)).splitlines()
    assert "None" not in render(GAME.view(half, None))
