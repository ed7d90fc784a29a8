"""The data file: sourced numbers as printed, stand-ins marked, and a stand-in replaced by
editing the data alone (the rules read every number through `data.DATA`)."""

from __future__ import annotations

import copy
import random
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from boulevard.games.base import BANK, GameConfig, Transfer
from boulevard.games.long_shot import GAME
from boulevard.games.long_shot import data as long_shot_data
from boulevard.games.long_shot.data import DATA, CardKind, load_raw, parse
from boulevard.games.long_shot.rules import view
from boulevard.games.long_shot.types import FeatureUsed, PassTurn, TurnEnded
from boulevard.games.playout import playout
from boulevard.games.testing import spec
from tests.unit.games.long_shot.support import acting, table


def test_the_sourced_numbers() -> None:
    assert (DATA.min_players, DATA.max_players, DATA.start_money, DATA.start_cards) == (3, 8, 25, 3)
    assert DATA.start_rerolls == 1 and DATA.horse_die_sides == 10
    assert DATA.move_faces == (0, 1, 1, 1, 1, 3)
    assert DATA.purses == (100, 75, 50) and DATA.bet_amount == 5
    assert (DATA.discard_cards, DATA.discard_reward) == (2, 5)
    names = [h.name for h in DATA.horses]
    assert names[0] == "Wonder Bred" and names[3:] == [
        "Slow Jenn",
        "Sure Lee",
        "Six Gun",
        "Last Chance",
        "Eight's Enough",
        "Nine Lives",
        "Hangin' 10",
    ]
    assert DATA.horse(4).place == 6 and DATA.horse(5).show == 4 and 6 in DATA.horse(5).move_bar


def test_the_104_cards_use_every_effect_kind_of_the_closed_set() -> None:
    assert len(DATA.cards) == 104
    kinds = Counter(DATA.card(c).kind for c in range(104))
    assert set(kinds) == set(CardKind)
    assert kinds[CardKind.LUCKY_NUMBA] == 10


def test_stand_ins_are_marked_in_the_file() -> None:
    raw = load_raw()
    assert raw["track"]["stand_in"] is True and raw["cards_stand_in"] is True
    for horse in raw["horses"]:
        assert {"price", "move_bar", "odds", "feature"} <= set(horse["stand_in"])
    assert {h["number"] for h in raw["horses"] if "name" in h["stand_in"]} == {2, 3}


def test_a_data_file_that_miscounts_its_cards_is_refused() -> None:
    raw = load_raw()
    raw["cards"][0]["count"] += 1
    with pytest.raises(ValueError, match="cards_total"):
        parse(raw)


def _replaced(edit: Any) -> Any:
    raw = copy.deepcopy(load_raw())
    edit(raw)
    return parse(raw)


def test_stand_ins_are_replaced_by_editing_the_data_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["track"] = {"length": 9, "no_bets_from": 6}
        horse2 = raw["horses"][1]
        horse2.update(
            name="Rex in Effect", price=21, move_bar=[3], odds={"win": 5, "place": 4, "show": 2}
        )
        raw["horses"][0]["feature"] = {"kind": "money", "amount": 3}
        raw["move_die"]["faces"] = [0, 1, 2, 2, 3, 3]
        raw["cards"][0]["amount"] = 7

    monkeypatch.setattr(long_shot_data, "DATA", _replaced(edit))
    state = acting(table(4, current=0, positions={2: 5}))
    seen = view(state, 0)
    assert (seen.track_length, seen.no_bets_from) == (9, 6)
    assert (seen.horses[1].name, seen.horses[1].price, seen.horses[1].win) == (
        "Rex in Effect",
        21,
        5,
    )
    assert not seen.horses[1].no_bets
    state = replace(state, positions=(0, 6, *state.positions[2:]))
    assert view(state, 0).horses[1].no_bets
    # The new feature pays seat 1 at the start of its turn.
    owned = replace(acting(table(4, current=0)), owners=(1, *(-1,) * 9))
    events = spec(GAME).given_state(owned).when(PassTurn(0)).events()
    assert events[-2:] == (
        TurnEnded(seat=0, next=1),
        FeatureUsed(
            seat=1,
            horse=1,
            amount=3,
            transfers=(Transfer(BANK, "seat:1", 3, "long_shot feature 1"),),
        ),
    )
    # Whole games run on the edited data: the race is 9 spaces long.
    for seed in range(3):
        game = playout(GAME, GameConfig(4), random.Random(seed), GAME.bots["heuristic"])
        assert GAME.outcome(game.state).finished
        assert all(game.state.positions[h - 1] == 9 for h in game.state.finished)


def test_a_lead_feature_pays_only_while_its_horse_leads_and_never_after_a_finish(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["horses"][4]["feature"] = {"kind": "lead_money", "amount": 4}

    monkeypatch.setattr(long_shot_data, "DATA", _replaced(edit))
    leading = acting(table(4, current=3, owners={5: 0}, positions={5: 6, 2: 3}))
    events = spec(GAME).given_state(leading).when(PassTurn(3)).events()
    assert isinstance(events[-1], FeatureUsed) and events[-1].horse == 5
    behind = acting(table(4, current=3, owners={5: 0}, positions={5: 2, 2: 3}))
    assert not isinstance(
        spec(GAME).given_state(behind).when(PassTurn(3)).events()[-1], FeatureUsed
    )
    after_finish = replace(
        acting(table(4, current=3, owners={5: 0}, positions={5: 6, 2: 16})), finished=(2,)
    )
    events = spec(GAME).given_state(after_finish).when(PassTurn(3)).events()
    assert not isinstance(events[-1], FeatureUsed)
