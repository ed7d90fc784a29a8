"""A plain-text picture of a Las Vegas view, for terminals, logs of demos and bug reports."""

from __future__ import annotations

from boulevard.games.las_vegas.types import LasVegasView


def _k(value: int) -> str:
    return f"${value // 1000}k"


def render(view: LasVegasView) -> str:
    lines = [
        f"Las Vegas — round {view.round}/{view.rounds}, {view.phase.value}"
        + (", white dice" if view.white_dice else "")
        + f"; start player seat {view.start_player}; stack {view.stack_size} notes",
    ]
    for casino in view.casinos:
        notes = " ".join(_k(v) for v in casino.notes) or "-"
        dice = " ".join(f"s{seat}:{n}" for seat, n in enumerate(casino.dice) if n)
        white = f" white:{casino.white}" if casino.white else ""
        lines.append(f"  casino {casino.number}: {notes:<28} | {dice}{white}")
    for seat in range(view.players):
        marks = []
        if seat == view.current:
            marks.append("to play")
        if seat == view.seat:
            marks.append("you")
        dice = f"{view.dice_left[seat]} dice" if view.dice_left else ""
        if view.white_left and view.white_left[seat]:
            dice += f" + {view.white_left[seat]} white"
        lines.append(
            f"  seat {seat}: {_k(view.money[seat])} in {len(view.banknotes[seat])} notes; "
            f"{dice}" + (f"  ({', '.join(marks)})" if marks else "")
        )
    if view.roll is not None:
        own = " ".join(str(v) for v in view.roll.own)
        white = " ".join(str(v) for v in view.roll.white)
        lines.append(f"  roll: {own}" + (f" | white {white}" if white else ""))
    return "\n".join(lines)
