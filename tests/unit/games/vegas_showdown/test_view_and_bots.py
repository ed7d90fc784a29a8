"""What seats see (no undrawn tile or card), rendering, and the two bots."""

from __future__ import annotations

import random
from dataclasses import fields, replace

import pytest

from boulevard.games.base import GameConfig
from boulevard.games.codec import Codec
from boulevard.games.playout import playout
from boulevard.games.vegas_showdown import GAME
from boulevard.games.vegas_showdown.bots import heuristic_bot
from boulevard.games.vegas_showdown.rules import legal_commands
from boulevard.games.vegas_showdown.types import (
    Phase,
    Placement,
    PlaceTile,
    VegasShowdownView,
)
from tests.unit.games.vegas_showdown.support import started, table, tile, with_seat


def test_view_hides_the_premier_stacks_and_the_event_deck() -> None:
    state = started(table(4))
    shuffled = replace(
        state,
        premier_stacks=tuple(tuple(reversed(s)) for s in state.premier_stacks),
        deck=tuple(reversed(state.deck)),
    )
    assert state != shuffled
    for seat in (0, 3, None):
        assert GAME.view(state, seat) == GAME.view(shuffled, seat)
    view = GAME.view(state, None)
    names = {f.name for f in fields(VegasShowdownView)}
    assert not names & {"deck", "premier_stacks", "stack_parts"}
    assert view.premier_left == tuple(len(s) for s in state.premier_stacks)
    assert view.events_left == len(state.deck)


def test_views_round_trip_through_the_codec_and_render() -> None:
    views = Codec([VegasShowdownView])
    game = playout(GAME, GameConfig(5), random.Random(4), GAME.bots["random"])
    state = GAME.initial_state()
    for event in game.events[:120]:
        state = GAME.evolve(state, event)
        view = GAME.view(state, 1)
        assert views.loads(views.dumps(view)) == view
    text = GAME.render(GAME.view(game.state, None))
    assert "game over" in text and "seat 4" in text and "premier_4" in text


@pytest.mark.parametrize("players", [3, 4, 5])
@pytest.mark.parametrize("bot", ["random", "heuristic"])
def test_bots_finish_games(players: int, bot: str) -> None:
    game = playout(GAME, GameConfig(players), random.Random(players), GAME.bots[bot])
    assert GAME.outcome(game.state).finished


def test_the_heuristic_beats_random_players() -> None:
    wins = 0
    for seed in range(6):
        players = 3 + seed % 3
        bots = {s: GAME.bots["random"] for s in range(players)}
        bots[seed % players] = GAME.bots["heuristic"]
        game = playout(GAME, GameConfig(players), random.Random(seed), bots)
        wins += (seed % players) in GAME.outcome(game.state).winners
    assert wins >= 5


def test_the_heuristic_places_to_join_its_entrances() -> None:
    lounges = [Placement(tile("lounge", i), 2 * i, 2, 0) for i in range(3)]
    last = tile("lounge", 3)
    state = with_seat(started(table(3)), 0, sheet=tuple(lounges), aside=(last,))
    state = replace(state, phase=Phase.PLACING, to_place=(0,), current=0)
    legal = legal_commands(state, 0)
    assert PlaceTile(0, Placement(last, 6, 2, 0)) in legal and len(legal) > 3
    choice = heuristic_bot(GAME.view(state, 0), legal, 0, random.Random(1))
    assert choice == PlaceTile(0, Placement(last, 6, 2, 0))


def test_the_heuristic_bids_only_for_what_it_can_place_and_afford() -> None:
    state = started(table(3))  # a Fancy Slots on premier_1 needs a Slots first
    view = GAME.view(state, 0)
    choice = heuristic_bot(view, legal_commands(state, 0), 0, random.Random(1))
    assert getattr(choice, "track", "") != "premier_1"
    assert getattr(choice, "amount", 0) <= state.seats[0].cash
