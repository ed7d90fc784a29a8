"""Long Shot commands, events, state and view: closed sets of frozen values.

Seats are 0-based and clockwise = ascending seat number. Horses are numbered 1..10 like the
horse die; horse n's state is at index n - 1. Cards are ids 0..103 (see `data.py`). No event
names a card that goes into a hand (draws and steals move the top of the deck or a hand
position), so the event log shows hands only as the rulebook does: by their size.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from boulevard.games.base import ChanceResolved, Transfer
from boulevard.games.long_shot.data import CardKind

# --- commands ---------------------------------------------------------------------------


class Die(StrEnum):
    HORSE = "horse"
    MOVE = "move"


@dataclass(frozen=True, slots=True)
class Reroll:
    """Trade in your Reroll token to roll `die` again, right after your turn's roll."""

    seat: int
    die: Die


@dataclass(frozen=True, slots=True)
class MoveHorses:
    """Accept the roll: the rolled horse moves, then each of `horses` (horses you own with
    the rolled number on their move bar) in that order. A 0 moves nothing: `horses` empty."""

    seat: int
    horses: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PlayCard:
    """Your action: play `card` from your hand. `horse` is the horse it acts on (move, bet,
    Winner's-Circle move); `target` the seat it steals from."""

    seat: int
    card: int
    horse: int | None = None
    target: int | None = None


@dataclass(frozen=True, slots=True)
class BuyHorse:
    seat: int
    horse: int


@dataclass(frozen=True, slots=True)
class PlaceBet:
    """Your action: bet the standard $5 on a running horse outside the No Bets area."""

    seat: int
    horse: int


@dataclass(frozen=True, slots=True)
class DiscardCards:
    """Your action: discard two cards (their text unused) for $5 from the bank."""

    seat: int
    cards: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PassTurn:
    """Your action: none this turn."""

    seat: int


Command = Reroll | MoveHorses | PlayCard | BuyHorse | PlaceBet | DiscardCards | PassTurn
COMMAND_TYPES: tuple[type, ...] = (
    Reroll,
    MoveHorses,
    PlayCard,
    BuyHorse,
    PlaceBet,
    DiscardCards,
    PassTurn,
)

# --- events -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GameStarted:
    """Seats taken, each paid the starting money; the deck shuffle is requested next."""

    players: int
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class FeatureUsed:
    """A horse feature paid its owner at the start of the owner's turn."""

    seat: int
    horse: int
    amount: int
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class RerollUsed:
    seat: int
    die: Die


@dataclass(frozen=True, slots=True)
class HorseMoved:
    """`horse` moved `spaces` (negative: back) and now stands on `position`."""

    horse: int
    spaces: int
    position: int


@dataclass(frozen=True, slots=True)
class HorseFinished:
    horse: int
    place: int


@dataclass(frozen=True, slots=True)
class ZeroRolled:
    """The move die showed 0: no horse moves. `victim` (the rolled horse's owner) loses a
    random card to the roller (a steal chance follows), or the roller draws when unowned."""

    seat: int
    horse: int
    victim: int | None


@dataclass(frozen=True, slots=True)
class RollResolved:
    """The roll is done with: the turn moves on to its action."""

    seat: int


@dataclass(frozen=True, slots=True)
class CardDrawn:
    """The top card of the deck went to `seat`'s hand (which card only that seat sees)."""

    seat: int


@dataclass(frozen=True, slots=True)
class CardPlayed:
    seat: int
    card: int
    horse: int | None
    target: int | None


@dataclass(frozen=True, slots=True)
class MoneyTaken:
    """`seat` took money from the bank (a money or Lucky Numba card, a discard, ...)."""

    seat: int
    amount: int
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class MoneyStolen:
    seat: int
    victim: int
    amount: int
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class StealStarted:
    """`seat` takes a random card from `victim`; a chance request picks which."""

    seat: int
    victim: int


@dataclass(frozen=True, slots=True)
class HorseBought:
    seat: int
    horse: int
    price: int
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class BetPlaced:
    """A bet of `amount` on `horse`, held in escrow until the race ends (paid by the bank
    for a free bet)."""

    seat: int
    horse: int
    amount: int
    free: bool
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class CardsDiscarded:
    seat: int
    cards: tuple[int, ...]
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class Passed:
    seat: int


@dataclass(frozen=True, slots=True)
class TurnEnded:
    seat: int
    next: int


@dataclass(frozen=True, slots=True)
class Payout:
    """What one seat received at the end: `purse` as an owner, `winnings` from bets."""

    seat: int
    purse: int
    winnings: int


@dataclass(frozen=True, slots=True)
class RaceEnded:
    """The third horse crossed the line: hands discarded, purses and bets settled (each
    bet's stake to the bank, then its winnings from the bank), most money wins."""

    finish: tuple[int, ...]  # horse numbers, 1st first
    payouts: tuple[Payout, ...]
    money: tuple[int, ...]
    ranking: tuple[tuple[int, ...], ...]
    transfers: tuple[Transfer, ...]


Event = (
    GameStarted
    | FeatureUsed
    | RerollUsed
    | HorseMoved
    | HorseFinished
    | ZeroRolled
    | RollResolved
    | CardDrawn
    | CardPlayed
    | MoneyTaken
    | MoneyStolen
    | StealStarted
    | HorseBought
    | BetPlaced
    | CardsDiscarded
    | Passed
    | TurnEnded
    | RaceEnded
)
AnyEvent = Event | ChanceResolved

EVENT_TYPES: tuple[type, ...] = (
    GameStarted,
    FeatureUsed,
    RerollUsed,
    HorseMoved,
    HorseFinished,
    ZeroRolled,
    RollResolved,
    CardDrawn,
    CardPlayed,
    MoneyTaken,
    MoneyStolen,
    StealStarted,
    HorseBought,
    BetPlaced,
    CardsDiscarded,
    Passed,
    TurnEnded,
    RaceEnded,
)

# --- chance purposes --------------------------------------------------------------------

SHUFFLE_DECK = "deck"
"""SHUFFLE of 104: `values[i]` is the id of the i-th card from the top of the deck."""
ROLL_START = "start"
"""ROLL of one d10 per seat still contending for first player, in seat order."""
ROLL_HORSE = "horse"
"""ROLL of the horse die (d10); asked again while it names a finished horse."""
ROLL_MOVE = "move"
"""ROLL of the move die (d6): value v shows face `move_faces[v - 1]` (0 included)."""
ROLL_STEAL = "steal"
"""ROLL of one die with as many sides as the victim has cards: which card is taken."""

ESCROW_BETS = "escrow:bets"
"""The ledger account holding every stake until the race ends."""

# --- state ------------------------------------------------------------------------------


class Phase(StrEnum):
    SETUP = "setup"  # before the deck shuffle and the first-player roll
    ROLLING = "rolling"  # the current seat's dice are being rolled (chance)
    MOVING = "moving"  # the roll is known: reroll or move
    ACTING = "acting"  # one action or pass
    FINISHED = "finished"


@dataclass(frozen=True, slots=True)
class Bet:
    seat: int
    horse: int
    amount: int


@dataclass(frozen=True, slots=True)
class Steal:
    seat: int
    victim: int


@dataclass(frozen=True, slots=True)
class LongShotState:
    phase: Phase = Phase.SETUP
    players: int = 0
    turn: int = 0  # 1 for the first turn
    current: int = 0
    contenders: tuple[int, ...] = ()  # seats still rolling for first player
    money: tuple[int, ...] = ()  # per seat
    hands: tuple[tuple[int, ...], ...] = ()  # card ids per seat
    deck: tuple[int, ...] = ()  # card ids, top first
    discard: tuple[int, ...] = ()  # card ids, oldest first
    shuffled: bool = False
    rerolls: tuple[int, ...] = ()  # Reroll tokens per seat
    positions: tuple[int, ...] = ()  # per horse (index n - 1)
    owners: tuple[int, ...] = ()  # per horse: seat, or -1 for the bank
    finished: tuple[int, ...] = ()  # horse numbers in finishing order
    bets: tuple[Bet, ...] = ()  # in the order placed
    horse_die: int | None = None  # this turn's horse die (a running horse)
    move_die: int | None = None  # this turn's move die face
    steal: Steal | None = None  # a random-card steal waiting for its chance
    # This turn's move die was re-rolled (Reroll of the move die): its 0 is not the opening
    # roll's, and under rules 2 steals nothing (docs/games/long-shot.md, choice 3).
    move_rerolled: bool = False


# --- view -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CardView:
    card: int
    kind: CardKind
    title: str
    amount: int
    steps: int
    horse: int
    number: int
    free: bool
    anywhere: bool


@dataclass(frozen=True, slots=True)
class HorseView:
    number: int
    name: str
    price: int
    move_bar: tuple[int, ...]
    win: int
    place: int
    show: int
    position: int
    owner: int | None
    finished: int | None  # its place, once it has finished
    no_bets: bool  # inside the No Bets area


@dataclass(frozen=True, slots=True)
class BetView:
    seat: int
    horse: int
    amount: int


@dataclass(frozen=True, slots=True)
class LongShotView:
    """What one seat (or a spectator, `seat=None`) sees: the whole table, its own hand, and
    of the other hands and the deck only their sizes."""

    seat: int | None
    phase: Phase
    players: int
    turn: int
    current: int | None
    money: tuple[int, ...]
    hand: tuple[CardView, ...]
    hand_sizes: tuple[int, ...]
    rerolls: tuple[int, ...]
    horses: tuple[HorseView, ...]
    bets: tuple[BetView, ...]
    finished: tuple[int, ...]
    horse_die: int | None
    move_die: int | None
    deck_size: int
    discard_size: int
    discard_top: CardView | None  # the last card played or discarded
    track_length: int
    no_bets_from: int
