"""Las Vegas commands, events, state and view: closed sets of frozen values.

Seats are 0-based and turn order is clockwise = ascending seat number. Casinos are numbered
1..6 like the dice. Banknotes are referred to by id (see `data.py`); events also carry values
where a reader (ledger, watcher) would otherwise need the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from boulevard.games.base import ChanceResolved, Transfer

# --- commands ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlaceDice:
    """Place every die of your roll showing `number` (your colour and neutral white alike)
    on the casino with that number. There is no count: you cannot keep some of them back."""

    seat: int
    number: int


Command = PlaceDice

# --- events -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GameStarted:
    """Seats taken; the banknote shuffle is requested next (see `chance`)."""

    players: int
    white_dice: bool
    start_player: int


@dataclass(frozen=True, slots=True)
class DicePlaced:
    """`own` dice of the seat's colour and `white` neutral dice went to casino `casino`."""

    seat: int
    casino: int
    own: int
    white: int


@dataclass(frozen=True, slots=True)
class Award:
    seat: int
    note: int  # banknote id
    value: int  # dollars


@dataclass(frozen=True, slots=True)
class CasinoPaidOut:
    """One casino's payout at the end of a round.

    `cancelled` seats (and the white player when `white_cancelled`) were tied on their dice
    count and took their dice back before ranking. `awards` are the seats' notes, best rank
    first; each has its bank transfer in `transfers`. `to_stack` lists, in order, the notes
    that go under the stack: those the white player won (also listed in `white_notes`) and
    those nobody won.
    """

    round: int
    casino: int
    cancelled: tuple[int, ...]
    white_cancelled: bool
    awards: tuple[Award, ...]
    white_notes: tuple[int, ...]
    to_stack: tuple[int, ...]
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class RoundStarted:
    """Rounds 2.. : casinos refilled from the top of the stack (note ids per casino 1..6,
    highest value first), every die back with its owner, the start card moved left."""

    round: int
    start_player: int
    casinos: tuple[tuple[int, ...], ...]


@dataclass(frozen=True, slots=True)
class GameEnded:
    """After the last round's payout. `ranking` groups seats best first (money, then number
    of banknotes; a group of several seats is a shared place)."""

    money: tuple[int, ...]
    banknotes: tuple[int, ...]
    ranking: tuple[tuple[int, ...], ...]


Event = GameStarted | DicePlaced | CasinoPaidOut | RoundStarted | GameEnded
AnyEvent = Event | ChanceResolved

COMMAND_TYPES: tuple[type, ...] = (PlaceDice,)
EVENT_TYPES: tuple[type, ...] = (GameStarted, DicePlaced, CasinoPaidOut, RoundStarted, GameEnded)

# --- chance purposes --------------------------------------------------------------------

SHUFFLE_BANKNOTES = "banknotes"
"""SHUFFLE of 54: `values[i]` is the id of the i-th note from the top of the stack."""
ROLL_TURN = "turn"
"""ROLL of the current seat's dice: its own colour first, then its white dice."""
ROLL_SPARE_WHITE = "spare_white"
"""ROLL of the 2 spare white dice at the start of a 3-player white-dice round."""

# --- state ------------------------------------------------------------------------------


class Phase(StrEnum):
    SETUP = "setup"  # before GameStarted, or waiting for the banknote shuffle
    PLAYING = "playing"
    FINISHED = "finished"


@dataclass(frozen=True, slots=True)
class Casino:
    notes: tuple[int, ...] = ()  # banknote ids, highest value first
    dice: tuple[int, ...] = ()  # dice per seat
    white: int = 0  # neutral dice


@dataclass(frozen=True, slots=True)
class Roll:
    own: tuple[int, ...]
    white: tuple[int, ...]

    @property
    def numbers(self) -> tuple[int, ...]:
        """The distinct numbers shown, ascending: the choices a player has."""
        return tuple(sorted({*self.own, *self.white}))


@dataclass(frozen=True, slots=True)
class LasVegasState:
    phase: Phase = Phase.SETUP
    players: int = 0
    white_dice: bool = False
    round: int = 0
    start_player: int = 0
    current: int = 0
    stack: tuple[int, ...] = ()  # banknote ids, top first
    casinos: tuple[Casino, ...] = ()  # casino n is casinos[n - 1]
    hands: tuple[tuple[int, ...], ...] = ()  # banknote ids won, per seat
    dice_left: tuple[int, ...] = ()  # own-colour dice not yet placed, per seat
    white_left: tuple[int, ...] = ()  # neutral dice not yet placed, per seat
    spare_white_pending: bool = False  # 3 players + white dice: the start roll is due
    roll: Roll | None = None  # the current seat's roll, until it places


# --- view -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CasinoView:
    number: int
    notes: tuple[int, ...]  # values, highest first
    dice: tuple[int, ...]  # per seat
    white: int


@dataclass(frozen=True, slots=True)
class LasVegasView:
    """What one seat (or a spectator, `seat=None`) sees: everything on the table, but of the
    stack only its size. Won banknotes lie face down, yet every payout is public, so each
    seat's notes are shown to all (a good memory would know them anyway)."""

    seat: int | None
    phase: Phase
    players: int
    white_dice: bool
    round: int
    rounds: int
    start_player: int
    current: int | None
    casinos: tuple[CasinoView, ...]
    banknotes: tuple[tuple[int, ...], ...]  # values won, per seat
    money: tuple[int, ...]
    dice_left: tuple[int, ...]
    white_left: tuple[int, ...]
    roll: Roll | None
    stack_size: int
