"""Tables for the Vegas Showdown tests: a finished setup with chosen chance, and seats given
sheets directly (the rules never care how a sheet came about, only that it is legal)."""

from __future__ import annotations

from dataclasses import replace

from boulevard.games.base import ChanceKind, ChanceResolved, GameConfig
from boulevard.games.vegas_showdown import GAME
from boulevard.games.vegas_showdown.data import DATA
from boulevard.games.vegas_showdown.rules import chance
from boulevard.games.vegas_showdown.types import Placement, SeatState, VegasShowdownState


def tile(key: str, copy: int = 0) -> int:
    """The id of the `copy`-th tile of a kind."""
    return DATA.tiles_of(key)[copy]


def setup_events(players: int, first: int = 0, sheet: str = "") -> list[object]:
    """new_game's events and identity answers to every setup chance (`first` holds the
    button): stacks and deck in data order."""
    options = (("sheet", sheet),) if sheet else ()
    events: list[object] = list(GAME.new_game(GameConfig(players, options)))
    state = GAME.initial_state()
    for ev in events:
        state = GAME.evolve(state, ev)
    while (request := chance(state)) is not None:
        if request.kind is ChanceKind.ROLL:
            values: tuple[int, ...] = (first + 1,)
        else:
            values = tuple(range(request.count))
        answer = ChanceResolved(request.purpose, request.kind, values, -1, request.sides)
        events.append(answer)
        state = GAME.evolve(state, answer)
    return events


def table(
    players: int = 3, first: int = 0, deck: tuple[str, ...] | None = None, sheet: str = ""
) -> VegasShowdownState:
    """A game just set up: turn 1 waits for the button holder's StartTurn."""
    state = GAME.initial_state()
    for ev in setup_events(players, first, sheet):
        state = GAME.evolve(state, ev)
    if deck is not None:
        state = replace(state, deck=deck)
    return state


def with_seat(
    state: VegasShowdownState,
    seat: int,
    sheet: tuple[Placement, ...] = (),
    aside: tuple[int, ...] = (),
    cash: int | None = None,
) -> VegasShowdownState:
    """Give a seat a sheet and off-sheet tiles (Fame as the placed tiles give)."""
    me = state.seats[seat]
    fame = sum(DATA.kind_of(p.tile).fame for p in sheet)
    new = replace(me, sheet=sheet, aside=aside, fame=fame, cash=me.cash if cash is None else cash)
    seats: tuple[SeatState, ...] = (*state.seats[:seat], new, *state.seats[seat + 1 :])
    return replace(state, seats=seats)


def started(state: VegasShowdownState) -> VegasShowdownState:
    """Run the button holder's StartTurn."""
    from boulevard.games.vegas_showdown.types import StartTurn

    for ev in GAME.decide(StartTurn(state.button), state):
        state = GAME.evolve(state, ev)
    return state


def run(state: VegasShowdownState, *commands: object) -> VegasShowdownState:
    for command in commands:
        for ev in GAME.decide(command, state):
            state = GAME.evolve(state, ev)
    return state


# A small casino corner everyone can reuse (8x5 sheet, casino entrance at (0, 2) west):
# Slots at the entrance (doors N E W), Fancy Slots east of it (doors E W).
SLOTS_AT_ENTRANCE = Placement(tile("slots"), 0, 2, 0)
FANCY_SLOTS_NEXT = Placement(tile("fancy_slots"), 1, 2, 0)
