"""Properties over random complete games, 2–5 players, with and without white dice."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import fields, replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from boulevard.games.base import (
    BANK,
    ChanceResolved,
    GameConfig,
    RulesError,
    seat_account,
    transfers_of,
)
from boulevard.games.codec import Codec
from boulevard.games.las_vegas import GAME
from boulevard.games.las_vegas.data import DATA, NOTE_VALUES
from boulevard.games.las_vegas.rules import dice_remain, spare_white_dice, white_dice_each
from boulevard.games.las_vegas.types import (
    CasinoPaidOut,
    DicePlaced,
    GameEnded,
    LasVegasState,
    LasVegasView,
    Phase,
    PlaceDice,
    RoundStarted,
)
from boulevard.games.playout import Playout, playout

CODEC = Codec(GAME.event_types)
COMMANDS = Codec(GAME.command_types)


@st.composite
def tables(draw: st.DrawFn) -> tuple[int, bool, int]:
    players = draw(st.integers(DATA.min_players, DATA.max_players))
    white = draw(st.booleans()) if players in DATA.white_dice_per_player else False
    return players, white, draw(st.integers(0, 2**32 - 1))


def play(players: int, white: bool, seed: int) -> Playout:
    rng = random.Random(seed)
    bots = {s: GAME.bots[rng.choice(["random", "heuristic"])] for s in range(players)}
    config = GameConfig(players, (("white_dice", "true" if white else "false"),))
    return playout(GAME, config, rng, bots)


def all_notes(state: LasVegasState) -> list[int]:
    return sorted(
        [
            *state.stack,
            *(n for c in state.casinos for n in c.notes),
            *(n for h in state.hands for n in h),
        ]
    )


def check_state(state: LasVegasState, paid: Counter[str]) -> None:
    if state.phase is not Phase.SETUP:
        # Every one of the 54 notes is in exactly one place: casino, hand or stack.
        assert all_notes(state) == list(range(len(NOTE_VALUES)))
    # Money is exactly what the bank transferred to each seat.
    assert GAME.money(state) == {s: paid[seat_account(s)] for s in range(state.players)}
    if state.phase is Phase.PLAYING and dice_remain(state):
        # Mid-round, every die is either on a casino or still with its owner.
        for seat in range(state.players):
            on_table = sum(c.dice[seat] for c in state.casinos)
            assert on_table + state.dice_left[seat] == DATA.dice_per_player
        white_total = sum(c.white for c in state.casinos) + sum(state.white_left)
        if state.spare_white_pending:
            white_total += spare_white_dice(state.players, state.white_dice)
        expected = state.players * white_dice_each(
            state.players, state.white_dice
        ) + spare_white_dice(state.players, state.white_dice)
        assert white_total == expected


def check_decisions(state: LasVegasState) -> None:
    """Legal commands are accepted; everything else is refused with a code and no events."""
    current = state.current
    for seat in range(state.players):
        legal = GAME.legal_commands(state, seat)
        if seat != current or state.roll is None:
            assert legal == ()
            with pytest.raises(RulesError) as err:
                GAME.decide(PlaceDice(seat, 1), state)
            assert err.value.code in {"not_your_turn", "not_rolled"}
            continue
        assert legal, "the seat to play must have a move"
        for command in legal:
            events = GAME.decide(command, state)
            assert events and events[0].seat == seat  # type: ignore[union-attr]
        for number in set(range(0, 8)) - {c.number for c in legal}:
            with pytest.raises(RulesError) as err:
                GAME.decide(PlaceDice(seat, number), state)
            assert err.value.code in {"number_not_rolled", "bad_number"}


@settings(max_examples=100, deadline=None)
@given(tables())
def test_random_games_keep_every_invariant(table: tuple[int, bool, int]) -> None:
    players, white, seed = table
    game = play(players, white, seed)
    assert GAME.outcome(game.state).finished

    state = GAME.initial_state()
    paid: Counter[str] = Counter()
    for event in game.events:
        if isinstance(event, ChanceResolved):
            request = GAME.chance(state)
            assert request is not None
            assert (request.purpose, request.kind) == (event.purpose, event.kind)
            assert len(event.values) == request.count
        elif isinstance(event, DicePlaced):
            assert GAME.chance(state) is None
            check_decisions(state)
        for transfer in transfers_of(event):
            assert transfer.source == BANK and transfer.amount in NOTE_VALUES
            paid[transfer.target] += transfer.amount
        state = GAME.evolve(state, event)
        check_state(state, paid)

    # The game ran four rounds and ended once, with every seat ranked.
    assert sum(isinstance(e, RoundStarted) for e in game.events) == DATA.rounds - 1
    assert sum(isinstance(e, CasinoPaidOut) for e in game.events) == DATA.rounds * DATA.casinos
    assert isinstance(game.events[-1], GameEnded)
    ranked = [s for group in GAME.outcome(state).ranking for s in group]
    assert sorted(ranked) == list(range(players))


@settings(max_examples=50, deadline=None)
@given(tables())
def test_replaying_the_encoded_log_gives_the_same_state(table: tuple[int, bool, int]) -> None:
    game = play(*table)
    wire = [CODEC.dumps(e) for e in game.events]
    decoded = [CODEC.loads(raw) for raw in wire]
    assert decoded == game.events
    assert [CODEC.dumps(e) for e in decoded] == wire  # deterministic bytes
    state = GAME.initial_state()
    for event in decoded:
        state = GAME.evolve(state, event)
    assert state == game.state


def test_every_event_and_command_type_round_trips_through_the_codec() -> None:
    game = play(3, True, 7)
    seen = {type(e) for e in game.events}
    assert set(GAME.event_types) | {ChanceResolved} <= seen
    command = PlaceDice(2, 5)
    assert COMMANDS.loads(COMMANDS.dumps(command)) == command


@pytest.mark.parametrize(
    ("players", "white"), [(2, False), (2, True), (3, False), (3, True), (4, True), (5, False)]
)
def test_bots_finish_games_through_playout(players: int, white: bool) -> None:
    for name in ("random", "heuristic"):
        config = GameConfig(players, (("white_dice", "true" if white else "false"),))
        game = playout(GAME, config, random.Random(players), GAME.bots[name])
        assert GAME.outcome(game.state).finished


def test_view_hides_the_order_of_the_stack() -> None:
    state = play(4, False, 3).state
    shuffled = replace(state, stack=tuple(reversed(state.stack)))
    for seat in (0, 1, None):
        assert GAME.view(state, seat) == GAME.view(shuffled, seat)
    names = {f.name for f in fields(LasVegasView)}
    assert "stack" not in names and "stack_size" in names


def test_render_shows_casinos_money_and_roll() -> None:
    state: Any = GAME.initial_state()
    for event in play(2, True, 1).events[:4]:
        state = GAME.evolve(state, event)
    text = GAME.render(GAME.view(state, 0))
    assert "casino 6" in text and "seat 1" in text


def test_views_round_trip_through_the_codec() -> None:
    views = Codec([LasVegasView])
    state: Any = GAME.initial_state()
    for event in play(3, True, 11).events[:40]:
        state = GAME.evolve(state, event)
        for seat in (0, 2, None):
            view = GAME.view(state, seat)
            assert views.loads(views.dumps(view)) == view
