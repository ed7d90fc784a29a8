"""The printed numbers of Vegas Showdown (and the marked stand-ins), read once from the
package's data file `vegas_showdown.json`.

Everything the rules need that a printed tile, track, sheet or card would say comes from
here, including every tile's shape in its four rotations, so that replacing a stand-in is
an edit of the JSON only. The rules read `DATA` at call time (never copy it into constants),
which is what lets a test swap in a modified copy of the file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any

SIZES = ("small", "medium", "large")
BASIC_KINDS = ("slots", "lounge", "restaurant")
SIDES = ("N", "E", "S", "W")
STEP = {"N": (0, -1), "E": (1, 0), "S": (0, 1), "W": (-1, 0)}
OPPOSITE = {"N": "S", "E": "W", "S": "N", "W": "E"}
CORNERS = ("NW", "NE", "SE", "SW")
Cell = tuple[int, int]
Door = tuple[int, int, str]  # (dx, dy, side) from the anchor cell


@dataclass(frozen=True, slots=True)
class Shape:
    """A tile kind in one rotation: the cells it covers and where its doors and red corners
    are, all relative to its top-left cell; corners are grid points (0..w, 0..h)."""

    width: int
    height: int
    cells: tuple[Cell, ...]
    doors: frozenset[Door]
    red_points: tuple[Cell, ...]


@dataclass(frozen=True, slots=True)
class TileKind:
    key: str
    name: str
    size: str
    kind: str  # basic, fancy, top, branch, gaming
    colour: str  # yellow (casino), blue (hotel), green (either)
    bid: int  # basic: the yellow minimum; premier: the circled start price
    population: int
    revenue: int
    fame: int
    count: int
    back: str | None  # premier tiles: "A" or "B"
    prereq: tuple[str, ...]
    shapes: tuple[Shape, ...]  # by rotation 0..3
    stand_in: tuple[str, ...]  # the fields that are stand-ins

    @property
    def premier(self) -> bool:
        return self.kind != "basic"

    @property
    def area(self) -> int:
        """Cells covered."""
        return len(self.shapes[0].cells)


@dataclass(frozen=True, slots=True)
class EventCard:
    key: str
    name: str
    effect: str
    family: str | None
    amount: int
    stack: str  # the premier stack its centre symbol names


@dataclass(frozen=True, slots=True)
class BasicTrack:
    track: str
    tile: str
    values: tuple[int, ...]
    players: int  # the smallest table that uses it


@dataclass(frozen=True, slots=True)
class SheetLayout:
    cols: int
    rows: int
    casino_cols: frozenset[int]
    hotel_cols: frozenset[int]
    casino_entrance: tuple[int, int, str]  # the cell and its outer side
    hotel_entrance: tuple[int, int, str]


@dataclass(frozen=True, slots=True)
class Scoring:
    casino_full: int
    hotel_full: int
    connected: int
    population_rank: tuple[int, ...]
    revenue_rank: tuple[int, ...]
    dollars_per_fame: int
    three_quarter_diamond: int
    full_diamond: int


@dataclass(frozen=True, slots=True)
class VegasShowdownData:
    min_players: int
    max_players: int
    start_population: int
    start_revenue: int
    start_fame: int
    start_money: int
    three_player_removed: int
    kinds: Mapping[str, TileKind]
    tile_kind: tuple[str, ...]  # kind key per tile id
    premier_circles: tuple[int, ...]
    premier_values: tuple[int, ...]  # circles and squares, ascending
    basic_tracks: tuple[BasicTrack, ...]
    premier_spaces: tuple[tuple[str, int], ...]  # (track, smallest table)
    sheets: Mapping[str, SheetLayout]
    default_sheet: str
    events: tuple[EventCard, ...]
    scoring: Scoring

    by_tile: tuple[TileKind, ...]  # the kind of each tile id

    def kind_of(self, tile: int) -> TileKind:
        return self.by_tile[tile]

    def tiles_of(self, key: str) -> tuple[int, ...]:
        return tuple(t for t, k in enumerate(self.tile_kind) if k == key)

    def event(self, key: str) -> EventCard:
        for card in self.events:
            if card.key == key:
                return card
        raise KeyError(key)


def _segment(index: int, width: int, height: int) -> Door:
    """Edge segment `index` (numbered clockwise from the top-left corner) as a door."""
    if index < width:
        return (index, 0, "N")
    index -= width
    if index < height:
        return (width - 1, index, "E")
    index -= height
    if index < width:
        return (width - 1 - index, height - 1, "S")
    index -= width
    if index < height:
        return (0, height - 1 - index, "W")
    raise ValueError(f"a {width}x{height} tile has no edge segment {index + 2 * width + height}")


def _rotate(shape: Shape) -> Shape:
    """The same tile a quarter turn clockwise: (x, y) → (h-1-y, x) for cells, sides and
    corner points turn with it."""
    w, h = shape.width, shape.height
    turn = {"N": "E", "E": "S", "S": "W", "W": "N"}
    return Shape(
        width=h,
        height=w,
        cells=tuple(sorted((h - 1 - y, x) for x, y in shape.cells)),
        doors=frozenset((h - 1 - y, x, turn[side]) for x, y, side in shape.doors),
        red_points=tuple(sorted((h - y, x) for x, y in shape.red_points)),
    )


def _shapes(size: tuple[int, int], doors: list[int], corners: list[str]) -> tuple[Shape, ...]:
    w, h = size
    points = {"NW": (0, 0), "NE": (w, 0), "SE": (w, h), "SW": (0, h)}
    first = Shape(
        width=w,
        height=h,
        cells=tuple(sorted((x, y) for x in range(w) for y in range(h))),
        doors=frozenset(_segment(i, w, h) for i in doors),
        red_points=tuple(sorted(points[c] for c in corners)),
    )
    shapes = [first]
    for _ in range(3):
        shapes.append(_rotate(shapes[-1]))
    return tuple(shapes)


def parse(raw: Mapping[str, Any]) -> VegasShowdownData:
    """Build the data record from the JSON document, checking what it can."""
    sizes = {name: (int(w), int(h)) for name, (w, h) in raw["tile_sizes"].items()}
    kinds: dict[str, TileKind] = {}
    tile_kind: list[str] = []
    for t in raw["tiles"]:
        doors = [int(d) for d in t["doors"]]
        if len(doors) != int(t["door_count"]) or len(set(doors)) != len(doors):
            raise ValueError(f"vegas_showdown.json: {t['name']} has {t['door_count']} doors")
        corners = [str(c) for c in t["red_corners"]]
        if not set(corners) <= set(CORNERS):
            raise ValueError(f"vegas_showdown.json: bad red corners on {t['name']}")
        kind = TileKind(
            key=t["key"],
            name=t["name"],
            size=t["size"],
            kind=t["kind"],
            colour=t["colour"],
            bid=int(t["bid"]),
            population=int(t["population"]),
            revenue=int(t["revenue"]),
            fame=int(t["fame"]),
            count=int(t["count"]),
            back=t["back"],
            prereq=tuple(t["prereq"]),
            shapes=_shapes(sizes[t["size"]], doors, corners),
            stand_in=tuple(t["stand_in"]),
        )
        if kind.colour not in ("yellow", "blue", "green"):
            raise ValueError(f"vegas_showdown.json: {kind.name} has colour {kind.colour!r}")
        kinds[kind.key] = kind
        tile_kind.extend([kind.key] * kind.count)
    for kind in kinds.values():
        if not set(kind.prereq) <= set(kinds):
            raise ValueError(f"vegas_showdown.json: unknown prerequisite of {kind.name}")
    circles = tuple(int(v) for v in raw["premier_track"]["circles"])
    squares = tuple(int(v) for v in raw["premier_track"]["squares"])
    for kind in kinds.values():
        if kind.premier and kind.bid not in circles:
            raise ValueError(f"vegas_showdown.json: {kind.name}'s start bid is not a circle")
    layouts = {}
    for name, s in raw["sheet"]["layouts"].items():
        layouts[name] = SheetLayout(
            cols=int(s["cols"]),
            rows=int(s["rows"]),
            casino_cols=frozenset(int(c) for c in s["casino_cols"]),
            hotel_cols=frozenset(int(c) for c in s["hotel_cols"]),
            casino_entrance=(
                int(s["casino_entrance"][0]),
                int(s["casino_entrance"][1]),
                str(s["casino_entrance"][2]),
            ),
            hotel_entrance=(
                int(s["hotel_entrance"][0]),
                int(s["hotel_entrance"][1]),
                str(s["hotel_entrance"][2]),
            ),
        )
    sc = raw["scoring"]
    start = raw["start"]
    return VegasShowdownData(
        min_players=int(raw["players"]["min"]),
        max_players=int(raw["players"]["max"]),
        start_population=int(start["population"]),
        start_revenue=int(start["revenue"]),
        start_fame=int(start["fame"]),
        start_money=int(start["money"]),
        three_player_removed=int(raw["three_players_remove_from_each_basic_stack"]),
        kinds=MappingProxyType(kinds),
        tile_kind=tuple(tile_kind),
        premier_circles=circles,
        premier_values=tuple(sorted(circles + squares)),
        basic_tracks=tuple(
            BasicTrack(b["track"], b["tile"], tuple(int(v) for v in b["values"]), b["players"])
            for b in raw["basic_tracks"]
        ),
        premier_spaces=tuple((p["space"], int(p["players"])) for p in raw["premier_spaces"]),
        sheets=MappingProxyType(layouts),
        default_sheet=raw["sheet"]["default"],
        events=tuple(
            EventCard(e["key"], e["name"], e["effect"], e["family"], int(e["amount"]), e["stack"])
            for e in raw["events"]
        ),
        by_tile=tuple(kinds[k] for k in tile_kind),
        scoring=Scoring(
            casino_full=int(sc["casino_full"]),
            hotel_full=int(sc["hotel_full"]),
            connected=int(sc["connected"]),
            population_rank=tuple(int(v) for v in sc["population_rank"]),
            revenue_rank=tuple(int(v) for v in sc["revenue_rank"]),
            dollars_per_fame=int(sc["dollars_per_fame"]),
            three_quarter_diamond=int(sc["three_quarter_diamond"]),
            full_diamond=int(sc["full_diamond"]),
        ),
    )


def read_text() -> str:
    package = __name__.rpartition(".")[0]
    return resources.files(package).joinpath("vegas_showdown.json").read_text(encoding="utf-8")


DATA = parse(json.loads(read_text()))
