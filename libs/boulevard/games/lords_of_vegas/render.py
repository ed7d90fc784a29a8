"""A plain-text board a terminal client can print (from a view, so nothing hidden leaks).

Cells: `g5R` = gold tile, die 5, Red's die (`g-` a tile with no die); `[R]` = Red's marker;
` . ` an empty lot. Casino colours are lower case (a b g p s), players upper case.
"""

from __future__ import annotations

from boulevard.games.lords_of_vegas.board import LOTS, PLAYER_COLOURS, TILES_PER_COLOUR
from boulevard.games.lords_of_vegas.rules import (
    STRIP,
    free_dice,
    free_markers,
    remaining_cards_by_colour,
)
from boulevard.games.lords_of_vegas.types import Colour, Phase, Space, State

_COLOUR_LETTER = {
    Colour.AQUA: "a",
    Colour.BROWN: "b",
    Colour.GOLD: "g",
    Colour.PURPLE: "p",
    Colour.SILVER: "s",
}
_WIDTH = 7


def player_letter(seat: int) -> str:
    return PLAYER_COLOURS[seat][0].upper()


def _cell(lot_id: str, space: Space) -> str:
    if space.tile is not None:
        die = f"{space.die}{player_letter(space.owner)}" if space.owner is not None else "-"
        body = f"{_COLOUR_LETTER[space.tile]}{die}"
    elif space.marker is not None:
        body = f"[{player_letter(space.marker)}]"
    else:
        body = "."
    return f"{lot_id:>3} {body:<3}"[:_WIDTH].ljust(_WIDTH)


def _block_rows(state: State, block: str) -> list[str]:
    rows: dict[int, list[str]] = {}
    for lot in LOTS:
        if lot.block == block:
            rows.setdefault(lot.row, []).append(_cell(lot.id, state.spaces[lot.index]))
    return [" ".join(cells) for _, cells in sorted(rows.items())]


def render(view: State) -> str:
    lines: list[str] = []
    if not view.spaces:
        return "Lords of Vegas: not started"
    turn = f"{PLAYER_COLOURS[view.current].title()} (seat {view.current})"
    lines.append(
        f"Lords of Vegas: {turn} to play, phase {view.phase}; {view.cards_left} cards left"
    )
    if view.discards:
        last = view.discards[-1]
        lines.append(f"last card: {last}")
    blank = " " * (3 * _WIDTH + 2)
    for left, right in (("A", "B"), ("C", "D"), ("E", "F")):
        lines.append(
            f"{'-- ' + left + ' ':-<{len(blank)}}  |S|  {'-- ' + right + ' ':-<{len(blank)}}"
        )
        lrows, rrows = _block_rows(view, left), _block_rows(view, right)
        for k in range(max(len(lrows), len(rrows))):
            lrow = lrows[k] if k < len(lrows) else blank
            rrow = rrows[k] if k < len(rrows) else ""
            lines.append(f"{lrow:<{len(blank)}}  |S|  {rrow}")
    for seat in range(view.players):
        lines.append(
            f"{PLAYER_COLOURS[seat].title():<7} ${view.cash[seat]:<4} {view.points[seat]:>2} pts"
            f"  markers left {free_markers(view, seat):>2}  dice left {free_dice(view, seat):>2}"
        )
    to_come = remaining_cards_by_colour(view)
    tiles = "  ".join(
        f"{c.value} {sum(1 for s in view.spaces if s.tile == c)}/{TILES_PER_COLOUR}" for c in Colour
    )
    cards = "  ".join(f"{k} {v}" for k, v in to_come.items() if k != STRIP)
    cards += f"  strip {to_come[STRIP]}"
    lines.append(f"tiles on board: {tiles}")
    lines.append(f"cards still to come: {cards}")
    if view.pending_gamble is not None:
        g = view.pending_gamble
        lines.append(
            f"gamble: {PLAYER_COLOURS[g.seat].title()} bets ${g.amount} at {g.lot} against "
            f"{PLAYER_COLOURS[g.boss].title()}; lay-off {g.lay_off}; roll {g.roll}"
        )
    if view.pending_trade is not None:
        lines.append(f"trade offer waiting: {view.pending_trade}")
    if view.pending_reorganization is not None:
        lines.append(f"reorganization: {view.pending_reorganization}")
    if view.phase is Phase.OVER:
        lines.append(f"game over ({view.end_reason})")
    return "\n".join(lines)
