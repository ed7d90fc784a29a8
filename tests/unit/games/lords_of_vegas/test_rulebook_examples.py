"""Every worked example of the rulebook, as given/when/then."""

from __future__ import annotations

from boulevard.games.base import ChanceKind, ChanceRequest, ChanceResolved, Transfer, seat_account
from boulevard.games.lords_of_vegas.board import LOT_INDEX, advance_on_track
from boulevard.games.lords_of_vegas.rules import boss_of, casino_at
from boulevard.games.lords_of_vegas.types import (
    AssignReorganizedDice,
    BuildCasino,
    CardDrawn,
    CasinoBuilt,
    CasinoPaid,
    CasinoRemodelled,
    CasinoReorganized,
    CasinoSprawled,
    Colour,
    DecideLayOff,
    DrawCard,
    Gamble,
    GambleOffered,
    GambleSettled,
    LayOffDecided,
    Phase,
    RemodelCasino,
    ReorganizeCasino,
    ReorganizedDiceAssigned,
    SettleGamble,
    Space,
    SprawlCasino,
    State,
    Takeover,
)
from boulevard.games.testing import spec

from .support import (
    BLUE,
    GAME,
    GREEN,
    RED,
    YELLOW,
    marker,
    paid,
    pay,
    position,
    space,
    tile,
)


def test_yellow_draws_d8_owned_lots_and_gold_casinos_pay() -> None:
    before = position(
        {
            "E4": marker(GREEN),
            "C1": tile(Colour.GOLD, GREEN, 4),
            "C2": tile(Colour.GOLD, BLUE, 2),
            "C4": tile(Colour.GOLD, GREEN, 2),
            "F9": tile(Colour.GOLD, YELLOW, 6),
            "D2": tile(Colour.BROWN, RED, 3),
            "E2": tile(Colour.PURPLE, RED, 2),
        },
        current=YELLOW,
        phase=Phase.DRAW,
        deck=("D8", "A1"),
    )
    after = (
        spec(GAME)
        .given_state(before)
        .when(DrawCard(YELLOW))
        .then(
            CardDrawn(
                seat=YELLOW,
                card="D8",
                pays="gold",
                takeover=Takeover.MARKER_PLACED,
                payouts=(
                    CasinoPaid(("C1", "C2", "C4"), Colour.GOLD, GREEN, points=3, money=8),
                    CasinoPaid(("F9",), Colour.GOLD, YELLOW, points=1, money=6),
                ),
                points=(0, 3, 0, 1),
                transfers=(
                    paid(GREEN, 1, "owned lots"),
                    paid(YELLOW, 1, "owned lots"),
                    paid(BLUE, 2, "casinos pay (gold)"),
                    paid(GREEN, 6, "casinos pay (gold)"),
                    paid(YELLOW, 6, "casinos pay (gold)"),
                ),
            )
        )
    )
    assert space(after, "D8") == marker(YELLOW)
    assert after.cash == (52, 57, 50, 57)
    assert after.phase is Phase.PLAY
    assert after.discards == ("D8",)


def test_strip_card_pays_casinos_touching_the_strip() -> None:
    # The 1-tile brown and the 3-tile gold casino touch The Strip; purple and a gold don't.
    before = position(
        {
            "C3": tile(Colour.BROWN, RED, 2),
            "C5": tile(Colour.PURPLE, RED, 1),
            "B1": tile(Colour.GOLD, GREEN, 4),
            "B2": tile(Colour.GOLD, GREEN, 2),
            "B3": tile(Colour.GOLD, BLUE, 1),
            "E1": tile(Colour.GOLD, BLUE, 3),
        },
        current=RED,
        phase=Phase.DRAW,
        deck=("A6",),
    )
    events = spec(GAME).given_state(before).when(DrawCard(RED)).events()
    (drawn,) = events
    assert isinstance(drawn, CardDrawn)
    assert drawn.pays == "strip"
    assert [p.lots for p in drawn.payouts] == [("B1", "B2", "B3"), ("C3",)]


def test_red_builds_gold_on_a2_for_6_with_a_die_showing_2() -> None:
    before = position({"A2": marker(RED)}, current=RED)
    after = (
        spec(GAME)
        .given_state(before)
        .when(BuildCasino(RED, "A2", Colour.GOLD))
        .then(CasinoBuilt(RED, "A2", Colour.GOLD, 2, None, (pay(RED, 6, "build A2"),)))
    )
    assert space(after, "A2") == tile(Colour.GOLD, RED, 2)
    assert after.cash[RED] == 44


def test_red_sprawls_from_a2_into_a5_for_18_but_not_into_yellows_a3() -> None:
    before = position({"A2": tile(Colour.GOLD, RED, 2), "A3": marker(YELLOW)}, current=RED)
    spec(GAME).given_state(before).when(SprawlCasino(RED, "A5", Colour.GOLD)).then(
        CasinoSprawled(RED, "A5", Colour.GOLD, 3, None, (pay(RED, 18, "sprawl A5"),))
    )
    spec(GAME).given_state(before).when(SprawlCasino(RED, "A3", Colour.GOLD)).then_raises(
        "lot_not_free"
    )
    # The new tile must be the sprawling casino's colour.
    spec(GAME).given_state(before).when(SprawlCasino(RED, "A5", Colour.BROWN)).then_raises(
        "not_adjacent"
    )


def _remodel_position() -> State:
    return position(
        {
            "A2": tile(Colour.GOLD, RED, 2),
            "A5": tile(Colour.GOLD, RED, 3),
            "A3": tile(Colour.BROWN, YELLOW, 5),
        },
        current=RED,
    )


def test_remodel_to_brown_for_10_merges_and_yellow_takes_over() -> None:
    after = (
        spec(GAME)
        .given_state(_remodel_position())
        .when(RemodelCasino(RED, "A2", Colour.BROWN))
        .then(
            CasinoRemodelled(
                RED,
                ("A2", "A5"),
                Colour.GOLD,
                Colour.BROWN,
                (pay(RED, 10, "remodel A2 to brown"),),
            )
        )
    )
    merged = casino_at(after.spaces, LOT_INDEX["A2"])
    assert merged.lots == (LOT_INDEX["A2"], LOT_INDEX["A3"], LOT_INDEX["A5"])
    assert boss_of(after.spaces, merged) == YELLOW


def test_reorganize_the_merged_casino_for_10_and_red_becomes_boss() -> None:
    merged = (
        spec(GAME)
        .given_state(_remodel_position())
        .when(RemodelCasino(RED, "A2", Colour.BROWN))
        .then(
            CasinoRemodelled(
                RED, ("A2", "A5"), Colour.GOLD, Colour.BROWN, (pay(RED, 10, "remodel A2 to brown"),)
            )
        )
    )
    paid_for = (
        spec(GAME)
        .given_state(merged)
        .when(ReorganizeCasino(RED, "A3"))
        .then(CasinoReorganized(RED, ("A2", "A3", "A5"), (pay(RED, 10, "reorganize A3"),)))
    )
    assert GAME.chance(paid_for) == ChanceRequest("reorganize", ChanceKind.ROLL, 3)
    # Red rolls a 5 and a 1, Yellow a 4: Red chooses where his two values go.
    rolled = GAME.evolve(paid_for, ChanceResolved("reorganize", ChanceKind.ROLL, (1, 4, 5)))
    assert GAME.legal_commands(rolled, RED)
    placed = (
        spec(GAME)
        .given_state(rolled)
        .when(AssignReorganizedDice(RED, (("A2", 1), ("A5", 5))))
        .then(ReorganizedDiceAssigned(RED, (("A2", 1), ("A5", 5))))
    )
    assert space(placed, "A5").die == 5 and space(placed, "A3").die == 4
    assert boss_of(placed.spaces, casino_at(placed.spaces, LOT_INDEX["A3"])) == RED
    assert placed.cash[RED] == 30
    # Had it gone badly, he could not reorganize the same casino again this turn.
    spec(GAME).given_state(placed).when(ReorganizeCasino(RED, "A2")).then_raises(
        "already_reorganized"
    )


def test_scoring_track_breaks_from_8() -> None:
    assert advance_on_track(8, 1) == 8
    assert advance_on_track(8, 2) == 10
    assert advance_on_track(8, 3) == 10
    assert advance_on_track(8, 4) == 12
    assert advance_on_track(8, 5) == 12


def _gold_bosses(*lots: tuple[str, ...]) -> dict[str, Space]:
    return {lot_id: tile(Colour.GOLD, GREEN, 6) for group in lots for lot_id in group}


def test_many_one_tile_casinos_never_carry_the_chip_from_8_to_10() -> None:
    before = position(
        _gold_bosses(("A1",), ("A3",), ("E1",), ("E3",)),
        current=RED,
        phase=Phase.DRAW,
        deck=("D8",),
        points=(0, 8, 0, 0),
    )
    (drawn,) = spec(GAME).given_state(before).when(DrawCard(RED)).events()
    assert isinstance(drawn, CardDrawn)
    assert [p.points for p in drawn.payouts] == [1, 1, 1, 1]
    assert drawn.points[GREEN] == 8


def test_points_are_recorded_smallest_casino_first() -> None:
    # From 7: the 1-tile casino first (7 -> 8), then the 2-tile one (8 -> 10). Largest first
    # would stop at 8.
    before = position(
        _gold_bosses(("A1", "A2"), ("E3",)),
        current=RED,
        phase=Phase.DRAW,
        deck=("D8",),
        points=(0, 7, 0, 0),
    )
    (drawn,) = spec(GAME).given_state(before).when(DrawCard(RED)).events()
    assert isinstance(drawn, CardDrawn)
    assert drawn.points[GREEN] == 10


def test_remodel_ties_green_and_red_the_5s_reroll_to_3s_and_green_is_boss() -> None:
    before = position(
        {
            "C1": tile(Colour.GOLD, GREEN, 4),
            "C2": tile(Colour.GOLD, GREEN, 5),
            "C4": tile(Colour.BROWN, RED, 5),
            "C7": tile(Colour.BROWN, RED, 2),
            "C10": tile(Colour.BROWN, YELLOW, 2),
        },
        current=GREEN,
    )
    remodelled = (
        spec(GAME)
        .given_state(before)
        .when(RemodelCasino(GREEN, "C1", Colour.BROWN))
        .then(
            CasinoRemodelled(
                GREEN,
                ("C1", "C2"),
                Colour.GOLD,
                Colour.BROWN,
                (pay(GREEN, 10, "remodel C1 to brown"),),
            )
        )
    )
    assert GAME.chance(remodelled) == ChanceRequest("tie_reroll", ChanceKind.ROLL, 2)
    rerolled = GAME.evolve(remodelled, ChanceResolved("tie_reroll", ChanceKind.ROLL, (3, 3)))
    assert GAME.chance(rerolled) is None
    assert space(rerolled, "C2").die == 3 and space(rerolled, "C4").die == 3
    casino = casino_at(rerolled.spaces, LOT_INDEX["C1"])
    assert casino.size == 5
    assert boss_of(rerolled.spaces, casino) == GREEN


def test_yellow_bets_4_at_reds_3_tile_casino_rolls_3_and_wins_4() -> None:
    before = position(
        {
            "D1": tile(Colour.SILVER, RED, 6),
            "D2": tile(Colour.SILVER, RED, 3),
            "D3": tile(Colour.SILVER, BLUE, 1),
        },
        current=YELLOW,
    )
    spec(GAME).given_state(before).when(Gamble(YELLOW, "D2", 16)).then_raises("bad_bet")
    spec(GAME).given_state(before).when(Gamble(YELLOW, "D2", 15)).then(
        GambleOffered(YELLOW, RED, "D2", 15)
    )
    offered = (
        spec(GAME)
        .given_state(before)
        .when(Gamble(YELLOW, "D2", 4))
        .then(GambleOffered(YELLOW, RED, "D2", 4))
    )
    assert GAME.chance(offered) is None  # the boss decides the lay-off before the roll
    decided = (
        spec(GAME)
        .given_state(offered)
        .when(DecideLayOff(RED, False))
        .then(LayOffDecided(RED, False))
    )
    assert GAME.chance(decided) == ChanceRequest("gamble", ChanceKind.ROLL, 2)
    rolled = GAME.evolve(decided, ChanceResolved("gamble", ChanceKind.ROLL, (1, 2)))
    settled = (
        spec(GAME)
        .given_state(rolled)
        .when(SettleGamble(YELLOW))
        .then(
            GambleSettled(
                YELLOW,
                RED,
                3,
                4,
                False,
                (Transfer(seat_account(RED), seat_account(YELLOW), 4, "gamble rolled 3"),),
            )
        )
    )
    assert settled.cash[YELLOW] == 54 and settled.cash[RED] == 46
