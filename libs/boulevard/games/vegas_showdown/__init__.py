"""Vegas Showdown (Avalon Hill 2005): bid for tiles, build a hotel-casino, most Fame wins.

Pure rules (`rules.py`, placement in `sheet.py`) over the data file `vegas_showdown.json`,
with the disputed 7x5 sheet behind the game option `sheet=7x5`. The platform reaches the
game only through `GAME`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from boulevard.games.base import GameDefinition
from boulevard.games.vegas_showdown import bots, rules
from boulevard.games.vegas_showdown.data import DATA
from boulevard.games.vegas_showdown.render import render
from boulevard.games.vegas_showdown.types import (
    COMMAND_TYPES,
    EVENT_TYPES,
    AnyEvent,
    Command,
    VegasShowdownState,
    VegasShowdownView,
)

GAME: GameDefinition[VegasShowdownState, Command, AnyEvent, VegasShowdownView] = GameDefinition(
    name="vegas_showdown",
    title="Vegas Showdown",
    min_players=DATA.min_players,
    max_players=DATA.max_players,
    command_types=COMMAND_TYPES,
    event_types=EVENT_TYPES,
    initial_state=rules.initial_state,
    new_game=rules.new_game,
    decide=rules.decide,
    evolve=rules.evolve,
    chance=rules.chance,
    legal_commands=rules.legal_commands,
    view=rules.view,
    outcome=rules.outcome,
    money=rules.money,
    render=render,
    bots={"random": bots.random_bot, "heuristic": bots.heuristic_bot},
    view_type=VegasShowdownView,
)

# The recorded rules versions whose decisions differ from GAME's (boulevard.games.versions):
# version 1 had no staged renovation (StageRenovation, FinishRenovation, CancelRenovation),
# so its list offered only renovations of one removal or one placement
# (docs/games/vegas-showdown.md).
EARLIER_RULES: Mapping[int, GameDefinition[Any, Any, Any, Any]] = {
    1: dataclasses.replace(GAME, decide=rules.decide_v1, legal_commands=rules.legal_commands_v1),
}

__all__ = ["EARLIER_RULES", "GAME"]
