"""Long Shot rules version 2: a 0 re-rolled on the move die moves nothing and takes nothing.

The rulebook (../shared/seeds/long_shot.es.txt, "Rollo de dados"): "Si se saca una "O" en
el dado de movimiento (solo durante la tirada inicial del dado), el caballo que sale sobre
el dado de caballo no avanza. En cambio, el jugador que acaba de tirar los dados puede
robar una carta al azar del propietario…". The steal (or the draw, for the bank's horse)
belongs to the 0 of the opening roll only. Version 1 let a re-rolled 0 steal too; its games
keep that to their end (EARLIER_RULES), games created since get version 2."""

from __future__ import annotations

from boulevard.games.long_shot import EARLIER_RULES, GAME
from boulevard.games.long_shot.rules import chance
from boulevard.games.long_shot.types import Die, MoveHorses, Reroll, RollResolved, ZeroRolled
from boulevard.games.testing import spec
from boulevard.games.versions import newest, rules_for
from tests.unit.games.long_shot.support import apply, card_of, horse_roll, move_roll, table

V1 = EARLIER_RULES[1]


def rerolled_to_zero(horse: int = 3) -> object:
    """Seat 0 rolled horse 3 and a 1, re-rolled the move die, and it shows 0; horse 3 is
    seat 1's, who holds three cards."""
    cards = (card_of("money_5"), card_of("steal_card"), card_of("move_f1"))
    state = apply(table(4, current=0, owners={horse: 1}, hands={1: cards}), horse_roll(horse))
    state = apply(state, move_roll(1))
    state = apply(state, *spec(GAME).given_state(state).when(Reroll(0, Die.MOVE)).events())
    return apply(state, move_roll(0))


def test_a_re_rolled_zero_takes_nothing_under_version_2() -> None:
    state = rerolled_to_zero()
    after = (
        spec(GAME)
        .given_state(state)
        .when(MoveHorses(0, ()))
        .then(ZeroRolled(seat=0, horse=3, victim=None), RollResolved(seat=0))
    )
    assert chance(after) is None  # no steal to draw
    assert set(after.positions) == {0}  # and nothing moved


def test_a_re_rolled_zero_steals_under_version_1() -> None:
    state = rerolled_to_zero()
    spec(V1).given_state(state).when(MoveHorses(0, ())).then(
        ZeroRolled(seat=0, horse=3, victim=1), RollResolved(seat=0)
    )


def test_the_opening_rolls_zero_still_steals_and_keeping_it_through_a_horse_re_roll_too() -> None:
    cards = (card_of("money_5"),)
    state = apply(table(4, current=0, owners={3: 1, 4: 2}, hands={1: cards, 2: cards}))
    state = apply(state, horse_roll(3), move_roll(0))
    spec(GAME).given_state(state).when(MoveHorses(0, ())).then(
        ZeroRolled(seat=0, horse=3, victim=1), RollResolved(seat=0)
    )
    # Re-rolling the horse die keeps the opening roll's 0: it steals from the new horse's owner.
    state = apply(state, *spec(GAME).given_state(state).when(Reroll(0, Die.HORSE)).events())
    state = apply(state, horse_roll(4))
    spec(GAME).given_state(state).when(MoveHorses(0, ())).then(
        ZeroRolled(seat=0, horse=4, victim=2), RollResolved(seat=0)
    )


def test_new_games_get_version_2_and_games_from_before_pinning_version_1() -> None:
    assert newest("long_shot").number == 2 and newest("long_shot").definition is GAME
    assert rules_for("long_shot", "").definition is V1
