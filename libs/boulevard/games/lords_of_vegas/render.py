"""A plain-text board a terminal client can print (from a view, so nothing hidden leaks).

Cells: `g5R` = gold tile, die 5, Red's die (`g-` a tile with no die); `[R]` = Red's marker;
` . ` an empty lot. Casino colours are lower case (a b g p s), players upper case.
"""

from __future__ import annotations

from boulevard.games.lords_of_vegas.board import LOTS, PLAYER_COLOURS, TILES_PER_COLOUR, Lot
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


def _layout() -> dict[str, list[list[Lot]]]:
    """Each block's lots, row by row (in board order within a row): fixed, so worked out
    once rather than for every view rendered."""
    blocks: dict[str, dict[int, list[Lot]]] = {}
    for lot in LOTS:
        blocks.setdefault(lot.block, {}).setdefault(lot.row, []).append(lot)
    return {block: [lots for _, lots in sorted(rows.items())] for block, rows in blocks.items()}


_LAYOUT = _layout()


def _block_rows(state: State, block: str) -> list[str]:
    return [
        " ".join(_cell(lot.id, state.spaces[lot.index]) for lot in row)
        for row in _LAYOUT.get(block, [])
    ]


def _items(money: int, lots: tuple[str, ...], dice: tuple[str, ...]) -> str:
    parts = ([f"${money}"] if money else []) + [f"lot {x}" for x in lots]
    parts += [f"die on {x}" for x in dice]
    return ", ".join(parts) or "nothing"


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
        t = view.pending_trade
        gives = _items(t.give_money, t.give_lots, t.give_dice)
        takes = _items(t.take_money, t.take_lots, t.take_dice)
        action = f" and {t.action.kind} {t.action.lot} now" if t.action is not None else ""
        lines.append(
            f"trade offer: {PLAYER_COLOURS[t.proposer].title()} gives {gives}{action} for "
            f"{takes} from {PLAYER_COLOURS[t.recipient].title()} (waiting for an answer)"
        )
    if view.pending_reorganization is not None:
        r = view.pending_reorganization
        rolled = "rolling" if r.values is None else f"rolled {r.values}"
        waiting = ", ".join(PLAYER_COLOURS[s].title() for s in r.awaiting)
        lines.append(
            f"reorganization by {PLAYER_COLOURS[r.seat].title()} of {' '.join(r.lots)}: {rolled}"
            + (f"; {waiting} to place dice" if waiting else "")
        )
    lines.append("legend: g5R = gold tile, Red's 5 | g- = tile without die | [R] = Red's lot")
    if view.phase is Phase.OVER:
        lines.append(f"game over ({view.end_reason})")
    return "\n".join(lines)
