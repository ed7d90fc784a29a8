"""The data file: the counts the sources give, stand-ins marked as such, and proof that a
printed figure replaces a stand-in by editing data only."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from boulevard.games.base import GameConfig, RulesError
from boulevard.games.vegas_showdown import GAME, data, rules
from boulevard.games.vegas_showdown.data import DATA, parse, read_text
from boulevard.games.vegas_showdown.types import Placement, Publicity, PublicityTaken
from tests.unit.games.vegas_showdown.support import run, started, table, tile, with_seat

# ../shared beside the checkout (the lead's tree and the worktrees sit at different depths)
SHARED = next(
    (
        p / "shared" / "game-data" / "vegas_showdown.json"
        for p in Path(__file__).resolve().parents
        if (p / "shared" / "game-data" / "vegas_showdown.json").exists()
    ),
    Path("/nonexistent"),
)


def test_tile_counts_match_the_component_list() -> None:
    sizes: Counter[str] = Counter()
    for kind in DATA.kinds.values():
        sizes[kind.size] += kind.count
    assert sizes == {"small": 26, "medium": 20, "large": 17}
    assert len(DATA.tile_kind) == 63
    premier = Counter(k.size for k in DATA.kinds.values() for _ in range(k.count) if k.premier)
    assert premier == {"small": 10, "medium": 10, "large": 10}
    assert len(DATA.events) == 33
    assert Counter(e.stack for e in DATA.events) == {"small": 11, "medium": 11, "large": 11}


def test_sourced_values_agree_with_the_shared_game_data() -> None:
    if not SHARED.exists():
        pytest.skip("the shared game data is not next to this tree")
    shared = {t["name"]: t for t in json.loads(SHARED.read_text(encoding="utf-8"))["tiles"]}
    for kind in DATA.kinds.values():
        source = shared[kind.name]
        for field in ("population", "revenue", "fame"):
            if field not in kind.stand_in and source[field] is not None:
                assert getattr(kind, field) == source[field], (kind.name, field)
        if "count" not in kind.stand_in and source["count"] is not None:
            assert kind.count == source["count"], kind.name
        bid = source.get("start_bid", source.get("min_bid"))
        if "bid" not in kind.stand_in:
            assert kind.bid == bid, kind.name


def test_every_unknown_figure_is_marked_as_a_stand_in() -> None:
    raw = json.loads(read_text())
    tiles = {t["key"]: t for t in raw["tiles"]}
    # the tiles whose stats no source gives carry their stats as stand-ins
    for key in ("sports_book", "space_age_sports_book", "five_star_steakhouse"):
        assert {"bid", "revenue", "fame", "doors"} <= set(tiles[key]["stand_in"])
    assert "doors" in tiles["slots"]["stand_in"]  # door positions are never sourced
    assert "STAND-IN" in raw["premier_track"]["stand_in"]
    assert "STAND-IN" in raw["events_stand_in"]
    assert all("STAND-IN" in s["stand_in"] for s in raw["sheet"]["layouts"].values())
    assert "STAND-IN" in raw["scoring"]["ties"]


def test_swapping_a_stand_in_tiles_stats_in_a_copied_data_file_changes_the_game(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = json.loads(read_text())
    for t in raw["tiles"]:
        if t["key"] == "sports_book":
            assert "revenue" in t["stand_in"]
            t["revenue"] = 7  # the "printed" figure arrives
            t["fame"] = 3
    copy = tmp_path / "vegas_showdown.json"
    copy.write_text(json.dumps(raw), encoding="utf-8")
    printed = parse(json.loads(copy.read_text(encoding="utf-8")))
    monkeypatch.setattr(data, "DATA", printed)

    book = Placement(tile("sports_book"), 0, 1, 0)  # its west door (stand-in) at (0, 2)
    state = with_seat(started(table(3)), 0, aside=(book.tile,))
    state = run(state, Publicity(0, book))
    assert rules.revenue(state.seats[0]) == 5 + 7
    assert state.seats[0].fame == 1 + 3
    assert rules.income(state.seats[0]) == 8  # now capped by Population 8

    monkeypatch.setattr(data, "DATA", DATA)  # the shipped stand-in: revenue 2
    assert rules.revenue(state.seats[0]) == 5 + 2


def test_the_disputed_7x5_sheet_is_a_setting() -> None:
    assert (DATA.sheets["8x5"].cols, DATA.sheets["7x5"].cols) == (8, 7)
    state = table(3, sheet="7x5")
    assert state.sheet == "7x5"
    state = with_seat(started(state), 0, aside=(tile("lounge"),))
    lounge = Placement(tile("lounge"), 5, 2, 0)  # meets the hotel entrance at (6, 2) east
    assert GAME.decide(Publicity(0, lounge), state) == (PublicityTaken(0, 1, lounge),)
    with pytest.raises(RulesError) as err:
        GAME.new_game(GameConfig(3, (("sheet", "9x9"),)))
    assert err.value.code == "bad_option"
    with pytest.raises(RulesError) as err:
        GAME.new_game(GameConfig(2))
    assert err.value.code == "bad_player_count"
