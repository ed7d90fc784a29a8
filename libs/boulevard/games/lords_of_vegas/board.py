"""The printed numbers of Lords of Vegas, loaded once from `board.json` (package data).

Nothing here is a rule; it is the board: 48 lots with their block, position, build cost,
printed die, setup money, Strip flag, card colour and neighbours, plus the scoring track and
the component limits. Code refers to lots by index (0..47, board order) for speed and by id
("A1") at every boundary (commands, events, rendering).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any


@dataclass(frozen=True, slots=True)
class Lot:
    index: int
    id: str
    block: str
    row: int
    col: int
    build_cost: int
    die: int
    setup_money: int
    borders_strip: bool
    card_colour: str  # a casino colour, or "strip"
    neighbours: tuple[int, ...]


def _load() -> dict[str, Any]:
    raw = resources.files(__package__).joinpath("board.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(raw)
    return data


_DATA = _load()

LOT_IDS: tuple[str, ...] = tuple(entry["id"] for entry in _DATA["lots"])
LOT_INDEX: dict[str, int] = {lot_id: i for i, lot_id in enumerate(LOT_IDS)}
LOTS: tuple[Lot, ...] = tuple(
    Lot(
        index=i,
        id=entry["id"],
        block=entry["block"],
        row=entry["row"],
        col=entry["col"],
        build_cost=entry["build_cost"],
        die=entry["die"],
        setup_money=entry["setup_money"],
        borders_strip=entry["borders_strip"],
        card_colour=entry["card_colour"],
        neighbours=tuple(LOT_INDEX[n] for n in entry["neighbours"]),
    )
    for i, entry in enumerate(_DATA["lots"])
)
BLOCKS: tuple[str, ...] = tuple(sorted({lot.block for lot in LOTS}))

SCORE_TRACK: tuple[int, ...] = tuple(_DATA["score_track"])
TILES_PER_COLOUR: int = _DATA["tiles_per_colour"]
DICE_PER_PLAYER: int = _DATA["dice_per_player"]
MARKERS_PER_PLAYER: int = _DATA["markers_per_player"]
PLAYER_COLOURS: tuple[str, ...] = tuple(_DATA["player_colours"])
CASINO_COLOURS: tuple[str, ...] = tuple(_DATA["casino_colours"])
REMODEL_COST_PER_TILE: int = _DATA["remodel_cost_per_tile"]
INSTANT_WIN_POINTS: int = _DATA["instant_win_points"]
END_CARD: str = _DATA["end_of_game_card"]
TWO_PLAYER_EXCLUDED_BLOCK: str = _DATA["two_player_excluded_block"]
BET_MAX_PER_TILE: int = _DATA["gamble"]["bet_max_per_tile"]
GAMBLE_WIN_1X: frozenset[int] = frozenset(_DATA["gamble"]["win_1x"])
GAMBLE_WIN_2X: frozenset[int] = frozenset(_DATA["gamble"]["win_2x"])
GAMBLE_LOSE: frozenset[int] = frozenset(_DATA["gamble"]["lose"])


def lot(lot_id: str) -> Lot:
    return LOTS[LOT_INDEX[lot_id]]


def advance_on_track(position: int, points: int) -> int:
    """Record `points` from track value `position`: move space by space while the points
    left cover the gap to the next space; what cannot reach the next space is lost."""
    i = SCORE_TRACK.index(position)
    while i + 1 < len(SCORE_TRACK) and points >= SCORE_TRACK[i + 1] - SCORE_TRACK[i]:
        points -= SCORE_TRACK[i + 1] - SCORE_TRACK[i]
        i += 1
    return SCORE_TRACK[i]
