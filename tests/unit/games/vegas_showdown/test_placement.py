"""Placement, property-tested against an independent oracle written here from the rulebook:
any sheet the rules accept has every yellow tile joined to the casino entrance, every blue
one to the hotel entrance and every green one to either, through doors; every refused
placement names a rule the oracle agrees is broken."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from boulevard.games.vegas_showdown import sheet
from boulevard.games.vegas_showdown.data import DATA
from boulevard.games.vegas_showdown.types import Placement

LAYOUT = sheet.layout("8x5")
KINDS = sorted(DATA.kinds)
OPP = {"N": "S", "S": "N", "E": "W", "W": "E"}
STEP = {"N": (0, -1), "S": (0, 1), "E": (1, 0), "W": (-1, 0)}


def oracle(tiles: Sequence[Placement], cols: int = 8, rows: int = 5) -> set[str]:
    """Every placement rule the sheet breaks (the rules' codes), computed from scratch."""
    broken: set[str] = set()
    cell_owner: dict[tuple[int, int], int] = {}
    doors: dict[int, set[tuple[tuple[int, int], str]]] = {}
    for p in tiles:
        shape = DATA.kind_of(p.tile).shapes[p.rotation]
        for x, y in shape.cells:
            c = (p.col + x, p.row + y)
            if not (0 <= c[0] < cols and 0 <= c[1] < rows):
                broken.add("off_sheet")
            if c in cell_owner:
                broken.add("overlap")
            cell_owner[c] = p.tile
        doors[p.tile] = {((p.col + x, p.row + y), s) for x, y, s in shape.doors}
    if broken:
        return broken

    def linked(a: int, b: int) -> bool:
        for (x, y), s in doors[a]:
            dx, dy = STEP[s]
            n = (x + dx, y + dy)
            if cell_owner.get(n) == b and (n, OPP[s]) in doors[b]:
                return True
        return False

    def reach(entrance: tuple[int, int, str]) -> set[int]:
        col, row, side = entrance
        start = {t for t in doors if ((col, row), side) in doors[t]}
        seen = set(start)
        while True:
            more = {b for a in seen for b in doors if b not in seen and linked(a, b)}
            if not more:
                return seen
            seen |= more

    casino, hotel = reach(LAYOUT.casino_entrance), reach(LAYOUT.hotel_entrance)
    keys = [DATA.kind_of(p.tile).key for p in tiles]
    for p in tiles:
        kind = DATA.kind_of(p.tile)
        others = list(keys)
        others.remove(kind.key)
        if not set(kind.prereq) <= set(others):
            broken.add("prerequisite")
        ok = {
            "yellow": p.tile in casino,
            "blue": p.tile in hotel,
            "green": p.tile in casino or p.tile in hotel,
        }[kind.colour]
        if not ok:
            broken.add("not_connected")
        if kind.key == "night_club" and not any(
            DATA.kind_of(q.tile).key in ("lounge", "fancy_lounge") and linked(p.tile, q.tile)
            for q in tiles
        ):
            broken.add("night_club_door")
        if kind.key == "fancy_restaurant":
            mine = {(p.col + x, p.row + y) for x, y in kind.shapes[p.rotation].cells}
            near = {(x + dx, y + dy) for x, y in mine for dx, dy in STEP.values()} - mine
            if any(DATA.kind_of(cell_owner[c]).key == "lounge" for c in near if c in cell_owner):
                broken.add("fancy_restaurant_next_to_lounge")
    return broken


attempts = st.lists(
    st.tuples(
        st.sampled_from(KINDS),
        st.integers(-1, 8),
        st.integers(-1, 5),
        st.integers(0, 3),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(attempts)
def test_accepted_sheets_are_connected_and_refusals_name_a_broken_rule(
    tries: list[tuple[str, int, int, int]],
) -> None:
    placed: list[Placement] = []
    used: set[int] = set()
    for key, col, row, rotation in tries:
        free = [t for t in DATA.tiles_of(key) if t not in used]
        if not free:
            continue
        p = Placement(free[0], col, row, rotation)
        problem = sheet.addition_problem(sheet.analyse(LAYOUT, placed), p)
        if problem is None:
            placed.append(p)
            used.add(p.tile)
            assert oracle(placed) == set(), placed
        else:
            assert problem.code in sheet.PLACEMENT_CODES
            assert problem.code in oracle([*placed, p]), (problem.code, placed, p)
    # the whole-sheet check (used by Renovate) agrees with the oracle on the result
    assert sheet.sheet_problem(LAYOUT, placed) is None


@settings(max_examples=60, deadline=None)
@given(attempts, st.data())
def test_whole_sheet_check_names_a_rule_the_oracle_finds(
    tries: list[tuple[str, int, int, int]], draw: st.DataObject
) -> None:
    """Arbitrary sheets (not built by legal steps, as after a renovation that removes
    tiles): the first problem named is one the oracle sees; no problem means none."""
    placed: list[Placement] = []
    used: set[int] = set()
    for key, col, row, rotation in tries:
        free = [t for t in DATA.tiles_of(key) if t not in used]
        if free and col >= 0 and row >= 0:
            placed.append(Placement(free[0], col, row, rotation))
            used.add(free[0])
    drop = draw.draw(st.integers(0, len(placed)))
    sheet_tiles = placed[:drop] + placed[drop + 1 :]
    problem = sheet.sheet_problem(LAYOUT, sheet_tiles)
    found = oracle(sheet_tiles)
    if problem is None:
        assert found == set()
    else:
        assert problem.code in found


@settings(max_examples=40, deadline=None)
@given(attempts)
def test_candidate_placements_are_exactly_the_legal_anchors(
    tries: list[tuple[str, int, int, int]],
) -> None:
    """The fast listing (only anchors touching an open door) equals brute force."""
    placed: list[Placement] = []
    used: set[int] = set()
    for key, col, row, rotation in tries:
        free = [t for t in DATA.tiles_of(key) if t not in used]
        if not free:
            continue
        p = Placement(free[0], col, row, rotation)
        if sheet.addition_problem(sheet.analyse(LAYOUT, placed), p) is None:
            placed.append(p)
            used.add(p.tile)
    analysed = sheet.analyse(LAYOUT, placed)
    for key in KINDS:
        free = [t for t in DATA.tiles_of(key) if t not in used]
        if not free:
            continue
        brute = {
            (shape.cells, shape.doors, c, r)
            for rot, shape in enumerate(DATA.kinds[key].shapes)
            for c in range(-1, 9)
            for r in range(-1, 6)
            if sheet.addition_problem(analysed, Placement(free[0], c, r, rot)) is None
        }
        fast = {
            (
                DATA.kinds[key].shapes[p.rotation].cells,
                DATA.kinds[key].shapes[p.rotation].doors,
                p.col,
                p.row,
            )
            for p in sheet.candidate_placements(analysed, free[0])
        }
        assert fast == brute, key


def test_rotation_turns_doors_clockwise() -> None:
    slots = DATA.kinds["slots"].shapes  # printed doors: north, east, west
    assert {s for _, _, s in slots[0].doors} == {"N", "E", "W"}
    assert {s for _, _, s in slots[1].doors} == {"E", "S", "N"}
    lounge = DATA.kinds["lounge"].shapes
    assert (lounge[0].width, lounge[0].height, lounge[1].width, lounge[1].height) == (2, 1, 1, 2)


def test_diamonds_from_red_corners_meeting_at_an_intersection() -> None:
    fancy = DATA.tiles_of("fancy_slots")
    square = [Placement(fancy[0], 1, 1), Placement(fancy[1], 2, 1), Placement(fancy[2], 1, 2)]
    assert sheet.diamonds(LAYOUT, square) == (1, 0)  # three red corners meet at (2, 2)
    full = [*square, Placement(fancy[3], 2, 2)]
    assert sheet.diamonds(LAYOUT, full) == (0, 1)
    plain = [*square, Placement(DATA.tiles_of("slots")[0], 2, 2)]  # Slots has no red corner
    assert sheet.diamonds(LAYOUT, plain) == (1, 0)


def test_sections_and_connection_for_final_scoring() -> None:
    slots = DATA.tiles_of("slots")
    casino = [
        Placement(slots[i], c, r, 0)
        for i, (c, r) in enumerate((c, r) for c in range(3) for r in range(5))
    ]
    assert sheet.section_full(LAYOUT, casino, LAYOUT.casino_cols, frozenset({"yellow", "green"}))
    assert not sheet.section_full(
        LAYOUT, casino[:-1], LAYOUT.casino_cols, frozenset({"yellow", "green"})
    )
    # a row of Lounges (doors all round) joins the two entrances along row 2
    lounges = [Placement(t, 2 * i, 2, 0) for i, t in enumerate(DATA.tiles_of("lounge")[:4])]
    assert sheet.entrances_connected(LAYOUT, lounges)
    assert not sheet.entrances_connected(LAYOUT, lounges[:3])
