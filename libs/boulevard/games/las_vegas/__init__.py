"""Las Vegas (Rüdiger Dorn): dice on six casinos, four rounds, most money wins.

Pure rules (see `rules.py`), with the neutral white-dice variant behind the game option
`white_dice=true`. The platform reaches the game only through `GAME`.
"""

from __future__ import annotations

from boulevard.games.base import GameDefinition, GameOption
from boulevard.games.las_vegas import bots, rules
from boulevard.games.las_vegas.data import DATA
from boulevard.games.las_vegas.describe import describe
from boulevard.games.las_vegas.render import render
from boulevard.games.las_vegas.types import (
    COMMAND_TYPES,
    EVENT_TYPES,
    AnyEvent,
    Command,
    LasVegasState,
    LasVegasView,
)

GAME: GameDefinition[LasVegasState, Command, AnyEvent, LasVegasView] = GameDefinition(
    name="las_vegas",
    title="Las Vegas",
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
    describe=describe,
    view_type=LasVegasView,
    options={
        rules.WHITE_DICE_OPTION: GameOption(
            ("true", "false"), "false", "the neutral white-dice variant (2 to 4 players)"
        )
    },
)

__all__ = ["GAME"]
