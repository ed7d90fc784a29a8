"""The rules beyond the rulebook's worked examples: setup, the draw step, limits, gambling
details, trades, turn order and the end of the game (and the rulings in the docs)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from boulevard.games.base import (
    ChanceKind,
    ChanceRequest,
    ChanceResolved,
    GameConfig,
    Transfer,
    seat_account,
)
from boulevard.games.lords_of_vegas.board import END_CARD, LOT_IDS, LOT_INDEX, LOTS
from boulevard.games.lords_of_vegas.rules import gamble_settlement
from boulevard.games.lords_of_vegas.types import (
    AcceptTrade,
    ActionKind,
    BuildCasino,
    CasinoBuilt,
    CasinoReorganized,
    Colour,
    DealStartingCards,
    DecideLayOff,
    DrawCard,
    EndTurn,
    Gamble,
    GameStarted,
    Phase,
    PlayAction,
    ProposeTrade,
    RejectTrade,
    RemodelCasino,
    ReorganizeCasino,
    SettleGamble,
    StartingCardsDealt,
    Takeover,
    TradeAccepted,
    TradeOffer,
    TradeProposed,
    TradeRejected,
    TurnEnded,
)
from boulevard.games.testing import spec

from .support import BLUE, GAME, GREEN, RED, YELLOW, marker, pay, position, space, tile

# ---------------------------------------------------------------------------------------------
# Setup


def _shuffled(players: int, order: tuple[int, ...] = tuple(range(48))):  # type: ignore[no-untyped-def]
    state = GAME.initial_state()
    for ev in GAME.new_game(GameConfig(players)):
        state = GAME.evolve(state, ev)
    assert GAME.chance(state) == ChanceRequest("deck", ChanceKind.SHUFFLE, 48)
    return GAME.evolve(state, ChanceResolved("deck", ChanceKind.SHUFFLE, order))


def test_new_game_seats_players_and_asks_for_the_shuffle() -> None:
    assert GAME.new_game(GameConfig(3)) == (GameStarted(players=3, banker=0),)
    with pytest.raises(Exception, match="bad_players"):
        GAME.new_game(GameConfig(5))


def test_banker_deals_two_cards_each_pays_setup_money_and_buries_the_end_card() -> None:
    state = _shuffled(4)
    spec(GAME).given_state(state).when(DealStartingCards(GREEN)).then_raises("not_banker")
    (dealt,) = GAME.decide(DealStartingCards(0), state)
    assert isinstance(dealt, StartingCardsDealt)
    # One card to each player in turn, twice.
    assert dealt.hands == (("A1", "A5"), ("A2", "A6"), ("A3", "B1"), ("A4", "B2"))
    assert dealt.end_card_position == 30  # 40 cards left: three stacks of 10 on top of it
    after = GAME.evolve(state, dealt)
    assert after.cash == (7 + 7, 8 + 4, 5 + 5, 6 + 8)
    assert space(after, "A5") == marker(0)
    assert after.deck[30] == END_CARD and len(after.deck) == 41
    assert after.discards == ("A1", "A2", "A3", "A4", "A5", "A6", "B1", "B2")
    assert GAME.chance(after) == ChanceRequest("start_player", ChanceKind.ROLL, 8)
    assert GAME.view(after, 0).deck == ()


def test_start_player_is_the_highest_2d6_and_ties_reroll() -> None:
    state = _shuffled(4)
    state = GAME.evolve(state, GAME.decide(DealStartingCards(0), state)[0])
    state = GAME.evolve(
        state, ChanceResolved("start_player", ChanceKind.ROLL, (6, 5, 5, 6, 1, 1, 2, 3))
    )
    assert state.contenders == (0, 1)
    assert GAME.chance(state) == ChanceRequest("start_player", ChanceKind.ROLL, 4)
    state = GAME.evolve(state, ChanceResolved("start_player", ChanceKind.ROLL, (1, 1, 4, 2)))
    assert state.current == 1 and state.phase is Phase.DRAW
    assert GAME.legal_commands(state, 1) == [DrawCard(1)]


def test_two_players_redraw_starting_f_cards() -> None:
    f_first = tuple(LOT_INDEX[x] for x in ("F1", "F2", "A1", "A2", "F3", "A3", "A4")) + tuple(
        i for i in range(48) if LOT_IDS[i] not in ("F1", "F2", "A1", "A2", "F3", "A3", "A4")
    )
    state = _shuffled(2, f_first)
    (dealt,) = GAME.decide(DealStartingCards(0), state)
    assert isinstance(dealt, StartingCardsDealt)
    assert dealt.hands == (("A1", "A3"), ("A2", "A4"))
    assert dealt.set_aside == ("F1", "F2", "F3")
    after = GAME.evolve(state, dealt)
    assert set(after.discards) == {"F1", "F2", "F3", "A1", "A2", "A3", "A4"}
    assert END_CARD in after.deck and len(after.deck) == 48 - 7 + 1


# ---------------------------------------------------------------------------------------------
# The draw step


def _draw(state, seat):  # type: ignore[no-untyped-def]
    events = GAME.decide(DrawCard(seat), state)
    for ev in events:
        state = GAME.evolve(state, ev)
    return events, state


def test_drawing_a_sprawled_lot_replaces_the_die_keeping_its_value() -> None:
    before = position(
        {"A1": tile(Colour.GOLD, RED, 5), "A2": tile(Colour.GOLD, RED, 2)},
        current=BLUE,
        phase=Phase.DRAW,
        deck=("A1", "B1"),
    )
    (drawn,), after = _draw(before, BLUE)
    assert drawn.takeover is Takeover.DIE_REPLACED
    assert space(after, "A1") == tile(Colour.GOLD, BLUE, 5)


def test_drawing_a_tile_with_no_die_places_the_printed_value() -> None:
    before = position({"A3": tile(Colour.GOLD, None)}, current=BLUE, phase=Phase.DRAW, deck=("A3",))
    (drawn,), after = _draw(before, BLUE)
    assert drawn.takeover is Takeover.DIE_PLACED
    assert space(after, "A3") == tile(Colour.GOLD, BLUE, 5)


def test_drawing_your_own_sprawled_lot_does_nothing_to_it() -> None:
    before = position(
        {"A3": tile(Colour.GOLD, BLUE, 2)}, current=BLUE, phase=Phase.DRAW, deck=("A3",)
    )
    (drawn,), after = _draw(before, BLUE)
    assert drawn.takeover is Takeover.ALREADY_YOURS
    assert space(after, "A3") == tile(Colour.GOLD, BLUE, 2)


def test_with_no_marker_left_the_drawn_lot_stays_unowned() -> None:
    ten = {LOT_IDS[i]: marker(BLUE) for i in range(10)}
    before = position(ten, current=BLUE, phase=Phase.DRAW, deck=("E1",))
    (drawn,), after = _draw(before, BLUE)
    assert drawn.takeover is Takeover.NO_MARKER_LEFT
    assert space(after, "E1") == space(before, "E1")
    assert after.cash[BLUE] == before.cash[BLUE] + 10  # the ten lots still pay


def test_take_over_with_all_dice_placed_moves_your_lowest_die() -> None:
    dice = {LOT_IDS[i]: tile(Colour.SILVER, BLUE, 6) for i in range(37, 48)}  # E5..F9
    dice["E1"] = tile(Colour.AQUA, BLUE, 1)
    dice["A1"] = tile(Colour.GOLD, RED, 4)
    before = position(dice, current=BLUE, phase=Phase.DRAW, deck=("A1",))
    (drawn,), after = _draw(before, BLUE)
    assert drawn.die_moved_from == "E1"
    assert space(after, "E1") == tile(Colour.AQUA, None)
    assert space(after, "A1") == tile(Colour.GOLD, BLUE, 4)


def test_owned_lots_pay_on_every_turn() -> None:
    before = position(
        {"A1": marker(RED), "A2": marker(RED), "B3": marker(GREEN)},
        current=BLUE,
        phase=Phase.DRAW,
        deck=("C1",),
    )
    _, after = _draw(before, BLUE)
    assert after.cash == (51, 51, 52, 50)


def test_two_players_f_cards_pay_and_step_1_repeats() -> None:
    before = position(
        {"F1": tile(Colour.PURPLE, RED, 3)},  # not possible in play; shows F cards still pay
        players=2,
        current=0,
        phase=Phase.DRAW,
        deck=("F5", "F2", "A1", "A2"),
        cash=(0, 0),
    )
    events, after = _draw(before, 0)
    assert [e.card for e in events] == ["F5", "F2", "A1"]
    assert [e.takeover for e in events] == [
        Takeover.F_BLOCK_SKIPPED,
        Takeover.F_BLOCK_SKIPPED,
        Takeover.MARKER_PLACED,
    ]
    assert space(after, "F5") == space(before, "F5")
    assert after.phase is Phase.PLAY


def test_two_players_cannot_build_on_f() -> None:
    before = position({"F5": marker(0)}, players=2, cash=(50, 50))
    spec(GAME).given_state(before).when(BuildCasino(0, "F5", Colour.GOLD)).then_raises("f_block")


def test_end_card_pays_the_strip_and_ends_the_game_ranked_by_points_then_money() -> None:
    before = position(
        {"A3": tile(Colour.GOLD, RED, 5), "A1": marker(GREEN)},
        current=BLUE,
        phase=Phase.DRAW,
        deck=(END_CARD,),
        points=(10, 10, 7, 3),
        cash=(5, 9, 1, 0),
    )
    (drawn,), after = _draw(before, BLUE)
    assert drawn.takeover is Takeover.NO_LOT and drawn.pays == "strip" and drawn.game_over
    assert after.phase is Phase.OVER
    result = GAME.outcome(after)
    assert result.finished and result.reason == "end_card"
    # Red's 1-tile Strip casino lifts him to 8; money breaks Blue's and Green's tie at 10.
    assert after.points == (10, 10, 8, 3) and after.cash == (5, 10, 6, 0)
    assert result.ranking == ((GREEN,), (BLUE,), (RED,), (YELLOW,))
    assert GAME.legal_commands(after, GREEN) == []
    spec(GAME).given_state(after).when(DrawCard(BLUE)).then_raises("game_over")


def test_equal_points_and_money_share_a_place() -> None:
    over = replace(position(points=(5, 5, 1, 1), cash=(3, 3, 3, 2)), phase=Phase.OVER)
    assert GAME.outcome(over).ranking == ((0, 1), (2,), (3,))


def test_reaching_90_points_wins_at_once() -> None:
    before = position(
        {"A1": tile(Colour.BROWN, RED, 5), "A2": tile(Colour.BROWN, RED, 3)},
        current=BLUE,
        phase=Phase.DRAW,
        deck=("E1", "E5"),
        points=(0, 0, 81, 0),
    )
    (drawn,), after = _draw(before, BLUE)
    assert drawn.points[RED] == 81  # 81 -> 90 needs 9 points; 2 are lost
    before = replace(before, points=(0, 0, 81, 0))
    nine = {LOT_IDS[i]: tile(Colour.BROWN, RED, 5) for i in range(12, 21)}  # block C, 9 tiles
    before = position(nine, current=BLUE, phase=Phase.DRAW, deck=("E1",), points=(0, 0, 81, 0))
    (drawn,), after = _draw(before, BLUE)
    assert drawn.game_over and after.points[RED] == 90
    result = GAME.outcome(after)
    assert result.reason == "90_points" and result.winners == (RED,)


# ---------------------------------------------------------------------------------------------
# Step 2: limits and refusals


def test_commands_out_of_turn_or_out_of_step_are_refused() -> None:
    play = position({"A1": marker(RED)}, current=RED)
    spec(GAME).given_state(play).when(BuildCasino(BLUE, "A1", Colour.GOLD)).then_raises(
        "not_your_turn"
    )
    spec(GAME).given_state(play).when(DrawCard(RED)).then_raises("already_drawn")
    draw = replace(play, phase=Phase.DRAW, deck=("B1",))
    spec(GAME).given_state(draw).when(BuildCasino(RED, "A1", Colour.GOLD)).then_raises("draw_first")
    spec(GAME).given_state(play).when(BuildCasino(RED, "A2", Colour.GOLD)).then_raises(
        "not_your_lot"
    )
    spec(GAME).given_state(play).when(BuildCasino(RED, "Z9", Colour.GOLD)).then_raises(
        "unknown_lot"
    )
    spec(GAME).given_state(play).when(EndTurn(RED)).then(TurnEnded(RED, YELLOW))


def test_build_needs_money_and_a_tile_of_that_colour() -> None:
    poor = position({"A1": marker(RED)}, current=RED, cash=(50, 50, 8, 50))
    spec(GAME).given_state(poor).when(BuildCasino(RED, "A1", Colour.GOLD)).then_raises(
        "not_enough_money"
    )
    nine_gold = {LOT_IDS[i]: tile(Colour.GOLD, None) for i in range(12, 21)}
    full = position({**nine_gold, "A1": marker(RED)}, current=RED)
    spec(GAME).given_state(full).when(BuildCasino(RED, "A1", Colour.GOLD)).then_raises("no_tiles")
    assert all(
        c.colour is not Colour.GOLD for c in GAME.legal_commands(full, RED) if hasattr(c, "colour")
    )


def test_with_all_dice_placed_a_build_takes_a_die_from_one_of_your_tiles() -> None:
    dice = {LOT_IDS[i]: tile(Colour.SILVER, RED, 3) for i in range(24, 36)}
    before = position({**dice, "A1": marker(RED)}, current=RED)
    spec(GAME).given_state(before).when(BuildCasino(RED, "A1", Colour.GOLD)).then_raises(
        "die_needed"
    )
    after = (
        spec(GAME)
        .given_state(before)
        .when(BuildCasino(RED, "A1", Colour.GOLD, die_from="D1"))
        .then(CasinoBuilt(RED, "A1", Colour.GOLD, 3, "D1", (pay(RED, 9, "build A1"),)))
    )
    assert space(after, "D1") == tile(Colour.SILVER, None)
    assert space(after, "A1") == tile(Colour.GOLD, RED, 3)
    fresh = position({"A1": marker(RED)}, current=RED)
    spec(GAME).given_state(fresh).when(BuildCasino(RED, "A1", Colour.GOLD, "D1")).then_raises(
        "die_not_needed"
    )


def test_remodel_and_sprawl_need_the_boss() -> None:
    before = position(
        {"A1": tile(Colour.GOLD, RED, 2), "A2": tile(Colour.GOLD, BLUE, 4)}, current=RED
    )
    spec(GAME).given_state(before).when(RemodelCasino(RED, "A1", Colour.AQUA)).then_raises(
        "not_boss"
    )
    spec(GAME).given_state(before).when(RemodelCasino(RED, "A3", Colour.AQUA)).then_raises(
        "no_casino"
    )


def test_reorganize_needs_one_of_your_dice_in_the_casino() -> None:
    before = position({"A1": tile(Colour.GOLD, BLUE, 2)}, current=RED)
    spec(GAME).given_state(before).when(ReorganizeCasino(RED, "A1")).then_raises("no_die_here")


def test_a_single_die_reorganization_places_itself() -> None:
    before = position({"A1": tile(Colour.GOLD, RED, 2)}, current=RED)
    paid_for = (
        spec(GAME)
        .given_state(before)
        .when(ReorganizeCasino(RED, "A1"))
        .then(CasinoReorganized(RED, ("A1",), (pay(RED, 2, "reorganize A1"),)))
    )
    after = GAME.evolve(paid_for, ChanceResolved("reorganize", ChanceKind.ROLL, (6,)))
    assert space(after, "A1").die == 6 and after.pending_reorganization is None
    assert after.reorganized == frozenset({"A1"})
    # A new turn clears the record of rerolled dice.
    assert GAME.evolve(after, TurnEnded(RED, YELLOW)).reorganized == frozenset()


def test_a_die_moved_after_its_reorganization_is_not_rerolled_again_that_turn() -> None:
    # Rulebook, Reorganize: "no die may be rerolled more than once in a turn, even if that
    # die's tile becomes part of a larger casino." Moving the die with die_from does not
    # make it a fresh die: the once-per-turn mark follows the die, not the lot.
    dice = {LOT_IDS[i]: tile(Colour.SILVER, RED, 3) for i in range(24, 35)}  # D1..E2: 11 dice
    before = position({**dice, "B1": tile(Colour.GOLD, RED, 2), "A1": marker(RED)}, current=RED)
    paid_for = (
        spec(GAME)
        .given_state(before)
        .when(ReorganizeCasino(RED, "B1"))
        .then(CasinoReorganized(RED, ("B1",), (pay(RED, 2, "reorganize B1"),)))
    )
    rerolled = GAME.evolve(paid_for, ChanceResolved("reorganize", ChanceKind.ROLL, (1,)))
    moved = (
        spec(GAME)
        .given_state(rerolled)
        .when(BuildCasino(RED, "A1", Colour.AQUA, die_from="B1"))
        .then(CasinoBuilt(RED, "A1", Colour.AQUA, 3, "B1", (pay(RED, 9, "build A1"),)))
    )
    spec(GAME).given_state(moved).when(ReorganizeCasino(RED, "A1")).then_raises(
        "already_reorganized"
    )
    assert ReorganizeCasino(RED, "A1") not in GAME.legal_commands(moved, RED)
    # Dice that were never rerolled this turn may still be: the D block casino is offered.
    assert ReorganizeCasino(RED, "D1") in GAME.legal_commands(moved, RED)


def test_tied_dice_of_one_player_are_not_rerolled() -> None:
    same = position({"A1": tile(Colour.GOLD, RED, 5), "A2": tile(Colour.GOLD, RED, 5)}, current=RED)
    assert GAME.chance(same) is None
    lower = position(
        {
            "A1": tile(Colour.GOLD, RED, 3),
            "A2": tile(Colour.GOLD, BLUE, 3),
            "A3": tile(Colour.GOLD, GREEN, 6),
        },
        current=RED,
    )
    assert GAME.chance(lower) is None  # tied, but not for the largest value


def test_tie_rerolls_repeat_until_one_die_is_largest() -> None:
    tied = position(
        {"A1": tile(Colour.GOLD, RED, 5), "A2": tile(Colour.GOLD, BLUE, 5)}, current=RED
    )
    again = GAME.evolve(tied, ChanceResolved("tie_reroll", ChanceKind.ROLL, (2, 2)))
    assert GAME.chance(again) == ChanceRequest("tie_reroll", ChanceKind.ROLL, 2)
    spec(GAME).given_state(again).when(EndTurn(RED)).then_raises("waiting_for_chance")
    done = GAME.evolve(again, ChanceResolved("tie_reroll", ChanceKind.ROLL, (1, 4)))
    assert GAME.chance(done) is None and space(done, "A2").die == 4


# ---------------------------------------------------------------------------------------------
# Gambling


def test_gamble_only_once_per_turn_and_never_at_your_own_casino() -> None:
    before = position({"D1": tile(Colour.SILVER, RED, 6)}, current=RED)
    spec(GAME).given_state(before).when(Gamble(RED, "D1", 2)).then_raises("not_other_boss")
    yellow = replace(before, current=YELLOW, gambled=True)
    spec(GAME).given_state(yellow).when(Gamble(YELLOW, "D1", 2)).then_raises("already_gambled")
    broke = replace(before, current=YELLOW, cash=(50, 50, 50, 3))
    spec(GAME).given_state(broke).when(Gamble(YELLOW, "D1", 4)).then_raises("not_enough_money")


def test_only_the_boss_decides_the_lay_off_and_only_the_gambler_settles() -> None:
    before = position({"D1": tile(Colour.SILVER, RED, 6)}, current=YELLOW)
    offered = GAME.evolve(before, GAME.decide(Gamble(YELLOW, "D1", 5), before)[0])
    spec(GAME).given_state(offered).when(DecideLayOff(YELLOW, True)).then_raises("not_boss")
    spec(GAME).given_state(offered).when(EndTurn(YELLOW)).then_raises("decision_pending")
    assert GAME.legal_commands(offered, YELLOW) == []
    decided = GAME.evolve(offered, GAME.decide(DecideLayOff(RED, True), offered)[0])
    rolled = GAME.evolve(decided, ChanceResolved("gamble", ChanceKind.ROLL, (3, 4)))
    spec(GAME).given_state(rolled).when(SettleGamble(RED)).then_raises("not_gambler")
    (settled,) = GAME.decide(SettleGamble(YELLOW), rolled)
    # A 7 loses $5; laid off, the boss gets half rounded down ($2) and the bank the rest.
    assert settled.transfers == (
        Transfer(seat_account(YELLOW), seat_account(RED), 2, "gamble rolled 7"),
        Transfer(seat_account(YELLOW), "bank", 3, "gamble rolled 7"),
    )


@pytest.mark.parametrize(
    ("bet", "roll", "lay_off", "boss_cash", "expected"),
    [
        (5, 12, True, 50, (("boss", "gambler", 5), ("bank", "gambler", 5))),
        (5, 2, False, 50, (("boss", "gambler", 10),)),
        (5, 3, True, 50, (("boss", "gambler", 2), ("bank", "gambler", 3))),
        (4, 9, False, 1, (("boss", "gambler", 1),)),  # the boss pays only what he has
        (4, 12, True, 1, (("boss", "gambler", 1), ("bank", "gambler", 4))),
        (4, 6, False, 0, (("gambler", "boss", 4),)),
    ],
)
def test_gamble_payouts(
    bet: int, roll: int, lay_off: bool, boss_cash: int, expected: tuple[object, ...]
) -> None:
    assert gamble_settlement(bet, roll, lay_off, boss_cash) == expected


# ---------------------------------------------------------------------------------------------
# Trades


def _trade_position():  # type: ignore[no-untyped-def]
    return position(
        {
            "A1": marker(RED),
            "B1": marker(BLUE),
            "C1": tile(Colour.GOLD, RED, 5),
            "C2": tile(Colour.GOLD, BLUE, 2),
        },
        current=RED,
    )


def test_a_lot_for_money_trade_moves_the_marker_and_the_money() -> None:
    offer = TradeOffer(RED, BLUE, give_lots=("A1",), take_money=7)
    proposed = (
        spec(GAME)
        .given_state(_trade_position())
        .when(ProposeTrade(RED, offer))
        .then(TradeProposed(offer))
    )
    assert GAME.legal_commands(proposed, BLUE) == [AcceptTrade(BLUE), RejectTrade(BLUE)]
    spec(GAME).given_state(proposed).when(AcceptTrade(GREEN)).then_raises("not_recipient")
    spec(GAME).given_state(proposed).when(EndTurn(RED)).then_raises("decision_pending")
    after = (
        spec(GAME)
        .given_state(proposed)
        .when(AcceptTrade(BLUE))
        .then(TradeAccepted(offer, (Transfer(seat_account(BLUE), seat_account(RED), 7, "trade"),)))
    )
    assert space(after, "A1") == marker(BLUE)
    assert after.cash[RED] == 57 and after.cash[BLUE] == 43


def test_a_traded_die_keeps_its_value() -> None:
    offer = TradeOffer(RED, BLUE, give_dice=("C1",), take_lots=("B1",))
    proposed = GAME.evolve(_trade_position(), TradeProposed(offer))
    (accepted,) = GAME.decide(AcceptTrade(BLUE), proposed)
    after = GAME.evolve(proposed, accepted)
    assert space(after, "C1") == tile(Colour.GOLD, BLUE, 5)
    assert space(after, "B1") == marker(RED)


def test_a_rejected_trade_changes_nothing() -> None:
    offer = TradeOffer(RED, BLUE, give_money=3, take_lots=("B1",))
    proposed = GAME.evolve(_trade_position(), TradeProposed(offer))
    after = spec(GAME).given_state(proposed).when(RejectTrade(BLUE)).then(TradeRejected(offer))
    assert after.spaces == _trade_position().spaces and after.cash == _trade_position().cash


def test_players_may_trade_out_of_turn() -> None:
    offer = TradeOffer(GREEN, BLUE, give_money=2, take_lots=("B1",))
    spec(GAME).given_state(_trade_position()).when(ProposeTrade(GREEN, offer)).then(
        TradeProposed(offer)
    )
    spec(GAME).given_state(_trade_position()).when(ProposeTrade(BLUE, offer)).then_raises(
        "not_your_offer"
    )


def test_trades_refuse_what_a_player_does_not_have() -> None:
    base = spec(GAME).given_state(_trade_position())
    base.when(ProposeTrade(RED, TradeOffer(RED, BLUE, give_money=51))).then_raises(
        "not_enough_money"
    )
    base.when(ProposeTrade(RED, TradeOffer(RED, BLUE, give_lots=("B1",)))).then_raises("not_owned")
    base.when(ProposeTrade(RED, TradeOffer(RED, BLUE))).then_raises("empty_trade")
    base.when(ProposeTrade(RED, TradeOffer(RED, RED, give_money=1))).then_raises("bad_partner")


def test_an_action_this_turn_can_be_sold_for_money() -> None:
    # Blue pays Red $3 to reorganize the gold casino now (Blue hopes to become its boss).
    action = PlayAction(ActionKind.REORGANIZE, "C1")
    offer = TradeOffer(RED, BLUE, take_money=3, action=action)
    proposed = (
        spec(GAME)
        .given_state(_trade_position())
        .when(ProposeTrade(RED, offer))
        .then(TradeProposed(offer))
    )
    events = GAME.decide(AcceptTrade(BLUE), proposed)
    assert list(events) == [
        TradeAccepted(offer, (Transfer(seat_account(BLUE), seat_account(RED), 3, "trade"),)),
        CasinoReorganized(RED, ("C1", "C2"), (pay(RED, 7, "reorganize C1"),)),
    ]
    # Only the current player's action, performed now: not between two other players.
    out_of_turn = TradeOffer(GREEN, BLUE, take_money=1, action=action)
    spec(GAME).given_state(_trade_position()).when(ProposeTrade(GREEN, out_of_turn)).then_raises(
        "action_not_now"
    )


def test_view_hides_the_deck_but_not_the_discards() -> None:
    state = position(current=RED, phase=Phase.DRAW, deck=("A1", "B2"), discards=("C3",))
    seen = GAME.view(state, BLUE)
    assert seen.deck == () and seen.cards_left == 2 and seen.discards == ("C3",)
    text = GAME.render(seen)
    assert "A1" in text and "2 cards left" in text


def test_lot_data_is_complete() -> None:
    assert len(LOTS) == 48
    assert sum(lot.borders_strip for lot in LOTS) == 16
    assert all(lot.setup_money == 10 - lot.die for lot in LOTS)
    assert all(lot.index in LOTS[n].neighbours for lot in LOTS for n in lot.neighbours)


def test_a_take_over_that_ties_the_largest_dice_pays_money_but_no_points_then_rerolls() -> None:
    # Red's two 5s (no tie: one owner); Blue draws A1 and now Blue's 5 ties Red's 5.
    before = position(
        {"A1": tile(Colour.BROWN, RED, 5), "A2": tile(Colour.BROWN, RED, 5)},
        current=BLUE,
        phase=Phase.DRAW,
        deck=("A1",),  # a brown card: this very casino pays
    )
    (drawn,), after = _draw(before, BLUE)
    (paid_casino,) = drawn.payouts
    assert paid_casino.boss is None and paid_casino.points == 0 and paid_casino.money == 10
    assert after.points == (0, 0, 0, 0)
    assert GAME.chance(after) == ChanceRequest("tie_reroll", ChanceKind.ROLL, 2)


def test_two_players_passing_90_in_one_draw_are_ranked_by_points_then_money() -> None:
    red = {LOT_IDS[i]: tile(Colour.BROWN, RED, 5) for i in range(12, 21)}  # 9 tiles in C
    green = {LOT_IDS[i]: tile(Colour.BROWN, GREEN, 3) for i in range(24, 33)}  # 9 tiles in D
    before = position(
        {**red, **green},
        current=BLUE,
        phase=Phase.DRAW,
        deck=("E1",),
        points=(0, 81, 81, 0),
        cash=(0, 0, 0, 0),
    )
    (drawn,), after = _draw(before, BLUE)
    assert drawn.game_over and after.points == (0, 90, 90, 0)
    # Both at 90: Red's dice paid $45, Green's $27, so Red wins on money (Blue has $1).
    assert GAME.outcome(after).ranking == ((RED,), (GREEN,), (BLUE,), (YELLOW,))


def test_a_trade_needs_a_free_marker_or_die_on_the_receiving_side() -> None:
    ten = {LOT_IDS[i]: marker(BLUE) for i in range(10)}
    before = position({**ten, "E1": marker(RED)}, current=RED)
    offer = TradeOffer(RED, BLUE, give_lots=("E1",), take_money=1)
    spec(GAME).given_state(before).when(ProposeTrade(RED, offer)).then_raises("no_marker")
    # Unless the same trade gives one of Blue's lots back.
    swap = TradeOffer(RED, BLUE, give_lots=("E1",), take_lots=("A1",))
    spec(GAME).given_state(before).when(ProposeTrade(RED, swap)).then(TradeProposed(swap))
