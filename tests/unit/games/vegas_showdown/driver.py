"""A fast random driver for property tests: it draws commands straight from the rules'
generators (`bids`, `placements`) instead of listing every legal command, so that a
thousand games run in seconds. Every command it makes is legal (decide must accept it)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from boulevard.games.base import GameConfig
from boulevard.games.playout import resolve_locally
from boulevard.games.vegas_showdown import GAME, sheet
from boulevard.games.vegas_showdown.rules import bids, chance, placements
from boulevard.games.vegas_showdown.types import (
    CancelRenovation,
    Command,
    FinishRenovation,
    Phase,
    PlaceTile,
    Publicity,
    Renovate,
    StageRenovation,
    StartTurn,
    VegasShowdownState,
)


@dataclass
class Game:
    players: int
    seed: int
    state: VegasShowdownState = field(default_factory=GAME.initial_state)
    events: list[Any] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)


def pick(state: VegasShowdownState, rng: random.Random) -> Command:
    if state.phase is Phase.TURN_START:
        return StartTurn(state.button)
    if state.phase is Phase.PLACING:
        seat = state.to_place[0]
        spots = placements(state, seat) if rng.random() < 0.9 else []
        return PlaceTile(seat, rng.choice(spots)) if spots else PlaceTile(seat)
    seat = state.current
    assert seat is not None
    if state.staging:  # a one-step renovation in stages (below): carry it out, or drop it
        return FinishRenovation(seat) if rng.random() < 0.8 else CancelRenovation(seat)
    roll = rng.random()
    if roll < 0.6:
        offers = bids(state, seat)
        if offers:
            # cheap bids more often: over-bidding everything would starve the game of money
            offers.sort(key=lambda b: b.amount)
            return offers[min(int(rng.expovariate(0.5)), len(offers) - 1)]
    if roll < 0.9 or state.no_renovate:
        spots = placements(state, seat) if rng.random() < 0.5 else []
        return Publicity(seat, rng.choice(spots) if spots else None)
    me = state.seats[seat]
    analysed = sheet.analyse(sheet.layout(state.sheet), me.sheet)
    removable = [p.tile for p in me.sheet if sheet.removal_problem(analysed, p.tile) is None]
    spots = placements(state, seat)
    remove = (rng.choice(removable),) if removable and rng.random() < 0.5 else ()
    place = (rng.choice(spots),) if spots and rng.random() < 0.5 else ()
    after = (*(p for p in me.sheet if p.tile not in remove), *place)
    if sheet.sheet_problem(analysed.board.layout, after) is not None:
        place = ()  # the placement leaned on the tile removed
    if len(remove) + len(place) == 1 and rng.random() < 0.3:
        # The same renovation in stages (rules version 2): this step, then the finish.
        return StageRenovation(
            seat, remove=remove[0] if remove else None, place=place[0] if place else None
        )
    return Renovate(seat, remove=remove, place=place)


def play(
    players: int,
    seed: int,
    sheet_option: str = "",
    check: Callable[[VegasShowdownState, Command], None] | None = None,
) -> Game:
    """A whole game; `check(state, command)` sees each command before it is decided."""
    rng = random.Random(seed)
    game = Game(players, seed)
    options = (("sheet", sheet_option),) if sheet_option else ()

    def apply(events: Any) -> None:
        for ev in events:
            game.state = GAME.evolve(game.state, ev)
            game.events.append(ev)

    apply(GAME.new_game(GameConfig(players, options)))
    while game.state.phase is not Phase.FINISHED:
        request = chance(game.state)
        if request is not None:
            apply([resolve_locally(request, rng)])
            continue
        command = pick(game.state, rng)
        if check is not None:
            check(game.state, command)
        game.commands.append(command)
        apply(GAME.decide(command, game.state))
        assert len(game.commands) < 5_000, "a game that never ends"
    return game
