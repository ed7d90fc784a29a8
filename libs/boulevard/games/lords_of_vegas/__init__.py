"""Lords of Vegas (Mayfair 2010), every rule, as a pure decider.

Rulings: docs/games/lords-of-vegas.md.
"""

from __future__ import annotations

from boulevard.games.base import GameDefinition
from boulevard.games.lords_of_vegas.bots import heuristic_bot, random_bot
from boulevard.games.lords_of_vegas.describe import describe
from boulevard.games.lords_of_vegas.render import render
from boulevard.games.lords_of_vegas.rules import (
    chance,
    decide,
    evolve,
    initial_state,
    legal_commands,
    money,
    new_game,
    outcome,
    view,
)
from boulevard.games.lords_of_vegas.types import (
    COMMAND_TYPES,
    EVENT_TYPES,
    Command,
    Event,
    State,
)

GAME: GameDefinition[State, Command, Event, State] = GameDefinition(
    name="lords_of_vegas",
    title="Lords of Vegas",
    min_players=2,
    max_players=4,
    command_types=COMMAND_TYPES,
    event_types=EVENT_TYPES,
    initial_state=initial_state,
    new_game=new_game,
    decide=decide,
    evolve=evolve,
    chance=chance,
    legal_commands=legal_commands,
    view=view,
    outcome=outcome,
    money=money,
    render=render,
    bots={"random": random_bot, "heuristic": heuristic_bot},
    describe=describe,
    view_type=State,
    options={},  # the rulebook has no variants we offer (docs/games/lords-of-vegas.md)
)

__all__ = ["GAME"]
