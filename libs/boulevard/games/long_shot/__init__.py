"""Long Shot (Chris Handy): horse racing and betting, 3 to 8 players, most money wins.

Pure rules (see `rules.py`) over the data file `long_shot.json` (stand-ins marked there);
rulings in docs/games/long-shot.md. The platform reaches the game only through `GAME`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from boulevard.games.base import GameDefinition
from boulevard.games.long_shot import bots, rules
from boulevard.games.long_shot.data import DATA
from boulevard.games.long_shot.render import render
from boulevard.games.long_shot.types import (
    COMMAND_TYPES,
    EVENT_TYPES,
    AnyEvent,
    Command,
    LongShotState,
    LongShotView,
)

GAME: GameDefinition[LongShotState, Command, AnyEvent, LongShotView] = GameDefinition(
    name="long_shot",
    title="Long Shot",
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
    view_type=LongShotView,
)

# The recorded rules versions whose decisions differ from GAME's (boulevard.games.versions):
# version 1 let a re-rolled 0 steal like the opening roll's (docs/games/long-shot.md).
EARLIER_RULES: Mapping[int, GameDefinition[Any, Any, Any, Any]] = {
    1: dataclasses.replace(GAME, decide=rules.decide_v1),
}

__all__ = ["EARLIER_RULES", "GAME"]
