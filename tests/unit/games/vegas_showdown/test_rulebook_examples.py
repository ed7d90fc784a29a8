"""Every example and rule statement of the seed rulebook (vegas_showdown.es.txt), one test
each, in the rulebook's order."""

from __future__ import annotations

from dataclasses import replace

from boulevard.games.base import BANK, Transfer, seat_account
from boulevard.games.testing import spec
from boulevard.games.vegas_showdown import GAME
from boulevard.games.vegas_showdown.data import DATA
from boulevard.games.vegas_showdown.rules import income, population, revenue
from boulevard.games.vegas_showdown.types import (
    ActionKind,
    Bid,
    BidPlaced,
    EventCardDrawn,
    Phase,
    Placement,
    PlaceTile,
    PricesLowered,
    Publicity,
    PublicityTaken,
    Renovate,
    Renovated,
    StartTurn,
    TurnEnded,
    VegasShowdownState,
)
from tests.unit.games.vegas_showdown.support import (
    FANCY_SLOTS_NEXT,
    SLOTS_AT_ENTRANCE,
    run,
    started,
    table,
    tile,
    with_seat,
)

# --- setup ------------------------------------------------------------------------------


def test_setup_three_players_removes_three_of_each_basic_stack_and_leaves_space_four() -> None:
    state = table(3)
    assert [len(s) for s in state.basic_stacks] == [16 - 3, 10 - 3, 7 - 3]
    assert len(state.removed) == 9
    assert "premier_4" not in {t.name for t in state.tracks}
    assert "slots_2" not in {t.name for t in state.tracks}
    # the first three premier spaces hold one tile of each size on its circled start price
    premier = [t for t in state.tracks if t.name.startswith("premier")]
    assert [DATA.kind_of(t.tile).size for t in premier if t.tile is not None] == [
        "small",
        "medium",
        "large",
    ]
    assert all(t.minimum == DATA.kind_of(t.tile).bid for t in premier if t.tile is not None)


def test_setup_sheets_and_money() -> None:
    state = table(4)
    for s in state.seats:
        assert (population(s), revenue(s), s.fame, s.cash) == (8, 5, 0, 20)
    assert [len(s) for s in state.basic_stacks] == [16, 10, 7]


def test_premier_stacks_put_the_a_tiles_above_the_b_tiles() -> None:
    state = table(3)
    for stack in state.premier_stacks:
        backs = [DATA.kind_of(t).back for t in stack]
        assert backs == sorted(backs)  # every A before every B


def test_five_players_have_a_second_slots_track_and_the_fourth_premier_space() -> None:
    names = [t.name for t in table(5).tracks]
    assert "slots_2" in names and "premier_4" in names


# --- 1. lowering prices ---------------------------------------------------------------------


def test_lowering_skips_the_square_18_goes_to_12_not_15() -> None:
    state = table(3)
    state = replace(
        state,
        turn=2,
        tracks=tuple(replace(t, minimum=18) if t.name == "premier_1" else t for t in state.tracks),
    )
    events = GAME.decide(StartTurn(0), state)
    lowered = events[0]
    assert isinstance(lowered, PricesLowered)
    assert ("premier_1", 12) in lowered.minimums


def test_lowering_is_skipped_on_the_first_turn() -> None:
    events = GAME.decide(StartTurn(0), table(3))
    assert not any(isinstance(e, PricesLowered) for e in events)


def test_lowering_off_the_3_removes_the_tile_from_the_game_and_refills_the_space() -> None:
    state = table(3)
    gone = state.tracks[3].tile
    state = replace(
        state,
        turn=2,
        tracks=tuple(replace(t, minimum=3) if t.name == "premier_1" else t for t in state.tracks),
    )
    after = started(state)
    assert gone in after.removed
    assert after.tracks[3].tile not in (None, gone)  # a new tile came on the empty space
    assert after.drawn  # through an event card


# --- 2. flipping new tiles --------------------------------------------------------------------


def test_an_empty_space_draws_an_event_card_then_flips_from_the_stack_its_symbol_names() -> None:
    # 4 players: the fourth space is empty at the start; the card's symbol picks the stack.
    card = next(c for c in DATA.events if c.stack == "large" and c.effect == "none")
    state = table(4, deck=(card.key,))
    after = started(state)
    flipped = next(t for t in after.tracks if t.name == "premier_4").tile
    assert flipped is not None and DATA.kind_of(flipped).size == "large"
    assert after.discards == (card.key,)


def test_a_card_that_cannot_be_done_yet_stays_in_play_until_it_can() -> None:
    # Nobody owns a Slots yet: "Slots owners gain Fame" waits, then pays once one does.
    state = started(table(4, deck=("slots_fame", "quiet_1", "quiet_2")))
    assert state.in_play == ("slots_fame",)
    state = with_seat(state, 2, sheet=(SLOTS_AT_ENTRANCE,))
    state = replace(
        state,
        phase=Phase.TURN_START,
        turn=2,
        tracks=tuple(replace(t, tile=None) if t.name == "premier_4" else t for t in state.tracks),
    )
    after = started(state)
    assert after.in_play == ()
    assert "slots_fame" in after.discards
    assert after.seats[2].fame == state.seats[2].fame + 2
    assert after.seats[2].event_fame == 2


def test_a_no_bid_card_marks_the_track_for_this_turn_only() -> None:
    card = next(c for c in DATA.events if c.effect == "no_bid" and c.family == "lounge")
    state = started(table(4, deck=(card.key,)))
    lounge = next(t for t in state.tracks if t.name == "lounge")
    assert lounge.no_bid
    spec(GAME).given_state(state).when(Bid(0, "lounge", 9)).then_raises("no_bid_marker")


def test_a_no_bid_card_also_marks_the_familys_fancy_tile_even_one_flipped_after_it() -> None:
    quiet_small = next(c for c in DATA.events if c.effect == "none" and c.stack == "small")
    state = table(4, deck=("slots_no_bid_1", quiet_small.key))
    fancy = state.tracks[3].tile  # premier_1 holds a Fancy Slots (stacks in data order)
    assert fancy is not None and DATA.kind_of(fancy).key == "fancy_slots"
    after = started(state)
    marked = {t.name for t in after.tracks if t.no_bid}
    assert marked == {"slots", "premier_1"}
    # now with premier_1 empty too: the card is drawn for it, and the Fancy Slots flipped
    # for premier_4 by the next card arrives under the ban
    emptied = replace(
        state,
        tracks=tuple(
            replace(t, tile=None, minimum=0) if t.name == "premier_1" else t for t in state.tracks
        ),
    )
    after = started(emptied)
    flipped = next(t for t in after.tracks if t.name == "premier_4")
    assert flipped.tile is not None and DATA.kind_of(flipped.tile).key == "fancy_slots"
    assert flipped.no_bid
    assert not next(t for t in after.tracks if t.name == "premier_1").no_bid
    spec(GAME).given_state(after).when(Bid(0, "premier_4", 18)).then_raises("no_bid_marker")


def test_the_game_ends_at_once_when_the_stack_to_flip_is_empty() -> None:
    card = next(c for c in DATA.events if c.stack == "medium" and c.effect == "none")
    state = table(4, deck=(card.key,))
    state = replace(state, premier_stacks=(state.premier_stacks[0], (), state.premier_stacks[2]))
    after = started(state)
    assert after.phase is Phase.FINISHED and after.end_reason == "stack_empty"


# --- 3. income ------------------------------------------------------------------------------


def test_income_is_the_lower_of_population_and_revenue() -> None:
    state = table(3)
    state = with_seat(state, 1, sheet=(SLOTS_AT_ENTRANCE,))  # revenue 6, population 8
    assert income(state.seats[1]) == 6
    after = started(state)
    assert [s.cash for s in after.seats] == [25, 26, 25]


# --- 4. actions: bidding ----------------------------------------------------------------------


def test_green_bids_25_yellow_outbids_with_29_and_green_waits_for_her_turn_in_order() -> None:
    # Seat 0 is Green, seat 1 Yellow; the High Rollers Room (start 25) is on premier_2.
    state = started(table(3))
    state = replace(
        state,
        tracks=tuple(
            replace(t, tile=tile("high_rollers_room"), minimum=25) if t.name == "premier_2" else t
            for t in state.tracks
        ),
    )
    state = with_seat(with_seat(state, 0, cash=40), 1, cash=40)
    state = (
        spec(GAME)
        .given_state(state)
        .when(Bid(0, "premier_2", 25))
        .then(BidPlaced(0, "premier_2", 25, None))
    )
    state = (
        spec(GAME)
        .given_state(state)
        .when(Bid(1, "premier_2", 29))
        .then(BidPlaced(1, "premier_2", 29, 0))
    )
    assert state.seats[0].must_act and state.seats[0].action is ActionKind.NONE
    assert state.current == 2  # Green waits until her turn in the order comes round
    spec(GAME).given_state(state).when(Bid(0, "premier_2", 33)).then_raises("not_your_turn")
    state = run(state, Publicity(2))
    assert state.current == 0
    # she may bid higher on the same tile, or choose any other action
    spec(GAME).given_state(state).when(Bid(0, "premier_2", 29)).then_raises("not_above_bid")
    state = run(state, Bid(0, "premier_2", 33))
    assert state.current == 1


def test_bids_respect_minimums_cash_and_the_track() -> None:
    state = started(table(3))
    premier_1 = state.tracks[3]
    assert premier_1.minimum == 18
    given = spec(GAME).given_state(state)
    given.when(Bid(0, "premier_1", 15)).then_raises("below_minimum")
    given.when(Bid(0, "slots", 3)).then_raises("not_on_track")  # under the yellow minimum
    given.when(Bid(0, "slots", 6)).then_raises("not_on_track")  # not a space of the track
    given.when(Bid(0, "premier_1", 29)).then_raises("not_enough_cash")  # $25 in hand
    given.when(Bid(0, "lounge", 25)).then(BidPlaced(0, "lounge", 25, None))  # over-bid: allowed
    rich = with_seat(state, 0, cash=99)
    spec(GAME).given_state(rich).when(Bid(0, "premier_1", 55)).then_raises("not_on_track")


def test_bidding_ends_when_everyone_acted_and_nobody_is_outbid_then_buyers_pay() -> None:
    state = started(table(3))
    state = run(state, Bid(0, "slots", 5), Bid(1, "slots", 7), Bid(2, "lounge", 9))
    assert state.phase is Phase.ACTIONS and state.current == 0
    state = run(state, Bid(0, "restaurant", 15))
    assert state.phase is Phase.PLACING
    assert state.to_place == (0, 1, 2)  # clockwise from the button
    assert [s.cash for s in state.seats] == [25 - 15, 25 - 7, 25 - 9]


def test_five_players_two_slots_tracks_buy_two_slots_in_one_turn() -> None:
    state = started(table(5))
    state = run(
        state, Bid(0, "slots", 5), Bid(1, "slots_2", 5), Publicity(2), Publicity(3), Publicity(4)
    )
    slots = set(DATA.tiles_of("slots"))
    assert state.seats[0].aside[0] in slots and state.seats[1].aside[0] in slots
    assert state.seats[0].aside != state.seats[1].aside


# --- buying and placing -----------------------------------------------------------------------


def test_a_buyer_may_set_the_tile_aside_and_place_one_set_aside_earlier() -> None:
    state = started(table(3))
    state = with_seat(state, 0, aside=(tile("slots", 5),))
    state = run(state, Bid(0, "lounge", 9), Publicity(1), Publicity(2))
    assert state.phase is Phase.PLACING
    lounge = state.seats[0].aside[-1]
    state = run(state, PlaceTile(0, Placement(tile("slots", 5), 0, 2, 0)))
    assert state.seats[0].aside == (lounge,)
    assert [p.tile for p in state.seats[0].sheet] == [tile("slots", 5)]


def test_after_placing_the_button_passes_left_and_markers_are_removed() -> None:
    card = next(c for c in DATA.events if c.effect == "no_renovate")
    state = started(table(4, deck=(card.key,)))
    assert state.no_renovate
    events = GAME.decide(Publicity(3), run(state, Bid(0, "slots", 5), Publicity(1), Publicity(2)))
    state = run(state, Bid(0, "slots", 5), Publicity(1), Publicity(2), Publicity(3))
    assert not any(isinstance(e, TurnEnded) for e in events)
    state = run(state, PlaceTile(0))
    assert state.phase is Phase.TURN_START and state.button == 1 and not state.no_renovate


# --- prerequisites (the rulebook's two examples) ----------------------------------------------


def test_fancy_slots_needs_a_slots_on_the_sheet() -> None:
    state = with_seat(started(table(3)), 0, aside=(tile("fancy_slots"),))
    place = Placement(tile("fancy_slots"), 0, 2, 0)
    err = spec(GAME).given_state(state).when(Publicity(0, place)).then_raises("prerequisite")
    assert "Slots" in err.message
    state = with_seat(state, 0, sheet=(SLOTS_AT_ENTRANCE,), aside=(tile("fancy_slots"),))
    spec(GAME).given_state(state).when(Publicity(0, FANCY_SLOTS_NEXT)).then(
        PublicityTaken(0, 1, FANCY_SLOTS_NEXT)
    )


def test_dragon_room_needs_both_slots_and_fancy_slots() -> None:
    dragon = Placement(tile("dragon_room"), 1, 2, 0)  # its one door (west) meets Slots' east
    state = with_seat(started(table(3)), 0, sheet=(SLOTS_AT_ENTRANCE,), aside=(dragon.tile,))
    err = spec(GAME).given_state(state).when(Publicity(0, dragon)).then_raises("prerequisite")
    assert "Fancy Slots" in err.message
    further = Placement(tile("dragon_room"), 2, 2, 0)
    state = with_seat(state, 0, sheet=(SLOTS_AT_ENTRANCE, FANCY_SLOTS_NEXT), aside=(dragon.tile,))
    spec(GAME).given_state(state).when(Publicity(0, further)).then(PublicityTaken(0, 1, further))


# --- placement: entrances, walls, the Night Club and the Fancy Restaurant ---------------------


def test_yellow_tiles_must_reach_the_casino_entrance_through_doors() -> None:
    state = with_seat(started(table(3)), 0, aside=(tile("slots"),))
    given = spec(GAME).given_state(state)
    given.when(Publicity(0, Placement(tile("slots"), 7, 2, 0))).then_raises("not_connected")
    # three quarter turns put its east door north and its north door west: still in
    given.when(Publicity(0, Placement(tile("slots"), 0, 2, 3))).then(
        PublicityTaken(0, 1, Placement(tile("slots"), 0, 2, 3))
    )
    # a quarter turn puts its wall (south, turned west) on the entrance
    given.when(Publicity(0, Placement(tile("slots"), 0, 2, 1))).then_raises("not_connected")


def test_blue_tiles_must_reach_the_hotel_entrance_green_either() -> None:
    restaurant = tile("restaurant")
    state = with_seat(started(table(3)), 0, aside=(restaurant, tile("lounge")))
    given = spec(GAME).given_state(state)
    # the Restaurant's doors (stand-in) are top-left, right-bottom, bottom-right, left-bottom
    given.when(Publicity(0, Placement(restaurant, 0, 1, 0))).then_raises("not_connected")
    given.when(Publicity(0, Placement(restaurant, 6, 1, 0))).then(
        PublicityTaken(0, 1, Placement(restaurant, 6, 1, 0))
    )
    given.when(Publicity(0, Placement(tile("lounge"), 0, 2, 0))).then(
        PublicityTaken(0, 1, Placement(tile("lounge"), 0, 2, 0))
    )
    given.when(Publicity(0, Placement(tile("lounge"), 6, 2, 0))).then(
        PublicityTaken(0, 1, Placement(tile("lounge"), 6, 2, 0))
    )


def test_a_door_facing_a_wall_is_a_wall() -> None:
    # Slots' south side is a wall: a Slots below it, door north, does not pass through.
    below = Placement(tile("slots", 1), 0, 3, 0)
    state = with_seat(started(table(3)), 0, sheet=(SLOTS_AT_ENTRANCE,), aside=(below.tile,))
    spec(GAME).given_state(state).when(Publicity(0, below)).then_raises("not_connected")


LOUNGE_UP = Placement(tile("lounge"), 0, 0, 1)  # upright over (0,0)-(0,1), above the Slots


def test_a_night_club_needs_a_door_meeting_a_lounge_door() -> None:
    club = tile("night_club")
    state = with_seat(started(table(3)), 0, sheet=(SLOTS_AT_ENTRANCE, LOUNGE_UP), aside=(club,))
    given = spec(GAME).given_state(state)
    # at (1,1) its only working door (west, at (1,2)) meets the Slots, not the Lounge
    given.when(Publicity(0, Placement(club, 1, 1, 0))).then_raises("night_club_door")
    # turned three quarters its doors sit so that one meets the Lounge's east door at (0,1)
    ok = Placement(club, 1, 0, 3)
    given.when(Publicity(0, ok)).then(PublicityTaken(0, 1, ok))


def test_a_fancy_restaurant_may_not_go_next_to_a_lounge() -> None:
    fancy = tile("fancy_restaurant")
    restaurant = Placement(tile("restaurant"), 6, 1, 0)
    lounge = Placement(tile("lounge"), 4, 0, 0)  # over (4,0)-(5,0)
    state = with_seat(started(table(3)), 0, sheet=(restaurant,), aside=(fancy,))
    # its one door (east) meets the Restaurant's west door at (6, 1)
    spot = Placement(fancy, 5, 1, 0)
    spec(GAME).given_state(state).when(Publicity(0, spot)).then(PublicityTaken(0, 1, spot))
    state = with_seat(state, 0, sheet=(restaurant, lounge), aside=(fancy,))
    spec(GAME).given_state(state).when(Publicity(0, spot)).then_raises(
        "fancy_restaurant_next_to_lounge"
    )


# --- Renovate and Publicity -------------------------------------------------------------------


def test_renovate_example_lounge_out_and_back_plus_a_night_club_bought_earlier() -> None:
    club = tile("night_club")
    lounge = Placement(tile("lounge"), 0, 1, 0)  # flat over (0,1)-(1,1), above the Slots
    state = with_seat(started(table(3)), 0, sheet=(SLOTS_AT_ENTRANCE, lounge), aside=(club,))
    club_at = Placement(club, 2, 0, 0)  # its west door at (2,1) meets the Lounge's east door
    command = Renovate(0, remove=(lounge.tile,), place=(lounge, club_at))
    after = (
        spec(GAME)
        .given_state(state)
        .when(command)
        .then(Renovated(0, (lounge.tile,), (lounge, club_at)))
    )
    me = after.seats[0]
    assert {p.tile for p in me.sheet} == {SLOTS_AT_ENTRANCE.tile, lounge.tile, club}
    assert me.aside == () and me.fame == 2 + 8  # Lounge 2 (off and on again) + Night Club 8
    assert me.action is ActionKind.RENOVATE


def test_renovate_checks_the_whole_sheet_afterwards() -> None:
    state = with_seat(started(table(3)), 0, sheet=(SLOTS_AT_ENTRANCE, FANCY_SLOTS_NEXT))
    given = spec(GAME).given_state(state)
    # removing the Slots strands the Fancy Slots (and takes its prerequisite away)
    given.when(Renovate(0, remove=(SLOTS_AT_ENTRANCE.tile,))).then_raises("prerequisite")
    given.when(Renovate(0, remove=(1, 2, 3))).then_raises("too_many_tiles")
    given.when(Renovate(0, remove=(tile("lounge"),))).then_raises("not_on_sheet")
    # gaps are fine: removing the Fancy Slots leaves a legal sheet
    given.when(Renovate(0, remove=(FANCY_SLOTS_NEXT.tile,))).then(
        Renovated(0, (FANCY_SLOTS_NEXT.tile,), ())
    )


def test_publicity_gives_one_fame_and_any_number_of_players_may_take_it() -> None:
    state = run(started(table(3)), Publicity(0), Publicity(1))
    assert [s.fame for s in state.seats] == [1, 1, 0]


def test_pr_scandal_publicity_gives_no_fame() -> None:
    state = replace(started(table(3)), pr_scandal=True)
    spec(GAME).given_state(state).when(Publicity(0)).then(PublicityTaken(0, 0, None))


def test_no_renovate_marker() -> None:
    state = replace(started(table(3)), no_renovate=True)
    spec(GAME).given_state(state).when(Renovate(0)).then_raises("no_renovate_marker")


# --- the end ----------------------------------------------------------------------------------


def test_a_full_sheet_ends_the_game_at_once() -> None:
    # Lounges along rows 0 and 4, a Restaurant and small tiles between, one cell left at
    # the hotel entrance for a Fancy Restaurant (the rules check only the tile placed).
    lounges = [
        Placement(t, 2 * (i % 4), 0 if i < 4 else 4, 0)
        for i, t in enumerate(DATA.tiles_of("lounge")[:8])
    ]
    restaurant = Placement(tile("restaurant"), 0, 1, 0)
    last = Placement(tile("fancy_restaurant"), 7, 2, 0)  # its east door is the entrance
    taken = {(0, 1), (1, 1), (0, 2), (1, 2), (7, 2)}
    free = [(c, r) for r in (1, 2, 3) for c in range(8) if (c, r) not in taken]
    small = [t for k in ("slots", "fancy_slots", "dragon_room") for t in DATA.tiles_of(k)]
    smalls = [Placement(t, c, r, 0) for t, (c, r) in zip(small, free, strict=False)]
    assert len(smalls) == len(free)
    state = with_seat(
        started(table(3)), 0, sheet=(*lounges, restaurant, *smalls), aside=(last.tile,)
    )
    state = replace(state, phase=Phase.PLACING, to_place=(0, 1), current=0)
    events = GAME.decide(PlaceTile(0, last), state)
    assert events[-1].reason == "sheet_full"  # type: ignore[union-attr]
    after = run(state, PlaceTile(0, last))
    assert after.phase is Phase.FINISHED and after.to_place == ()  # seat 1 never places


def test_final_scoring_converts_each_full_10_dollars_to_fame_and_keeps_the_rest() -> None:
    card = next(c for c in DATA.events if c.stack == "small" and c.effect == "none")
    state = table(4, deck=(card.key,))
    state = with_seat(state, 1, cash=37)
    state = replace(state, premier_stacks=((), *state.premier_stacks[1:]))
    after = started(state)
    ended = after.scores[1]
    assert ended.money == 3 and after.seats[1].cash == 7
    assert after.seats[1].fame == ended.total


def test_stand_in_tie_cases_of_the_ranking_categories() -> None:
    from boulevard.games.vegas_showdown.rules import rank_fame

    points = (5, 3, 1)
    assert rank_fame([9, 9, 2], points) == (4, 4, 1)  # 2 tied for 1st: (5+3)//2
    assert rank_fame([9, 9, 9], points) == (3, 3, 3)  # 3 tied for 1st: 9//3
    assert rank_fame([9, 5, 5, 1], points) == (5, 2, 2, 0)  # 2 tied for 2nd: (3+1)//2
    assert rank_fame([9, 8, 5, 5], points) == (5, 3, 0, 0)  # 2 tied for 3rd: (1+0)//2
    assert rank_fame([3, 2, 1, 0, 0], points) == (5, 3, 1, 0, 0)


def test_money_moves_only_through_transfers() -> None:
    state = table(3)
    events = GAME.decide(StartTurn(0), state)
    income_event = events[-1]
    assert income_event.transfers == tuple(  # type: ignore[union-attr]
        Transfer(BANK, seat_account(s), 5, "income") for s in range(3)
    )


# --- the stand-in event cards and the random first player -------------------------------------


def _turn_two(deck: tuple[str, ...]) -> VegasShowdownState:
    """Turn 2 of a 4-player game with only `premier_4` empty (so exactly one card is drawn)."""
    state = started(table(4, deck=("quiet_1",)))
    state = replace(
        state,
        phase=Phase.TURN_START,
        turn=2,
        deck=deck,
        drawn=(),
        tracks=tuple(
            replace(t, tile=None, minimum=0) if t.name == "premier_4" else t for t in state.tracks
        ),
    )
    return state


def test_price_cards_move_every_premier_marker_one_circle_within_the_track() -> None:
    state = _turn_two(("hype_1",))
    state = replace(
        state,
        tracks=tuple(replace(t, minimum=52) if t.name == "premier_3" else t for t in state.tracks),
    )
    after = started(state)
    minimum = {t.name: t.minimum for t in after.tracks}
    # lowered first (18 → 12, 18 → 12, 52 → 42), then the card raises one circle
    assert (minimum["premier_1"], minimum["premier_2"], minimum["premier_3"]) == (18, 18, 52)
    slump = started(replace(state, deck=("slump_1",)))
    assert [t.minimum for t in slump.tracks if t.name in ("premier_1", "premier_3")] == [7, 33]


def test_money_cards_pay_the_least_famous_or_the_highest_revenue() -> None:
    state = _turn_two(("underdog_1",))
    state = replace(
        state,
        seats=tuple(replace(s, fame=f) for s, f in zip(state.seats, (3, 0, 0, 2), strict=True)),
    )
    events = GAME.decide(StartTurn(state.button), state)
    drawn = next(e for e in events if isinstance(e, EventCardDrawn))
    assert {t.target for t in drawn.transfers} == {seat_account(1), seat_account(2)}
    state = with_seat(_turn_two(("high_roller_1",)), 3, sheet=(SLOTS_AT_ENTRANCE,))
    events = GAME.decide(StartTurn(state.button), state)
    drawn = next(e for e in events if isinstance(e, EventCardDrawn))
    assert drawn.transfers == (Transfer(BANK, seat_account(3), 5, "event high_roller_1"),)


def test_the_first_player_is_rolled_and_holds_the_button() -> None:
    for first in range(5):
        state = table(5, first=first)
        assert state.button == first and state.current == first
        assert GAME.legal_commands(state, first) == (StartTurn(first),)
