"""Every example of the rulebook (seed las_vegas.es.txt), one test each.

Seats: Anna 0, Benno 1, Carla 2, Denny 3. The seed names casinos ("Mirage", "Caesars
Palace", "Golden Nugget") without their numbers, so each example uses one casino number;
the rule does not depend on it.
"""

from __future__ import annotations

from boulevard.games.base import BANK, seat_account
from boulevard.games.las_vegas import GAME
from boulevard.games.las_vegas.data import NOTE_VALUES
from boulevard.games.las_vegas.types import DicePlaced, PlaceDice, Roll
from boulevard.games.testing import spec
from tests.unit.games.las_vegas.builders import At, K, payout, rolled, table

ANNA, BENNO, CARLA, DENNY = 0, 1, 2, 3


def values(notes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(NOTE_VALUES[n] for n in notes)


def won(paid: object) -> list[tuple[int, int]]:
    return [(a.seat, a.value) for a in paid.awards]  # type: ignore[attr-defined]


def test_benno_places_all_four_threes_then_rolls_his_last_die() -> None:
    # Mid-round Benno has 5 dice and rolls four 3s and a 5.
    t = table(dice_left=(0, 5, 0, 0), current=BENNO)
    given = spec(GAME).given_state(t.state).given(rolled(3, 3, 3, 3, 5))
    assert GAME.legal_commands(given.state, BENNO) == (PlaceDice(BENNO, 3), PlaceDice(BENNO, 5))
    after = given.when(PlaceDice(BENNO, 3)).then(DicePlaced(BENNO, 3, own=4, white=0))
    # No command can place only some of the 3s; next turn he rolls his one remaining die.
    assert after.casinos[2].dice == (0, 4, 0, 0)
    assert GAME.chance(after) is not None and GAME.chance(after).count == 1  # type: ignore[union-attr]
    after_last = spec(GAME).given_state(after).given(rolled(6)).when(PlaceDice(BENNO, 6))
    assert after_last.events()[0] == DicePlaced(BENNO, 6, own=1, white=0)


def test_caesars_palace_tie_cancels_benno_and_carla_anna_and_denny_paid() -> None:
    # Anna 5, Benno 3, Carla 3, Denny 1 (his last die, placed now); notes 80k, 30k, 10k.
    t = table(
        casinos={4: At(notes=(80 * K, 30 * K, 10 * K), dice=(5, 3, 3, 0))},
        dice_left=(0, 0, 0, 1),
        current=DENNY,
        roll=Roll((4,), ()),
    )
    events = spec(GAME).given_state(t.state).when(PlaceDice(DENNY, 4)).events()
    paid = payout(events, 4)
    assert paid.cancelled == (BENNO, CARLA)
    # Payout example 1: Anna takes the $80,000, Denny the $30,000, the $10,000 goes under.
    assert won(paid) == [(ANNA, 80 * K), (DENNY, 30 * K)]
    assert values(paid.to_stack) == (10 * K,)
    assert [(tr.source, tr.target, tr.amount) for tr in paid.transfers] == [
        (BANK, seat_account(ANNA), 80 * K),
        (BANK, seat_account(DENNY), 30 * K),
    ]


def test_golden_nugget_everyone_tied_everyone_takes_dice_back() -> None:
    # Anna 2, Carla 2, Benno 1, Denny 1: both pairs cancel, nobody is paid.
    t = table(
        casinos={2: At(notes=(60 * K,), dice=(2, 1, 2, 0))},
        dice_left=(0, 0, 0, 1),
        current=DENNY,
        roll=Roll((2,), ()),
    )
    paid = payout(spec(GAME).given_state(t.state).when(PlaceDice(DENNY, 2)).events(), 2)
    assert paid.cancelled == (ANNA, BENNO, CARLA, DENNY)
    assert paid.awards == () and paid.transfers == ()
    assert values(paid.to_stack) == (60 * K,)


def test_payout_example_2_benno_takes_one_of_two_40k_notes_other_goes_under() -> None:
    t = table(
        casinos={5: At(notes=(40 * K, 40 * K), dice=(1, 2, 0, 0))},
        dice_left=(0, 0, 1, 0),
        current=CARLA,
        roll=Roll((5,), ()),
    )
    paid = payout(spec(GAME).given_state(t.state).when(PlaceDice(CARLA, 5)).events(), 5)
    # Anna and Carla tie on 1 die each; Benno alone remains.
    assert paid.cancelled == (ANNA, CARLA)
    assert won(paid) == [(BENNO, 40 * K)]
    assert values(paid.to_stack) == (40 * K,)
    assert paid.to_stack[0] not in {a.note for a in paid.awards}


def test_payout_example_3_carla_70k_benno_20k_denny_nothing() -> None:
    t = table(
        casinos={6: At(notes=(70 * K, 20 * K), dice=(0, 2, 3, 0))},
        dice_left=(0, 0, 0, 1),
        current=DENNY,
        roll=Roll((6,), ()),
    )
    events = spec(GAME).given_state(t.state).when(PlaceDice(DENNY, 6)).events()
    paid = payout(events, 6)
    assert paid.cancelled == ()
    assert won(paid) == [(CARLA, 70 * K), (BENNO, 20 * K)]
    assert paid.to_stack == ()
    after = spec(GAME).given_state(t.state).given(*events).state
    assert GAME.money(after) == {ANNA: 0, BENNO: 20 * K, CARLA: 70 * K, DENNY: 0}


def test_carla_rolls_with_white_dice_and_may_place_the_three_ones_her_5_or_the_white_6() -> None:
    # 4 players, white variant: Carla has 3 dice of her colour and 2 white dice left.
    t = table(white_dice=True, dice_left=(0, 0, 3, 0), white_left=(0, 0, 2, 0), current=CARLA)
    given = spec(GAME).given_state(t.state).given(rolled(1, 1, 5, white=(1, 6)))
    assert [c.number for c in GAME.legal_commands(given.state, CARLA)] == [1, 5, 6]
    given.when(PlaceDice(CARLA, 1)).then(DicePlaced(CARLA, 1, own=2, white=1))
    given.when(PlaceDice(CARLA, 5)).then(DicePlaced(CARLA, 5, own=1, white=0))
    given.when(PlaceDice(CARLA, 6)).then(DicePlaced(CARLA, 6, own=0, white=1))


def test_white_player_takes_the_80k_note_which_goes_under_the_stack_benno_gets_30k() -> None:
    # White 3, Anna 2, Carla 2 (tied, cancelled), Benno 1 (his last die, placed now).
    t = table(
        white_dice=True,
        casinos={4: At(notes=(80 * K, 30 * K, 10 * K), dice=(2, 0, 2, 0), white=3)},
        dice_left=(0, 1, 0, 0),
        white_left=(0, 0, 0, 0),
        current=BENNO,
        roll=Roll((4,), ()),
    )
    events = spec(GAME).given_state(t.state).when(PlaceDice(BENNO, 4)).events()
    paid = payout(events, 4)
    assert paid.cancelled == (ANNA, CARLA) and not paid.white_cancelled
    assert values(paid.white_notes) == (80 * K,)
    assert won(paid) == [(BENNO, 30 * K)]
    # The white player's note gets no transfer: it goes under the stack with the leftover.
    assert [tr.amount for tr in paid.transfers] == [30 * K]
    assert values(paid.to_stack) == (80 * K, 10 * K)
    after = spec(GAME).given_state(t.state).given(*events).state
    assert GAME.money(after)[BENNO] == 30 * K
    assert sum(GAME.money(after).values()) == 30 * K


def test_white_example_2_carla_70k_white_40k_anna_nothing() -> None:
    t = table(
        white_dice=True,
        casinos={1: At(notes=(70 * K, 40 * K), dice=(1, 0, 4, 0), white=3)},
        dice_left=(0, 0, 0, 0),
        white_left=(1, 0, 0, 0),
        current=ANNA,
        roll=Roll((), (2,)),
    )
    # Anna's last die is white; she places it on casino 2, not on casino 1.
    paid = payout(spec(GAME).given_state(t.state).when(PlaceDice(ANNA, 2)).events(), 1)
    assert won(paid) == [(CARLA, 70 * K)]
    assert values(paid.white_notes) == (40 * K,)
    assert values(paid.to_stack) == (40 * K,)
