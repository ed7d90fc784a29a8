"""Tables for Las Vegas tests: states built to order, notes picked by value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from boulevard.games.base import ChanceKind, ChanceResolved
from boulevard.games.las_vegas.data import NOTE_VALUES
from boulevard.games.las_vegas.rules import white_dice_each
from boulevard.games.las_vegas.types import (
    ROLL_TURN,
    SHUFFLE_BANKNOTES,
    Casino,
    CasinoPaidOut,
    LasVegasState,
    Phase,
    Roll,
)

K = 1000


class NotePool:
    """Hands out banknote ids by value, each id once."""

    def __init__(self) -> None:
        self.free = list(range(len(NOTE_VALUES)))

    def take(self, value: int) -> int:
        note = next(n for n in self.free if NOTE_VALUES[n] == value)
        self.free.remove(note)
        return note

    def take_all(self, values: Sequence[int]) -> tuple[int, ...]:
        return tuple(self.take(v) for v in values)


@dataclass
class At:
    """One casino in a built table: note values (highest first), dice per seat, white dice."""

    notes: Sequence[int] = ()
    dice: Sequence[int] = ()
    white: int = 0


@dataclass
class Table:
    state: LasVegasState
    notes: Mapping[int, tuple[int, ...]] = field(default_factory=dict)  # casino -> note ids


def table(
    players: int = 4,
    *,
    white_dice: bool = False,
    casinos: Mapping[int, At] | None = None,
    dice_left: Sequence[int] | None = None,
    white_left: Sequence[int] | None = None,
    current: int = 0,
    roll: Roll | None = None,
    round: int = 1,
    start_player: int = 0,
    hands: Mapping[int, Sequence[int]] | None = None,
) -> Table:
    """A mid-round table; every note not placed in a casino or a hand is in the stack."""
    pool = NotePool()
    casinos = casinos or {}
    built: list[Casino] = []
    ids: dict[int, tuple[int, ...]] = {}
    for number in range(1, 7):
        at = casinos.get(number, At())
        ids[number] = pool.take_all(sorted(at.notes, reverse=True))
        dice = tuple(at.dice) + (0,) * (players - len(at.dice))
        built.append(Casino(notes=ids[number], dice=dice, white=at.white))
    won = tuple(pool.take_all((hands or {}).get(s, ())) for s in range(players))
    state = LasVegasState(
        phase=Phase.PLAYING,
        players=players,
        white_dice=white_dice,
        round=round,
        start_player=start_player,
        current=current,
        stack=tuple(pool.free),
        casinos=tuple(built),
        hands=won,
        dice_left=tuple(dice_left) if dice_left is not None else (8,) * players,
        white_left=(
            tuple(white_left)
            if white_left is not None
            else (white_dice_each(players, white_dice),) * players
        ),
        roll=roll,
    )
    return Table(state, ids)


def rolled(*own: int, white: Sequence[int] = ()) -> ChanceResolved:
    """The chance event of a turn roll: own-colour dice first, then white dice."""
    return ChanceResolved(ROLL_TURN, ChanceKind.ROLL, (*own, *white))


def shuffled(order: Sequence[int]) -> ChanceResolved:
    return ChanceResolved(SHUFFLE_BANKNOTES, ChanceKind.SHUFFLE, tuple(order))


def stack_dealing(*casinos: Sequence[int]) -> tuple[int, ...]:
    """A shuffle order whose first casinos get exactly these note values, in deal order; the
    rest of the notes follow in id order."""
    pool = NotePool()
    head = [pool.take(v) for values in casinos for v in values]
    return (*head, *pool.free)


def payout(events: Sequence[object], casino: int) -> CasinoPaidOut:
    (paid,) = [e for e in events if isinstance(e, CasinoPaidOut) and e.casino == casino]
    return paid
