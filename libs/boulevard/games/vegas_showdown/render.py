"""A plain-text table a terminal client can print (from a view, so nothing hidden leaks).

Each sheet is a grid of cells: `.` empty, otherwise the first letter of the tile's colour
(y yellow, b blue, g green) in upper case on the tile's top-left cell.
"""

from __future__ import annotations

from boulevard.games.vegas_showdown import sheet
from boulevard.games.vegas_showdown.types import Phase, SeatView, VegasShowdownView


def _grid(view: VegasShowdownView, me: SeatView) -> list[str]:
    layout = sheet.layout(view.sheet)
    cells: dict[tuple[int, int], str] = {}
    for t in me.sheet:
        kind = sheet.kind_of(t.tile)
        letter = kind.colour[0]
        shape = kind.shapes[t.rotation % 4]
        for x, y in shape.cells:
            cells[(t.col + x, t.row + y)] = letter
        cells[(t.col, t.row)] = letter.upper()
    rows = []
    for row in range(layout.rows):
        left = ">" if (0, row) == layout.casino_entrance[:2] else " "
        right = "<" if (layout.cols - 1, row) == layout.hotel_entrance[:2] else " "
        line = "".join(cells.get((col, row), ".") for col in range(layout.cols))
        rows.append(f"    {left}{line}{right}")
    return rows


def render(view: VegasShowdownView) -> str:
    if view.phase is Phase.SETUP:
        return "Vegas Showdown: setting up"
    lines = [
        f"Vegas Showdown, turn {view.turn}, {view.phase.value}; button: seat {view.button}"
        + (f"; to act: seat {view.current}" if view.current is not None else ""),
        "premier stacks left (S/M/L): "
        + "/".join(str(n) for n in view.premier_left)
        + f"; event cards left: {view.events_left}",
    ]
    if view.drawn:
        lines.append("events this turn: " + ", ".join(view.drawn))
    if view.in_play:
        lines.append("events in play: " + ", ".join(view.in_play))
    for t in view.tracks:
        bid = f" bid {t.bid} by seat {t.bidder}" if t.bidder is not None else ""
        marks = " NO BIDS" if t.no_bid else ""
        offer = t.tile_name or "(empty)"
        lines.append(f"  {t.name:<11} {offer:<22} min {t.minimum:>2} top {t.top}{bid}{marks}")
    for me in view.seats:
        lines.append(
            f"seat {me.seat}: ${me.cash} Fame {me.fame} Population {me.population} "
            f"Revenue {me.revenue} action {me.action.value} aside {len(me.aside)}"
        )
        lines.extend(_grid(view, me))
    if view.staging:
        off = ", ".join(str(t) for t in view.staged_remove) or "none"
        on = ", ".join(
            f"{p.tile} at ({p.col}, {p.row}) turned {p.rotation}" for p in view.staged_place
        )
        lines.append(f"seat {view.current} is renovating: tiles off {off}; placed {on or 'none'}")
    if view.phase is Phase.FINISHED:
        lines.append(
            f"game over ({view.end_reason}): "
            + ", ".join(f"seat {s.seat} +{s.total}" for s in view.scores)
        )
    return "\n".join(lines)
