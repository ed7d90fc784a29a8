"""Rules version 2: a Renovate built in stages, so that every renovation `decide` accepts
(0-2 tiles off, then 0-2 placed) is reachable from `legal_commands` a step at a time —
the rulebook's own example among them, which version 1's list could not reach. Version 1
games keep version 1's rules."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace

import pytest

from boulevard.games.base import GameConfig, RulesError
from boulevard.games.playout import resolve_locally
from boulevard.games.vegas_showdown import EARLIER_RULES, GAME
from boulevard.games.vegas_showdown.rules import _renovate, staged_steps
from boulevard.games.vegas_showdown.types import (
    Bid,
    CancelRenovation,
    FinishRenovation,
    Phase,
    Placement,
    Publicity,
    Renovate,
    Renovated,
    RenovationCancelled,
    RenovationStaged,
    StageRenovation,
    VegasShowdownState,
)
from tests.unit.games.vegas_showdown.support import (
    FANCY_SLOTS_NEXT,
    SLOTS_AT_ENTRANCE,
    started,
    table,
    tile,
    with_seat,
)

V1 = EARLIER_RULES[1]


def play(state: VegasShowdownState, command: object) -> tuple[VegasShowdownState, list[object]]:
    """Decide `command` (which must be listed) and fold its events."""
    assert command in GAME.legal_commands(state, 0), command
    events = list(GAME.decide(command, state))
    for event in events:
        state = GAME.evolve(state, event)
    return state, events


def example() -> tuple[VegasShowdownState, Placement, Placement]:
    club = tile("night_club")
    lounge = Placement(tile("lounge"), 0, 1, 0)
    state = with_seat(started(table(3)), 0, sheet=(SLOTS_AT_ENTRANCE, lounge), aside=(club,))
    return state, lounge, Placement(club, 2, 0, 0)


def test_the_rulebooks_renovate_example_is_reachable_from_the_list_a_step_at_a_time() -> None:
    state, lounge, club_at = example()
    # Version 1's list offers no way to it: one removal or one placement per Renovate.
    whole = Renovate(0, remove=(lounge.tile,), place=(lounge, club_at))
    assert whole not in V1.legal_commands(state, 0)
    assert not any(isinstance(c, StageRenovation) for c in V1.legal_commands(state, 0))
    state, events = play(state, StageRenovation(0, remove=lounge.tile))
    assert events == [RenovationStaged(0, lounge.tile, None)]
    assert state.staging and state.seats[0].sheet == (SLOTS_AT_ENTRANCE, lounge)  # not yet
    # The Night Club alone, with the Lounge off, joins nothing: no finish yet.
    state, _ = play(state, StageRenovation(0, place=club_at))
    assert FinishRenovation(0) not in GAME.legal_commands(state, 0)
    state, _ = play(state, StageRenovation(0, place=lounge))
    state, events = play(state, FinishRenovation(0))
    assert events[0] == Renovated(0, (lounge.tile,), (club_at, lounge))
    me = state.seats[0]
    assert {p.tile for p in me.sheet} == {SLOTS_AT_ENTRANCE.tile, lounge.tile, club_at.tile}
    assert me.fame == 2 + 8 and me.aside == ()
    assert not state.staging and state.staged_remove == () == state.staged_place
    assert state.current != 0  # the renovation was seat 0's action


def test_each_step_is_checked_and_nothing_else_goes_while_staging() -> None:
    state = with_seat(started(table(3)), 0, sheet=(SLOTS_AT_ENTRANCE, FANCY_SLOTS_NEXT))
    lounge = tile("lounge")

    def refused(s: VegasShowdownState, command: object, code: str) -> None:
        with pytest.raises(RulesError) as err:
            GAME.decide(command, s)
        assert err.value.code == code
        assert command not in GAME.legal_commands(s, 0)

    refused(state, StageRenovation(0), "malformed")
    refused(state, StageRenovation(0, remove=lounge), "not_on_sheet")
    refused(state, StageRenovation(0, place=Placement(lounge, 4, 0, 0)), "not_owned")
    refused(state, FinishRenovation(0), "not_renovating")
    refused(state, CancelRenovation(0), "not_renovating")
    refused(state, StageRenovation(1, remove=SLOTS_AT_ENTRANCE.tile), "not_your_turn")
    refused(replace(state, no_renovate=True), StageRenovation(0, remove=1), "no_renovate_marker")
    # Removing the Slots strands the Fancy Slots: a step may, the finish may not.
    staged, _ = play(state, StageRenovation(0, remove=SLOTS_AT_ENTRANCE.tile))
    assert FinishRenovation(0) not in GAME.legal_commands(staged, 0)
    with pytest.raises(RulesError):
        GAME.decide(FinishRenovation(0), staged)
    refused(staged, StageRenovation(0, remove=SLOTS_AT_ENTRANCE.tile), "not_on_sheet")
    refused(staged, Publicity(0), "renovating")
    refused(staged, Bid(0, "slots", 5), "renovating")
    refused(staged, Renovate(0), "renovating")
    # The Slots back where it was, then no more removals; the grid and other tiles bind.
    back, _ = play(staged, StageRenovation(0, place=SLOTS_AT_ENTRANCE))
    refused(back, StageRenovation(0, remove=FANCY_SLOTS_NEXT.tile), "removals_first")
    refused(back, StageRenovation(0, place=SLOTS_AT_ENTRANCE), "not_owned")
    assert FinishRenovation(0) in GAME.legal_commands(back, 0)
    # Cancelling leaves the game as it was before the first step.
    cancelled, events = play(back, CancelRenovation(0))
    assert events == [RenovationCancelled(0)]
    assert cancelled == state


def test_a_step_off_the_grid_or_onto_another_tile_is_refused() -> None:
    lounge = tile("lounge")
    state = with_seat(started(table(3)), 0, sheet=(SLOTS_AT_ENTRANCE,), aside=(lounge,))
    with pytest.raises(RulesError) as err:
        GAME.decide(StageRenovation(0, place=Placement(lounge, 7, 4, 0)), state)
    assert err.value.code == "off_sheet"
    with pytest.raises(RulesError) as err:
        GAME.decide(StageRenovation(0, place=Placement(lounge, 0, 2, 0)), state)
    assert err.value.code == "overlap"


def test_version_1_games_refuse_the_steps() -> None:
    state, lounge, _ = example()
    for command in (
        StageRenovation(0, remove=lounge.tile),
        FinishRenovation(0),
        CancelRenovation(0),
    ):
        with pytest.raises(RulesError) as err:
            V1.decide(command, state)
        assert "rules version 1" in err.value.message
    # Everything else is decided as before.
    assert V1.decide(Renovate(0, remove=(lounge.tile,), place=(lounge,)), state) == GAME.decide(
        Renovate(0, remove=(lounge.tile,), place=(lounge,)), state
    )


def mid_game_states(seed: int, players: int) -> list[VegasShowdownState]:
    """States of a random game where seat `current` chooses an action and may renovate,
    with a few tiles on its sheet."""
    rng = random.Random(seed)
    state = GAME.initial_state()
    for event in GAME.new_game(GameConfig(players)):
        state = GAME.evolve(state, event)
    found = []
    for _ in range(3000):
        request = GAME.chance(state)
        if request is not None:
            state = GAME.evolve(state, resolve_locally(request, rng))
            continue
        if GAME.outcome(state).finished:
            break
        seat = next(s for s in range(players) if GAME.legal_commands(state, s))
        if (
            state.phase is Phase.ACTIONS
            and not state.no_renovate
            and len(state.seats[seat].sheet) >= 3
        ):
            found.append(state)
        legal = GAME.legal_commands(state, seat)
        command = GAME.bots["random"](GAME.view(state, seat), legal, seat, rng)
        for event in GAME.decide(command, state):
            state = GAME.evolve(state, event)
    return found


def test_every_staged_path_finishes_exactly_when_renovate_accepts_it() -> None:
    """On mid-game sheets: for every set of up to two removals and every first placement
    the list then offers (and a sample of second ones), FinishRenovation is offered exactly
    when `decide` accepts the same renovation whole; so the list reaches every renovation
    decide accepts, and no other."""
    rng = random.Random(27)
    checked = accepted = 0
    for state in mid_game_states(seed=5, players=4)[::12][:6]:
        seat = state.current
        assert seat is not None
        me = state.seats[seat]
        removals = [()] + [
            combo for n in (1, 2) for combo in itertools.combinations([p.tile for p in me.sheet], n)
        ]
        for removal in removals:
            s = state
            for t in removal:
                s = GAME.evolve(s, RenovationStaged(seat, t, None))
            firsts = [
                c for c in staged_steps(s, seat) if isinstance(c, StageRenovation) and c.place
            ]
            for first in rng.sample(firsts, min(len(firsts), 8)):
                assert first.place is not None
                one = GAME.evolve(s, RenovationStaged(seat, None, first.place))
                seconds = [
                    c for c in staged_steps(one, seat) if isinstance(c, StageRenovation) and c.place
                ]
                for second in [None, *rng.sample(seconds, min(len(seconds), 3))]:
                    end = one
                    places: tuple[Placement, ...] = (first.place,)
                    if second is not None:
                        assert second.place is not None
                        end = GAME.evolve(one, RenovationStaged(seat, None, second.place))
                        places += (second.place,)
                    try:
                        _renovate(state, Renovate(seat, removal, places))
                        whole = True
                    except RulesError:
                        whole = False
                    listed = FinishRenovation(seat) in GAME.legal_commands(end, seat)
                    assert listed == whole, (removal, places)
                    checked += 1
                    accepted += whole
    assert checked > 200 and accepted > 0, (checked, accepted)
