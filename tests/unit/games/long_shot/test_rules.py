"""The rules one by one, and every ambiguity we settled (docs/games/long-shot.md)."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

from boulevard.games.base import BANK, ChanceKind, GameConfig, RulesError, Transfer
from boulevard.games.long_shot import GAME
from boulevard.games.long_shot.data import DATA
from boulevard.games.long_shot.rules import chance, leaders, legal_commands, new_game, view
from boulevard.games.long_shot.types import (
    ESCROW_BETS,
    ROLL_HORSE,
    ROLL_START,
    ROLL_STEAL,
    SHUFFLE_DECK,
    BetPlaced,
    BuyHorse,
    CardDrawn,
    CardPlayed,
    CardsDiscarded,
    DiscardCards,
    HorseBought,
    HorseFinished,
    HorseMoved,
    MoneyStolen,
    MoveHorses,
    Passed,
    PassTurn,
    Phase,
    PlaceBet,
    PlayCard,
    RaceEnded,
    RollResolved,
    StealStarted,
    TurnEnded,
    ZeroRolled,
)
from boulevard.games.testing import spec
from tests.unit.games.long_shot.support import (
    acting,
    apply,
    card_of,
    horse_roll,
    rolled,
    shuffled,
    start,
    steal_roll,
    table,
)


@pytest.mark.parametrize("players", [2, 9])
def test_three_to_eight_players(players: int) -> None:
    with pytest.raises(RulesError) as err:
        new_game(GameConfig(players))
    assert err.value.code == "bad_player_count"


def test_setup_25_dollars_three_cards_one_reroll_then_the_first_player_roll() -> None:
    state = GAME.initial_state()
    for event in new_game(GameConfig(3)):
        state = GAME.evolve(state, event)
    request = chance(state)
    assert request is not None and (request.purpose, request.kind, request.count) == (
        SHUFFLE_DECK,
        ChanceKind.SHUFFLE,
        104,
    )
    state = shuffled(3)
    assert state.money == (25, 25, 25) and state.rerolls == (1, 1, 1)
    assert state.hands == ((0, 3, 6), (1, 4, 7), (2, 5, 8)) and len(state.deck) == 95
    request = chance(state)
    assert request is not None and (request.purpose, request.count, request.sides) == (
        ROLL_START,
        3,
        10,
    )


def test_the_highest_d10_plays_first_and_ties_roll_again() -> None:
    state = apply(shuffled(3), start((7, 9, 9)))
    assert state.contenders == (1, 2) and state.phase is Phase.SETUP
    request = chance(state)
    assert request is not None and request.count == 2
    state = apply(state, start((3, 8)))
    assert (state.current, state.phase, state.turn) == (2, Phase.ROLLING, 1)
    assert chance(state) is not None and chance(state).purpose == ROLL_HORSE  # type: ignore[union-attr]


def test_the_horse_die_is_rolled_again_until_it_names_a_running_horse() -> None:
    state = table(4, current=0, positions={3: 16})
    state = replace(state, finished=(3,))
    state = apply(state, horse_roll(3))
    assert state.horse_die is None and chance(state).purpose == ROLL_HORSE  # type: ignore[union-attr]
    state = apply(state, horse_roll(4))
    assert state.horse_die == 4


def test_after_the_action_the_seat_draws_and_the_dice_pass_clockwise() -> None:
    state = acting(table(4, current=3))
    top = state.deck[0]
    after = (
        spec(GAME)
        .given_state(state)
        .when(PassTurn(3))
        .then(Passed(3), CardDrawn(3), TurnEnded(seat=3, next=0))
    )
    assert after.hands[3][-1] == top and after.current == 0 and after.turn == 2


def test_no_draw_once_the_deck_is_empty() -> None:
    state = acting(table(4, current=1))
    state = replace(state, discard=(*state.discard, *state.deck), deck=())
    spec(GAME).given_state(state).when(PassTurn(1)).then(Passed(1), TurnEnded(seat=1, next=2))


def test_only_the_current_seat_acts_and_only_once_its_roll_is_resolved() -> None:
    state = rolled(table(4, current=0), 7, 1)
    spec(GAME).given_state(state).when(PassTurn(1)).then_raises("not_your_turn")
    spec(GAME).given_state(state).when(PassTurn(0)).then_raises("roll_first")
    spec(GAME).given_state(table(4, current=0)).when(PassTurn(0)).then_raises("waiting_for_dice")
    assert legal_commands(state, 1) == ()


def test_buying_an_unowned_horse_at_its_price() -> None:
    state = acting(table(4, current=0))
    price = DATA.horse(2).price
    events = spec(GAME).given_state(state).when(BuyHorse(0, 2)).events()
    assert events[0] == HorseBought(
        seat=0,
        horse=2,
        price=price,
        transfers=(Transfer("seat:0", BANK, price, "long_shot buys horse 2"),),
    )
    owned = acting(replace(table(4, current=0), owners=(-1, 1, *(-1,) * 8)))
    spec(GAME).given_state(owned).when(BuyHorse(0, 2)).then_raises("owned")
    poor = replace(state, money=(price - 1, 25, 25, 25))
    spec(GAME).given_state(poor).when(BuyHorse(0, 2)).then_raises("no_money")
    assert BuyHorse(0, 2) not in legal_commands(poor, 0)


def test_a_finished_horse_is_not_for_sale() -> None:
    state = acting(replace(table(4, current=0, positions={2: 16}), finished=(2,)))
    spec(GAME).given_state(state).when(BuyHorse(0, 2)).then_raises("horse_finished")


def test_bets_stack_and_wait_in_escrow() -> None:
    state = acting(table(4, current=0))
    for _ in range(2):
        events = spec(GAME).given_state(state).when(PlaceBet(state.current, 1)).events()
        state = apply(state, *events)
        state = acting(replace(state, current=0))
    assert [(b.seat, b.horse, b.amount) for b in state.bets] == [(0, 1, 5), (0, 1, 5)]
    assert state.money[0] == 15


def test_no_bet_of_any_kind_on_a_finished_horse() -> None:
    anywhere = card_of("free_bet_5_anywhere")
    state = table(4, current=0, positions={6: 16}, hands={0: (anywhere,)})
    state = acting(replace(state, finished=(6,)))
    spec(GAME).given_state(state).when(PlaceBet(0, 6)).then_raises("horse_finished")
    spec(GAME).given_state(state).when(PlayCard(0, anywhere, horse=6)).then_raises("horse_finished")


def test_a_bet_anywhere_card_bets_inside_no_bets_and_a_free_bet_is_staked_by_the_bank() -> None:
    anywhere = card_of("free_bet_5_anywhere")
    state = acting(table(4, current=0, positions={6: 13}, hands={0: (anywhere,)}))
    events = spec(GAME).given_state(state).when(PlayCard(0, anywhere, horse=6)).events()
    assert events[1] == BetPlaced(
        seat=0,
        horse=6,
        amount=5,
        free=True,
        transfers=(Transfer(BANK, ESCROW_BETS, 5, "long_shot free bet on horse 6"),),
    )
    plain = card_of("free_bet_10")
    state = acting(table(4, current=0, positions={6: 13}, hands={0: (plain,)}))
    spec(GAME).given_state(state).when(PlayCard(0, plain, horse=6)).then_raises("no_bets")


def test_discard_two_cards_for_five_dollars() -> None:
    a, b, c = card_of("money_5"), card_of("leader_back_1"), card_of("move_f2")
    state = acting(table(4, current=0, hands={0: (a, b, c)}))
    events = spec(GAME).given_state(state).when(DiscardCards(0, (a, b))).events()
    assert events[0] == CardsDiscarded(
        seat=0, cards=(a, b), transfers=(Transfer(BANK, "seat:0", 5, "long_shot discard for cash"),)
    )
    spec(GAME).given_state(state).when(DiscardCards(0, (a,))).then_raises("bad_discard")
    spec(GAME).given_state(state).when(DiscardCards(0, (a, a))).then_raises("bad_discard")
    spec(GAME).given_state(state).when(DiscardCards(0, (a, 103))).then_raises("not_in_hand")


def test_winners_circle_cards_are_void_once_a_horse_has_finished_but_can_be_discarded() -> None:
    back, cash = card_of("leader_back_1"), card_of("leader_owner_10")
    hand = {0: (back, cash)}
    state = acting(table(4, current=0, positions={2: 7, 5: 7, 9: 3}, owners={5: 0}, hands=hand))
    assert leaders(state) == (2, 5)
    events = spec(GAME).given_state(state).when(PlayCard(0, back, horse=5)).events()
    assert HorseMoved(horse=5, spaces=-1, position=6) in events
    spec(GAME).given_state(state).when(PlayCard(0, back, horse=9)).then_raises("not_leading")
    assert spec(GAME).given_state(state).when(PlayCard(0, cash)).events()[1].amount == 10  # type: ignore[attr-defined]
    done = acting(replace(state, positions=(16, *state.positions[1:]), finished=(1,)))
    assert leaders(done) == ()
    spec(GAME).given_state(done).when(PlayCard(0, back, horse=5)).then_raises("no_leader")
    spec(GAME).given_state(done).when(PlayCard(0, cash)).then_raises("no_leader")
    assert DiscardCards(0, (back, cash)) in legal_commands(done, 0)


def test_no_leader_before_any_horse_leaves_the_start() -> None:
    cash = card_of("leader_owner_10")
    state = acting(table(4, current=0, hands={0: (cash,)}), horse=1, face=1)
    assert leaders(state) == (1,)
    assert leaders(table(4)) == ()


def test_a_finished_horse_never_moves_and_no_horse_goes_behind_the_start() -> None:
    forward, back = card_of("move_f2"), card_of("move_b2")
    state = table(4, current=0, positions={3: 16, 4: 1}, hands={0: (forward, back)})
    state = acting(replace(state, finished=(3,)))
    spec(GAME).given_state(state).when(PlayCard(0, forward, horse=3)).then_raises("horse_finished")
    events = spec(GAME).given_state(state).when(PlayCard(0, back, horse=4)).events()
    assert HorseMoved(horse=4, spaces=-1, position=0) in events


def test_a_move_card_may_carry_a_horse_across_the_line() -> None:
    forward = card_of("move_f2")
    state = acting(table(4, current=0, positions={3: 15}, hands={0: (forward,)}))
    events = spec(GAME).given_state(state).when(PlayCard(0, forward, horse=3)).events()
    assert events[1:3] == (HorseMoved(3, 1, 16), HorseFinished(3, 1))


def test_steal_money_takes_what_the_victim_has_at_most() -> None:
    steal = card_of("steal_5")
    state = acting(table(4, current=0, hands={0: (steal,)}, money={2: 3}))
    events = spec(GAME).given_state(state).when(PlayCard(0, steal, target=2)).events()
    assert events[1] == MoneyStolen(
        seat=0,
        victim=2,
        amount=3,
        transfers=(Transfer("seat:2", "seat:0", 3, "long_shot card steal_5"),),
    )
    broke = replace(state, money=(25, 25, 0, 25))
    spec(GAME).given_state(broke).when(PlayCard(0, steal, target=2)).then_raises("nothing_to_steal")
    spec(GAME).given_state(state).when(PlayCard(0, steal, target=0)).then_raises("bad_target")


def test_steal_a_card_is_a_chance_over_the_victims_hand() -> None:
    steal = card_of("steal_card")
    state = acting(table(4, current=0, hands={0: (steal,)}))
    events = spec(GAME).given_state(state).when(PlayCard(0, steal, target=1)).events()
    assert events[:2] == (CardPlayed(0, steal, None, 1), StealStarted(seat=0, victim=1))
    state = apply(state, *events)
    request = chance(state)
    assert request is not None and (request.purpose, request.sides) == (ROLL_STEAL, 3)
    taken = state.hands[1][2]
    state = apply(state, steal_roll(3, 3))
    assert taken in state.hands[0] and len(state.hands[1]) == 2


def test_two_own_horses_finishing_on_one_roll_in_the_order_the_player_chooses() -> None:
    # Horse 4 rolled (a 3): seat 0's horses 2 (bar 1,4,7) and 6 (bar 4) both cross.
    state = table(4, current=0, owners={2: 0, 6: 0}, positions={4: 2, 2: 14, 6: 15})
    state = rolled(state, 4, 3)
    legal = legal_commands(state, 0)
    assert MoveHorses(0, (2, 6)) in legal and MoveHorses(0, (6, 2)) in legal
    events = spec(GAME).given_state(state).when(MoveHorses(0, (6, 2))).events()
    assert [e for e in events if isinstance(e, HorseFinished)] == [
        HorseFinished(6, 1),
        HorseFinished(2, 2),
    ]


def test_the_race_ends_the_moment_the_third_horse_crosses() -> None:
    # Horse 4 takes third place; seat 0's horse 2 would also have crossed, but never moves.
    state = table(4, current=0, owners={2: 0}, positions={1: 16, 3: 16, 4: 15, 2: 15})
    state = rolled(replace(state, finished=(1, 3)), 4, 1)
    events = spec(GAME).given_state(state).when(MoveHorses(0, (2,))).events()
    assert isinstance(events[-1], RaceEnded) and events[-1].finish == (1, 3, 4)
    assert HorseMoved(2, 1, 16) not in events
    end = apply(state, *events)
    assert end.phase is Phase.FINISHED and end.hands == ((),) * 4
    assert len(end.deck) + len(end.discard) == 104
    assert legal_commands(end, 0) == () and chance(end) is None
    assert GAME.outcome(end).finished


def test_ties_for_most_money_share_the_win() -> None:
    state = table(3, current=0, positions={1: 16, 2: 16, 3: 15}, money={0: 40, 1: 40, 2: 10})
    state = rolled(replace(state, finished=(1, 2)), 3, 1)
    end = apply(state, *spec(GAME).given_state(state).when(MoveHorses(0, ())).events())
    assert GAME.outcome(end).ranking == ((0, 1), (2,))


def test_a_view_shows_only_its_own_hand_and_no_deck_order() -> None:
    state = acting(table(4, current=0))
    mine = view(state, 1)
    assert [c.card for c in mine.hand] == list(state.hands[1])
    assert mine.hand_sizes == (3, 3, 3, 3) and mine.deck_size == len(state.deck)
    assert view(state, None).hand == ()
    names = {f.name for f in fields(mine)}
    assert "deck" not in names and "hands" not in names


def test_no_event_names_a_card_going_into_a_hand() -> None:
    state = rolled(table(4, current=0), 3, 0)
    for event in spec(GAME).given_state(state).when(MoveHorses(0, ())).events():
        assert not hasattr(event, "card")


def test_a_zero_on_your_own_horse_or_an_owner_without_cards_takes_nothing() -> None:
    own = rolled(table(4, current=0, owners={3: 0}), 3, 0)
    spec(GAME).given_state(own).when(MoveHorses(0, ())).then(
        ZeroRolled(seat=0, horse=3, victim=None), RollResolved(seat=0)
    )
    empty = rolled(table(4, current=0, owners={3: 2}, hands={2: ()}), 3, 0)
    after = (
        spec(GAME)
        .given_state(empty)
        .when(MoveHorses(0, ()))
        .then(ZeroRolled(seat=0, horse=3, victim=None), RollResolved(seat=0))
    )
    assert chance(after) is None and after.phase is Phase.ACTING
