"""Every example of the rulebook (seed long_shot.es.txt), one test each."""

from __future__ import annotations

from dataclasses import replace

from boulevard.games.base import BANK, ChanceKind, Transfer
from boulevard.games.long_shot import GAME
from boulevard.games.long_shot.rules import chance, legal_commands
from boulevard.games.long_shot.types import (
    ESCROW_BETS,
    ROLL_HORSE,
    ROLL_STEAL,
    Bet,
    BetPlaced,
    CardDrawn,
    CardPlayed,
    Die,
    HorseFinished,
    HorseMoved,
    MoneyTaken,
    MoveHorses,
    Payout,
    PlaceBet,
    PlayCard,
    RaceEnded,
    Reroll,
    RerollUsed,
    RollResolved,
    ZeroRolled,
)
from boulevard.games.testing import spec
from tests.unit.games.long_shot.support import (
    HORSES,
    acting,
    apply,
    card_of,
    horse_roll,
    rolled,
    steal_roll,
    table,
)

SIX_GUN, LAST_CHANCE, SURE_LEE = HORSES["Six Gun"], HORSES["Last Chance"], HORSES["Sure Lee"]
SLOW_JENN, EIGHTS, NINE_LIVES = HORSES["Slow Jenn"], HORSES["Eight's Enough"], HORSES["Nine Lives"]
WONDER_BRED = HORSES["Wonder Bred"]


def test_michelle_rolls_7_and_3_horse_7_moves_3_whoever_owns_it() -> None:
    state = rolled(table(4, current=0, owners={7: 2}), 7, 3)
    spec(GAME).given_state(state).when(MoveHorses(0, ())).then(
        HorseMoved(horse=7, spaces=3, position=3), RollResolved(seat=0)
    )


def test_gary_rolls_6_and_1_six_gun_and_his_sure_lee_move_one() -> None:
    gary = 0
    state = rolled(table(4, current=gary, owners={LAST_CHANCE: gary, SURE_LEE: gary}), 6, 1)
    assert MoveHorses(gary, (SURE_LEE,)) in legal_commands(state, gary)
    spec(GAME).given_state(state).when(MoveHorses(gary, (SURE_LEE,))).then(
        HorseMoved(horse=SIX_GUN, spaces=1, position=1),
        HorseMoved(horse=SURE_LEE, spaces=1, position=1),
        RollResolved(seat=gary),
    )
    # Last Chance has no 6 on its move bar.
    spec(GAME).given_state(state).when(MoveHorses(gary, (LAST_CHANCE,))).then_raises(
        "not_on_move_bar"
    )


def test_move_bar_horses_move_only_on_their_owners_turn() -> None:
    state = rolled(table(4, current=0, owners={SURE_LEE: 1}), 6, 1)
    spec(GAME).given_state(state).when(MoveHorses(0, (SURE_LEE,))).then_raises("not_on_move_bar")
    assert legal_commands(state, 0) == (
        Reroll(0, Die.HORSE),
        Reroll(0, Die.MOVE),
        MoveHorses(0, ()),
    )


def test_reroll_the_horse_die_from_7_to_4_makes_lucky_numba_4_playable_not_7() -> None:
    seven, four = card_of("lucky_numba_7"), card_of("lucky_numba_4")
    state = rolled(table(4, current=0, hands={0: (seven, four)}), 7, 1)
    # Happy with the 7: Lucky Numba 7 could be played.
    happy = acting(table(4, current=0, hands={0: (seven, four)}), 7, 1)
    assert PlayCard(0, seven) in legal_commands(happy, 0)
    # Instead the Reroll token re-rolls the horse die, which shows 4.
    state = apply(state, *spec(GAME).given_state(state).when(Reroll(0, Die.HORSE)).events())
    request = chance(state)
    assert request is not None and request.purpose == ROLL_HORSE
    state = apply(state, horse_roll(4))
    assert (state.horse_die, state.move_die, state.rerolls[0]) == (4, 1, 0)
    state = (
        spec(GAME)
        .given_state(state)
        .when(MoveHorses(0, ()))
        .then(HorseMoved(horse=4, spaces=1, position=1), RollResolved(seat=0))
    )
    spec(GAME).given_state(state).when(PlayCard(0, seven)).then_raises("not_lucky")
    events = spec(GAME).given_state(state).when(PlayCard(0, four)).events()
    assert events[:3] == (
        CardPlayed(seat=0, card=four, horse=None, target=None),
        MoneyTaken(
            seat=0,
            amount=15,
            transfers=(Transfer(BANK, "seat:0", 15, "long_shot card lucky_numba_4"),),
        ),
        CardDrawn(seat=0),
    )


def test_the_reroll_token_is_used_once_and_only_before_the_action() -> None:
    state = rolled(table(4, current=0), 7, 1)
    after = apply(state, RerollUsed(0, Die.MOVE))
    assert after.rerolls[0] == 0 and after.move_die is None and after.horse_die == 7
    spent = rolled(replace(table(4, current=0), rerolls=(0, 1, 1, 1)), 7, 1)
    spec(GAME).given_state(spent).when(Reroll(0, Die.HORSE)).then_raises("no_reroll")
    assert not any(isinstance(c, Reroll) for c in legal_commands(spent, 0))
    spec(GAME).given_state(acting(table(4, current=0))).when(Reroll(0, Die.MOVE)).then_raises(
        "roll_done"
    )


def test_a_zero_moves_nothing_and_steals_a_random_card_from_the_rolled_horses_owner() -> None:
    victim_cards = (card_of("money_5"), card_of("steal_card"), card_of("move_f1"))
    state = table(4, current=0, owners={3: 1, 5: 0}, hands={1: victim_cards})
    state = rolled(state, 3, 0)
    # Sure Lee (5) is seat 0's but a 0 moves no move-bar horse either.
    spec(GAME).given_state(state).when(MoveHorses(0, (5,))).then_raises("zero_moves_nothing")
    state = (
        spec(GAME)
        .given_state(state)
        .when(MoveHorses(0, ()))
        .then(ZeroRolled(seat=0, horse=3, victim=1), RollResolved(seat=0))
    )
    request = chance(state)
    assert request is not None
    assert (request.purpose, request.kind, request.count, request.sides) == (
        ROLL_STEAL,
        ChanceKind.ROLL,
        1,
        3,
    )
    before = state.hands[0]
    state = apply(state, steal_roll(2, 3))
    assert state.hands[1] == (victim_cards[0], victim_cards[2])
    assert state.hands[0] == (*before, victim_cards[1])
    assert set(state.positions) == {0}


def test_a_zero_on_an_unowned_horse_draws_from_the_deck() -> None:
    state = rolled(table(4, current=0), 3, 0)
    top = state.deck[0]
    state = (
        spec(GAME)
        .given_state(state)
        .when(MoveHorses(0, ()))
        .then(ZeroRolled(seat=0, horse=3, victim=None), CardDrawn(seat=0), RollResolved(seat=0))
    )
    assert state.hands[0][-1] == top and chance(state) is None


def test_a_horse_forced_out_of_no_bets_can_be_bet_on_again() -> None:
    back = card_of("move_b1")
    state = acting(table(4, current=0, positions={NINE_LIVES: 12}, hands={0: (back,)}))
    spec(GAME).given_state(state).when(PlaceBet(0, NINE_LIVES)).then_raises("no_bets")
    events = spec(GAME).given_state(state).when(PlayCard(0, back, horse=NINE_LIVES)).events()
    assert HorseMoved(horse=NINE_LIVES, spaces=-1, position=11) in events
    state = acting(apply(state, *events))  # seat 1's turn
    assert state.current == 1
    events = spec(GAME).given_state(state).when(PlaceBet(1, NINE_LIVES)).events()
    assert events[0] == BetPlaced(
        seat=1,
        horse=NINE_LIVES,
        amount=5,
        free=False,
        transfers=(Transfer("seat:1", ESCROW_BETS, 5, "long_shot bet on horse 9"),),
    )


def test_craig_15_dollars_on_slow_jenn_placing_wins_90() -> None:
    craig = 2
    # Last Chance has won; Slow Jenn and Six Gun (seat 0's, 4 on its move bar) are a
    # space from the line; seat 0 rolls Slow Jenn and a 1: Slow Jenn places, Six Gun shows.
    state = table(4, current=0, owners={SIX_GUN: 0}, positions={7: 16, 4: 15, 6: 15})
    state = replace(state, finished=(7,), bets=(Bet(craig, SLOW_JENN, 5),) * 3)
    state = rolled(state, SLOW_JENN, 1)
    events = spec(GAME).given_state(state).when(MoveHorses(0, (SIX_GUN,))).events()
    assert events[:4] == (
        HorseMoved(horse=SLOW_JENN, spaces=1, position=16),
        HorseFinished(horse=SLOW_JENN, place=2),
        HorseMoved(horse=SIX_GUN, spaces=1, position=16),
        HorseFinished(horse=SIX_GUN, place=3),
    )
    ended = events[4]
    assert isinstance(ended, RaceEnded) and len(events) == 5
    assert Payout(seat=craig, purse=0, winnings=90) in ended.payouts
    assert [t for t in ended.transfers if "seat:2" in (t.source, t.target)] == [
        Transfer(BANK, "seat:2", 30, "long_shot bet on horse 4 place 2 at 6:1")
    ] * 3
    assert ended.money[craig] == state.money[craig] + 90


def _brad(owns_last_chance: bool) -> tuple[RaceEnded, int]:
    brad = 1
    owners = {SLOW_JENN: brad, EIGHTS: brad, LAST_CHANCE: brad if owns_last_chance else 2}
    state = table(4, current=0, owners=owners, positions={7: 16, 4: 16, 5: 15})
    bets = (
        Bet(brad, SLOW_JENN, 5),
        Bet(brad, SLOW_JENN, 5),
        Bet(brad, NINE_LIVES, 5),
        Bet(brad, NINE_LIVES, 5),
        Bet(brad, NINE_LIVES, 5),
        Bet(brad, WONDER_BRED, 5),
        Bet(brad, SURE_LEE, 5),
    )
    state = rolled(replace(state, finished=(LAST_CHANCE, SLOW_JENN), bets=bets), SURE_LEE, 1)
    events = spec(GAME).given_state(state).when(MoveHorses(0, ())).events()
    ended = events[-1]
    assert isinstance(ended, RaceEnded)
    assert ended.finish == (LAST_CHANCE, SLOW_JENN, SURE_LEE)
    return ended, ended.money[brad] - state.money[brad]


def test_brad_final_scoring_155() -> None:
    """$75 for Slow Jenn placing + $10 × 6 on it + $5 × 4 on Sure Lee showing; nothing for
    Eight's Enough, nor for the bets on Nine Lives and Wonder Bred (their stakes go to the
    bank)."""
    ended, gained = _brad(owns_last_chance=False)
    assert gained == 155
    assert Payout(seat=1, purse=75, winnings=80) in ended.payouts
    lost = [t for t in ended.transfers if t.reason.startswith("long_shot lost bet")]
    assert sum(t.amount for t in lost) == 20 and {t.target for t in lost} == {BANK}


def test_brad_owning_the_winner_too_would_add_its_100_purse() -> None:
    """The rulebook lists Last Chance among Brad's horses yet totals $155, leaving out the
    winner's $100 purse; taken literally he receives $255 (docs/games/long-shot.md)."""
    ended, gained = _brad(owns_last_chance=True)
    assert gained == 255
    assert Payout(seat=1, purse=175, winnings=80) in ended.payouts
