"""The play screen's words for actions and seats, from the games' own types."""

from __future__ import annotations

import random

import pytest

from boulevard.cli.screen import action_label, seat_summary
from boulevard.games import REGISTRY
from boulevard.games.base import ChanceKind, ChanceResolved, GameConfig
from boulevard.games.las_vegas.types import PlaceDice
from boulevard.games.long_shot.types import PlayCard


def test_an_action_is_its_name_in_words_and_its_fields_but_the_seat() -> None:
    assert action_label(PlaceDice(seat=2, number=5)) == "Place dice: number 5"
    assert action_label(PlayCard(seat=0, card=8, horse=2, target=None)) == (
        "Play card: card 8, horse 2"
    )


def _started(name: str, players: int, steps: int) -> tuple[object, int]:
    """A game a few bot moves in, and the seat to act."""
    game = REGISTRY[name]
    rng = random.Random(7)
    state = game.initial_state()
    for event in game.new_game(GameConfig(players=players)):
        state = game.evolve(state, event)
    seat = 0
    for _ in range(steps):
        chance = game.chance(state)
        if chance is not None:
            if chance.kind == ChanceKind.ROLL:
                values = tuple(rng.randint(1, chance.sides) for _ in range(chance.count))
            else:
                values = tuple(rng.sample(range(chance.count), chance.count))
            resolved = ChanceResolved(chance.purpose, chance.kind, values, 0, chance.sides)
            state = game.evolve(state, resolved)
            continue
        seat = next(s for s in range(players) if game.legal_commands(state, s))
        command = game.bots["random"](
            game.view(state, seat), game.legal_commands(state, seat), seat, rng
        )
        for event in game.decide(command, state):
            state = game.evolve(state, event)
    return state, seat


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_game_s_legal_actions_get_distinct_labels(name: str) -> None:
    """A menu of look-alike lines would leave a person guessing which is which."""
    game = REGISTRY[name]
    players = max(3, game.min_players)
    for steps in (0, 10, 30):
        state, seat = _started(name, players, steps)
        commands = game.legal_commands(state, seat)  # type: ignore[arg-type]
        labels = [action_label(c) for c in commands]
        assert len(set(labels)) == len(labels), labels


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_game_s_view_tells_the_seat_its_money(name: str) -> None:
    game = REGISTRY[name]
    state, seat = _started(name, max(3, game.min_players), 20)
    view = game.view(state, seat)  # type: ignore[arg-type]
    lines = seat_summary(view, seat)
    money = dict(game.money(state))[seat]  # type: ignore[arg-type]
    assert lines[0] == f"money ${money}"


def test_a_long_shot_hand_is_listed_by_card_title() -> None:
    game = REGISTRY["long_shot"]
    state, seat = _started("long_shot", 3, 15)
    view = game.view(state, seat)  # type: ignore[arg-type]
    hand = next(line for line in seat_summary(view, seat) if line.startswith("hand: "))
    assert view.hand and all(card.title in hand for card in view.hand)
