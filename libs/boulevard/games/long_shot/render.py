"""A plain-text picture of a Long Shot view, for terminals, demo logs and bug reports."""

from __future__ import annotations

from boulevard.games.long_shot.types import LongShotView


def render(view: LongShotView) -> str:
    lines = [f"Long Shot — turn {view.turn}, {view.phase.value}; deck {view.deck_size} cards"]
    if view.horse_die is not None or view.move_die is not None:
        # One die is rolled before the other: the unrolled one is said so, not "None".
        horse_die = "not rolled yet" if view.horse_die is None else view.horse_die
        move_die = "not rolled yet" if view.move_die is None else view.move_die
        lines.append(f"  roll: horse {horse_die}, moves {move_die}")
    for horse in view.horses:
        track = ["."] * view.track_length
        if horse.position < view.track_length:
            track[horse.position] = str(horse.number % 10)
        for i in range(view.no_bets_from, view.track_length):
            if track[i] == ".":
                track[i] = ":"
        place = f" finished #{horse.finished}" if horse.finished else ""
        owner = f"seat {horse.owner}" if horse.owner is not None else f"bank ${horse.price}"
        bets = sum(b.amount for b in view.bets if b.horse == horse.number)
        lines.append(
            f"  {horse.number:>2} {horse.name:<14} |{''.join(track)}|{place}"
            f"  {owner}; odds {horse.win}/{horse.place}/{horse.show}; bar {list(horse.move_bar)}"
            + (f"; bets ${bets}" if bets else "")
        )
    for seat in range(view.players):
        marks = []
        if seat == view.current:
            marks.append("to play")
        if seat == view.seat:
            marks.append("you")
        lines.append(
            f"  seat {seat}: ${view.money[seat]}, {view.hand_sizes[seat]} cards, "
            f"{view.rerolls[seat]} reroll" + (f"  ({', '.join(marks)})" if marks else "")
        )
    for card in view.hand:
        lines.append(f"    card {card.card}: {card.title}")
    return "\n".join(lines)
