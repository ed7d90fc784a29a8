"""Properties over 1,002 random complete games (334 each with 3, 4 and 5 players), checked
at every event: money is the sum of transfers, every tile is in exactly one place, Fame is
exactly what tiles, Publicity, events and final scoring gave, the game ends exactly on a
rule, and the log replays to the same state (through the codec for a sample)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from boulevard.games.base import BANK, ChanceResolved, seat_account, transfers_of
from boulevard.games.codec import Codec
from boulevard.games.vegas_showdown import GAME, sheet
from boulevard.games.vegas_showdown.data import DATA, SIZES
from boulevard.games.vegas_showdown.rules import chance, legal_commands
from boulevard.games.vegas_showdown.types import (
    EventCardDrawn,
    GameEnded,
    Phase,
    Renovate,
    VegasShowdownState,
)
from tests.unit.games.vegas_showdown.driver import Game, play

GAMES_PER_TABLE = 334
CODEC = Codec(GAME.event_types)
ALL_TILES = list(range(len(DATA.tile_kind)))


def tile_places(state: VegasShowdownState) -> list[int]:
    return sorted(
        [
            *(t for stack in state.basic_stacks for t in stack),
            *(t for stack in state.premier_stacks for t in stack),
            *(t.tile for t in state.tracks if t.tile is not None),
            *(p.tile for s in state.seats for p in s.sheet),
            *(t for s in state.seats for t in s.aside),
            *state.removed,
        ]
    )


def check_game(game: Game) -> None:
    state = GAME.initial_state()
    paid: Counter[str] = Counter()
    for i, event in enumerate(game.events):
        if isinstance(event, ChanceResolved):
            request = chance(state)
            assert request is not None and request.purpose == event.purpose
            assert len(event.values) == request.count
        before = state
        state = GAME.evolve(state, event)
        for t in transfers_of(event):
            assert t.amount > 0
            paid[t.target] += t.amount
            paid[t.source] -= t.amount
        # money is exactly the sum of transfers, and never negative
        assert GAME.money(state) == {s: paid[seat_account(s)] for s in range(game.players)}
        assert all(s.cash >= 0 for s in state.seats)
        if state.phase is not Phase.SETUP:
            # every tile in exactly one place
            assert tile_places(state) == ALL_TILES
        for seat, s in enumerate(state.seats):
            if before.seats and s is before.seats[seat] and not isinstance(event, GameEnded):
                continue  # an unchanged seat keeps the invariants it had
            tiles = sum(DATA.kind_of(p.tile).fame for p in s.sheet)
            final = state.scores[seat].total if state.scores else 0
            assert s.fame == tiles + s.publicity_fame + s.event_fame + final
            assert s.fame >= tiles + s.publicity_fame
            if before.seats and s.sheet != before.seats[seat].sheet:
                # every sheet the rules accept follows every placement rule
                assert sheet.sheet_problem(sheet.layout(state.sheet), s.sheet) is None
        if isinstance(event, GameEnded):
            assert i == len(game.events) - 1  # nothing after the end
            layout = sheet.layout(before.sheet)
            full = [sheet.is_full(layout, s.sheet) for s in before.seats]
            if event.reason == "sheet_full":
                assert any(full)
            else:
                assert event.reason == "stack_empty" and not any(full)
                drawn = game.events[i - 1]
                assert isinstance(drawn, EventCardDrawn)
                stack = SIZES.index(DATA.event(drawn.card).stack)
                assert before.premier_stacks[stack] == ()
        elif state.phase is not Phase.SETUP and before.seats != state.seats:
            # a full sheet ends the game with the very next event
            layout = sheet.layout(state.sheet)
            if any(sheet.is_full(layout, s.sheet) for s in state.seats):
                after = game.events[i + 1]
                assert isinstance(after, GameEnded) and after.reason == "sheet_full"
    assert paid[BANK] == -sum(paid[seat_account(s)] for s in range(game.players))
    assert state == game.state
    outcome = GAME.outcome(state)
    assert outcome.finished
    assert sorted(s for group in outcome.ranking for s in group) == list(range(game.players))


@pytest.mark.parametrize("players", [3, 4, 5])
def test_random_games_keep_every_invariant(players: int) -> None:
    reasons: Counter[str] = Counter()
    seen: set[type] = set()
    for seed in range(GAMES_PER_TABLE):
        game = play(players, 1000 * players + seed)
        check_game(game)
        reasons[game.state.end_reason] += 1
        seen |= {type(e) for e in game.events}
        if seed % 50 == 0:  # replay through the wire format, byte-exact
            wire = [CODEC.dumps(e) for e in game.events]
            decoded: list[Any] = [CODEC.loads(raw) for raw in wire]
            assert decoded == game.events
            state = GAME.initial_state()
            for event in decoded:
                state = GAME.evolve(state, event)
            assert state == game.state
    assert reasons["stack_empty"] > 0
    assert seen == {*GAME.event_types, ChanceResolved}  # every kind of event happened


def test_some_random_game_ends_on_a_full_sheet() -> None:
    """A full sheet is rare with random play on an 8x5 sheet; the 7x5 sheet and a few seeds
    find one, so both end rules are exercised."""
    for seed in range(400):
        game = play(3, seed, sheet_option="7x5")
        if game.state.end_reason == "sheet_full":
            check_game(game)
            return
    pytest.fail("no random game filled a sheet")


def test_every_command_the_driver_made_was_among_the_legal_commands() -> None:
    """The driver's shortcuts stay within `legal_commands` (checked on a few games), and
    no other seat has anything to do meanwhile."""
    seen: Counter[str] = Counter()

    def check(state: VegasShowdownState, command: Any) -> None:
        seen[type(command).__name__] += 1
        for seat in range(state.players):
            legal = legal_commands(state, seat)
            if seat != command.seat:
                assert legal == ()
                continue
            listed = not isinstance(command, Renovate) or (
                len(command.remove) + len(command.place) <= 1
            )
            assert not listed or command in legal, command

    for seed in range(6):
        play(3 + seed % 3, seed, check=check)
    every = {c.__name__ for c in GAME.command_types}
    assert every - {"CancelRenovation"} <= set(seen) <= every  # rarely cancelled
