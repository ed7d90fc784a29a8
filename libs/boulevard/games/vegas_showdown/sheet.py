"""The hotel-casino sheet: where tiles may go, what connects to what, and the end-of-game
shapes. Pure geometry over `Placement`s; the printed numbers come from `data.DATA`.

A path runs from tile to tile only where a door of one meets a door of the other on their
shared edge (a door facing a wall is a wall: "sin pasar por ninguna pared"). An entrance is
reached by a tile with a door on that outer edge of the entrance cell.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from boulevard.games.base import RulesError
from boulevard.games.vegas_showdown import data
from boulevard.games.vegas_showdown.data import OPPOSITE, STEP, Cell, SheetLayout, TileKind
from boulevard.games.vegas_showdown.types import Placement

LOUNGES = ("lounge", "fancy_lounge")  # what a Night Club door must meet
NIGHT_CLUB = "night_club"
FANCY_RESTAURANT = "fancy_restaurant"
NOT_NEXT_TO_FANCY_RESTAURANT = "lounge"  # the seed: "no puede ir al lado del salón"

PLACEMENT_CODES = (
    "bad_rotation",
    "off_sheet",
    "overlap",
    "prerequisite",
    "not_connected",
    "night_club_door",
    "fancy_restaurant_next_to_lounge",
)
"""Every code a refused placement can carry, one per placement rule."""


def layout(name: str) -> SheetLayout:
    return data.DATA.sheets[name]


def kind_of(tile: int) -> TileKind:
    return data.DATA.by_tile[tile]


def cells_of(p: Placement) -> list[Cell]:
    shape = kind_of(p.tile).shapes[p.rotation % 4]
    return [(p.col + x, p.row + y) for x, y in shape.cells]


def doors_of(p: Placement) -> list[tuple[Cell, str]]:
    shape = kind_of(p.tile).shapes[p.rotation % 4]
    return [((p.col + x, p.row + y), side) for x, y, side in shape.doors]


@dataclass(frozen=True)
class Board:
    """A sheet analysed once: which tile covers each cell and which doors are where."""

    layout: SheetLayout
    tiles: tuple[Placement, ...]
    owner: dict[Cell, int]
    doors: dict[tuple[Cell, str], int]
    tile_doors: dict[int, list[tuple[Cell, str]]]

    def kinds(self) -> set[str]:
        return {kind_of(p.tile).key for p in self.tiles}

    def door_neighbours(self, placement: Placement) -> set[int]:
        """Tiles a door of `placement` meets door to door."""
        return self._linked(placement.tile, doors_of(placement))

    def _linked(self, tile: int, doors: list[tuple[Cell, str]]) -> set[int]:
        found: set[int] = set()
        for (x, y), side in doors:
            dx, dy = STEP[side]
            other = self.owner.get((x + dx, y + dy))
            facing = self.doors.get(((x + dx, y + dy), OPPOSITE[side]))
            if other is not None and other != tile and facing == other:
                found.add(other)
        return found

    def edge_neighbours(self, placement: Placement) -> set[int]:
        """Tiles sharing an edge with `placement`, doors or not."""
        found: set[int] = set()
        for x, y in cells_of(placement):
            for dx, dy in STEP.values():
                other = self.owner.get((x + dx, y + dy))
                if other is not None and other != placement.tile:
                    found.add(other)
        return found

    def at_entrance(self, placement: Placement, entrance: tuple[int, int, str]) -> bool:
        col, row, side = entrance
        return ((col, row), side) in doors_of(placement)

    def reach(self, entrance: tuple[int, int, str]) -> set[int]:
        """Tiles joined to an entrance by an unbroken path of doors."""
        col, row, side = entrance
        first = self.doors.get(((col, row), side))
        frontier = [] if first is None else [first]
        seen = set(frontier)
        while frontier:
            tile = frontier.pop()
            for other in self._linked(tile, self.tile_doors[tile]):
                if other not in seen:
                    seen.add(other)
                    frontier.append(other)
        return seen


def board(sheet_layout: SheetLayout, tiles: Iterable[Placement]) -> Board:
    """Analyse a sheet (assumed on the grid and without overlaps; see `sheet_problem`)."""
    placed = tuple(tiles)
    owner: dict[Cell, int] = {}
    doors: dict[tuple[Cell, str], int] = {}
    tile_doors: dict[int, list[tuple[Cell, str]]] = {}
    for p in placed:
        for cell in cells_of(p):
            owner[cell] = p.tile
        tile_doors[p.tile] = doors_of(p)
        for door in tile_doors[p.tile]:
            doors[door] = p.tile
    return Board(sheet_layout, placed, owner, doors, tile_doors)


def _fail(code: str, message: str) -> RulesError:
    return RulesError(code, message)


def _fits(b: Board, p: Placement) -> RulesError | None:
    name = kind_of(p.tile).name
    if not 0 <= p.rotation <= 3:
        return _fail("bad_rotation", f"rotation is 0-3 quarter turns, not {p.rotation}")
    for col, row in cells_of(p):
        if not (0 <= col < b.layout.cols and 0 <= row < b.layout.rows):
            return _fail("off_sheet", f"the {name} at ({p.col}, {p.row}) leaves the sheet")
        if b.owner.get((col, row), p.tile) != p.tile:
            return _fail("overlap", f"the {name} would cover another tile at ({col}, {row})")
    return None


def _connected(colour: str, casino: bool, hotel: bool) -> bool:
    if colour == "yellow":
        return casino
    if colour == "blue":
        return hotel
    return casino or hotel


def _not_connected(kind: TileKind) -> RulesError:
    where = {
        "yellow": "the casino entrance",
        "blue": "the hotel entrance",
        "green": "either entrance",
    }[kind.colour]
    return _fail(
        "not_connected",
        f"a {kind.colour} tile ({kind.name}) must connect to {where} through doors",
    )


def _prerequisite(kind: TileKind, present: set[str]) -> RulesError | None:
    missing = [data.DATA.kinds[k].name for k in kind.prereq if k not in present]
    if missing:
        return _fail(
            "prerequisite", f"a {kind.name} needs {' and '.join(missing)} on your sheet first"
        )
    return None


def _special(b: Board, p: Placement) -> RulesError | None:
    kind = kind_of(p.tile)
    if kind.key == NIGHT_CLUB and not any(kind_of(t).key in LOUNGES for t in b.door_neighbours(p)):
        return _fail(
            "night_club_door", "a Night Club needs a door meeting a Lounge or Fancy Lounge door"
        )
    if kind.key not in (FANCY_RESTAURANT, NOT_NEXT_TO_FANCY_RESTAURANT):
        return None
    neighbours = {kind_of(t).key for t in b.edge_neighbours(p)}
    if (kind.key == FANCY_RESTAURANT and NOT_NEXT_TO_FANCY_RESTAURANT in neighbours) or (
        kind.key == NOT_NEXT_TO_FANCY_RESTAURANT and FANCY_RESTAURANT in neighbours
    ):
        return _fail(
            "fancy_restaurant_next_to_lounge", "a Fancy Restaurant may not go next to a Lounge"
        )
    return None


def fit_problem(
    sheet_layout: SheetLayout, tiles: Sequence[Placement], p: Placement
) -> RulesError | None:
    """Whether `p` fits the grid and covers none of `tiles` (the sheet may break other
    rules: a renovation in stages is checked whole at its end)."""
    return _fits(board(sheet_layout, tiles), p)


def fitting_placements(
    sheet_layout: SheetLayout, tiles: Sequence[Placement], tile: int
) -> list[Placement]:
    """Every placement of `tile` that fits the grid and covers none of `tiles`, each
    distinct rotation once, sorted (rotation, row, col)."""
    b = board(sheet_layout, tiles)
    found: list[Placement] = []
    seen_shapes: list[object] = []
    for rotation, shape in enumerate(kind_of(tile).shapes):
        signature = (shape.cells, shape.doors, shape.red_points)
        if signature in seen_shapes:
            continue
        seen_shapes.append(signature)
        for row in range(sheet_layout.rows):
            for col in range(sheet_layout.cols):
                p = Placement(tile=tile, col=col, row=row, rotation=rotation)
                if _fits(b, p) is None:
                    found.append(p)
    return found


def sheet_problem(sheet_layout: SheetLayout, tiles: Sequence[Placement]) -> RulesError | None:
    """The first placement rule a whole sheet breaks (None: it follows them all). Used after
    a renovation, where removing tiles may break what adding never can."""
    b = board(sheet_layout, ())
    for p in tiles:  # grid and overlaps first: the rest assumes a well-formed sheet
        err = _fits(b, p)
        if err is not None:
            return err
        for cell in cells_of(p):
            b.owner[cell] = p.tile
    b = board(sheet_layout, tiles)
    casino = b.reach(sheet_layout.casino_entrance)
    hotel = b.reach(sheet_layout.hotel_entrance)
    counts: dict[str, int] = {}
    for p in tiles:
        counts[kind_of(p.tile).key] = counts.get(kind_of(p.tile).key, 0) + 1
    for p in tiles:
        kind = kind_of(p.tile)
        present = {k for k, n in counts.items() if n > (1 if k == kind.key else 0)}
        err = _prerequisite(kind, present)
        if err is not None:
            return err
        if not _connected(kind.colour, p.tile in casino, p.tile in hotel):
            return _not_connected(kind)
        err = _special(b, p)
        if err is not None:
            return err
    return None


@dataclass(frozen=True)
class Analysed:
    """A valid sheet with its reach from each entrance, to test one more tile cheaply."""

    board: Board
    casino: frozenset[int]
    hotel: frozenset[int]
    kinds: frozenset[str]


def analyse(sheet_layout: SheetLayout, tiles: Sequence[Placement]) -> Analysed:
    b = board(sheet_layout, tiles)
    return Analysed(
        board=b,
        casino=frozenset(b.reach(sheet_layout.casino_entrance)),
        hotel=frozenset(b.reach(sheet_layout.hotel_entrance)),
        kinds=frozenset(b.kinds()),
    )


def addition_problem(a: Analysed, p: Placement) -> RulesError | None:
    """The rule that adding `p` to a valid sheet breaks (None: it may go there). Adding a
    tile never disconnects another, so only the new tile and its neighbours are checked."""
    b = a.board
    err = _fits(b, p)
    if err is not None:
        return err
    kind = kind_of(p.tile)
    err = _prerequisite(kind, set(a.kinds))
    if err is not None:
        return err
    neighbours = b.door_neighbours(p)
    casino = b.at_entrance(p, b.layout.casino_entrance) or bool(neighbours & a.casino)
    hotel = b.at_entrance(p, b.layout.hotel_entrance) or bool(neighbours & a.hotel)
    if not _connected(kind.colour, casino, hotel):
        return _not_connected(kind)
    return _special(b, p)


def removal_problem(a: Analysed, tile: int) -> RulesError | None:
    """The rule that taking `tile` off a valid sheet breaks (None: the rest stays legal).
    Removing never makes a tile overlap or sit next to a Lounge, so only prerequisites,
    connections and Night Club doors are checked."""
    rest = tuple(p for p in a.board.tiles if p.tile != tile)
    gone = kind_of(tile).key
    if sum(1 for p in rest if kind_of(p.tile).key == gone) == 0:
        for p in rest:
            if gone in kind_of(p.tile).prereq:
                return _prerequisite(kind_of(p.tile), {kind_of(q.tile).key for q in rest})
    b = board(a.board.layout, rest)
    casino = b.reach(b.layout.casino_entrance)
    hotel = b.reach(b.layout.hotel_entrance)
    for p in rest:
        kind = kind_of(p.tile)
        if not _connected(kind.colour, p.tile in casino, p.tile in hotel):
            return _not_connected(kind)
        if kind.key == NIGHT_CLUB:
            err = _special(b, p)
            if err is not None:
                return err
    return None


def open_doors(a: Analysed, colour: str) -> set[tuple[Cell, str]]:
    """(empty cell, side) pairs where a new tile of `colour` with a door on that side of that
    cell would be connected as its colour requires: facing an entrance, or facing a door of
    a tile already joined to the right entrance."""
    b = a.board
    layout = b.layout
    reached: set[int] = set()
    entrances = []
    if colour in ("yellow", "green"):
        reached |= a.casino
        entrances.append(layout.casino_entrance)
    if colour in ("blue", "green"):
        reached |= a.hotel
        entrances.append(layout.hotel_entrance)
    found: set[tuple[Cell, str]] = set()
    for col, row, side in entrances:
        if (col, row) not in b.owner:
            found.add(((col, row), side))
    for tile in reached:
        for (x, y), side in b.tile_doors[tile]:
            dx, dy = STEP[side]
            cell = (x + dx, y + dy)
            if cell not in b.owner and 0 <= cell[0] < layout.cols and 0 <= cell[1] < layout.rows:
                found.add((cell, OPPOSITE[side]))
    return found


def candidate_placements(a: Analysed, tile: int) -> list[Placement]:
    """Every placement of `tile` that follows the placement rules on a valid sheet, each
    distinct rotation once. Only anchors putting a door on an open door are tried."""
    kind = kind_of(tile)
    if not set(kind.prereq) <= a.kinds:
        return []
    targets = open_doors(a, kind.colour)
    found: list[Placement] = []
    seen_shapes: list[object] = []
    tried: set[Placement] = set()
    for rotation, shape in enumerate(kind.shapes):
        signature = (shape.cells, shape.doors, shape.red_points)
        if signature in seen_shapes:
            continue
        seen_shapes.append(signature)
        for x, y, side in shape.doors:
            for (cx, cy), needed in targets:
                if needed != side:
                    continue
                p = Placement(tile=tile, col=cx - x, row=cy - y, rotation=rotation)
                if p in tried:
                    continue
                tried.add(p)
                if addition_problem(a, p) is None:
                    found.append(p)
    return sorted(found, key=lambda p: (p.rotation, p.row, p.col))


def entrances_connected(sheet_layout: SheetLayout, tiles: Sequence[Placement]) -> bool:
    b = board(sheet_layout, tiles)
    return bool(b.reach(sheet_layout.casino_entrance) & b.reach(sheet_layout.hotel_entrance))


def section_full(
    sheet_layout: SheetLayout,
    tiles: Sequence[Placement],
    cols: frozenset[int],
    colours: frozenset[str],
) -> bool:
    """Every cell of the section's columns covered, each by a tile of one of `colours`."""
    colour = {cell: kind_of(p.tile).colour for p in tiles for cell in cells_of(p)}
    return all(
        colour.get((col, row)) in colours for col in cols for row in range(sheet_layout.rows)
    )


def is_full(sheet_layout: SheetLayout, tiles: Sequence[Placement]) -> bool:
    by_tile = data.DATA.by_tile
    covered = sum(by_tile[p.tile].area for p in tiles)
    return covered == sheet_layout.cols * sheet_layout.rows


def diamonds(sheet_layout: SheetLayout, tiles: Sequence[Placement]) -> tuple[int, int]:
    """(three-quarter, full) diamonds: inner grid points where 3 or 4 red corners meet."""
    count: dict[Cell, int] = {}
    for p in tiles:
        for x, y in kind_of(p.tile).shapes[p.rotation % 4].red_points:
            point = (p.col + x, p.row + y)
            count[point] = count.get(point, 0) + 1
    inner = [
        n for (x, y), n in count.items() if 0 < x < sheet_layout.cols and 0 < y < sheet_layout.rows
    ]
    return sum(1 for n in inner if n == 3), sum(1 for n in inner if n >= 4)
