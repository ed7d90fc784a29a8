"""Commands, events and state of Lords of Vegas: closed, immutable, serialisable.

Lots are named by their printed id ("A2") in commands and events, and by board index inside
the state. Every command names the seat that issues it; `decide` checks that this seat may
act now (the engine checks that the caller really is that seat).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from boulevard.games.base import Transfer


class Colour(StrEnum):
    AQUA = "aqua"
    BROWN = "brown"
    GOLD = "gold"
    PURPLE = "purple"
    SILVER = "silver"


class Phase(StrEnum):
    SHUFFLE = "shuffle"  # waiting for the deck shuffle
    DEAL = "deal"  # the banker deals the starting cards and pays the starting money
    START_ROLL = "start_roll"  # contenders roll 2d6 for the first turn (ties re-roll)
    DRAW = "draw"  # the current player must draw (Step 1)
    PLAY = "play"  # the current player takes actions (Step 2) until EndTurn
    OVER = "over"


class Takeover(StrEnum):
    """What drawing a card did to its lot."""

    MARKER_PLACED = "marker_placed"  # empty lot: the drawer's marker goes on it
    DIE_REPLACED = (
        "die_replaced"  # sprawled tile: the drawer's die replaces the old one, same value
    )
    DIE_PLACED = "die_placed"  # tile with no die: the drawer's die with the printed value
    ALREADY_YOURS = "already_yours"  # your own die is already there (FAQ): nothing happens
    NO_MARKER_LEFT = "no_marker_left"  # all 10 markers in use: the lot stays unowned
    F_BLOCK_SKIPPED = "f_block_skipped"  # 2-player game: F lots are never marked
    NO_LOT = "no_lot"  # the End of Game card names no lot


class ActionKind(StrEnum):
    BUILD = "build"
    SPRAWL = "sprawl"
    REMODEL = "remodel"
    REORGANIZE = "reorganize"
    GAMBLE = "gamble"


# ---------------------------------------------------------------------------------------------
# Commands


@dataclass(frozen=True, slots=True)
class DealStartingCards:
    """The banker deals two cards to each player, who mark those lots and take their money."""

    seat: int


@dataclass(frozen=True, slots=True)
class DrawCard:
    """Step 1 of a turn: draw, take over the lot, collect lot income, the card's casinos pay."""

    seat: int


@dataclass(frozen=True, slots=True)
class BuildCasino:
    """Build a `colour` tile on a lot you own. `die_from` names one of your tiles to take the
    die from, required exactly when all your dice are on the board."""

    seat: int
    lot: str
    colour: Colour
    die_from: str | None = None


@dataclass(frozen=True, slots=True)
class SprawlCasino:
    """Extend a `colour` casino you are boss of onto an adjacent empty, unowned lot."""

    seat: int
    lot: str
    colour: Colour
    die_from: str | None = None


@dataclass(frozen=True, slots=True)
class RemodelCasino:
    """Change the colour of the casino containing `lot` (you are its boss)."""

    seat: int
    lot: str
    colour: Colour


@dataclass(frozen=True, slots=True)
class ReorganizeCasino:
    """Pay $1 per pip and reroll every die of the casino containing `lot`."""

    seat: int
    lot: str


@dataclass(frozen=True, slots=True)
class AssignReorganizedDice:
    """After a reorganization roll: put your rolled values on your tiles, (lot, value) each."""

    seat: int
    placements: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class Gamble:
    """Bet `amount` at the casino containing `lot`, whose boss is another player."""

    seat: int
    lot: str
    amount: int


@dataclass(frozen=True, slots=True)
class DecideLayOff:
    """The boss taking a bet says whether half of it is laid off to the bank."""

    seat: int
    lay_off: bool


@dataclass(frozen=True, slots=True)
class SettleGamble:
    """The gambler settles the rolled bet (money moves only through commands' events)."""

    seat: int


@dataclass(frozen=True, slots=True)
class PlayAction:
    """An action the current player performs now, as part of a trade."""

    kind: ActionKind
    lot: str
    colour: Colour | None = None
    amount: int = 0
    die_from: str | None = None


@dataclass(frozen=True, slots=True)
class TradeOffer:
    """`give_*` go from the proposer to the recipient, `take_*` the other way. `action` is
    performed right away by whichever of the two is the current player."""

    proposer: int
    recipient: int
    give_money: int = 0
    give_lots: tuple[str, ...] = ()
    give_dice: tuple[str, ...] = ()
    take_money: int = 0
    take_lots: tuple[str, ...] = ()
    take_dice: tuple[str, ...] = ()
    action: PlayAction | None = None


@dataclass(frozen=True, slots=True)
class ProposeTrade:
    seat: int
    offer: TradeOffer


@dataclass(frozen=True, slots=True)
class AcceptTrade:
    seat: int


@dataclass(frozen=True, slots=True)
class RejectTrade:
    seat: int


@dataclass(frozen=True, slots=True)
class EndTurn:
    seat: int


Command = (
    DealStartingCards
    | DrawCard
    | BuildCasino
    | SprawlCasino
    | RemodelCasino
    | ReorganizeCasino
    | AssignReorganizedDice
    | Gamble
    | DecideLayOff
    | SettleGamble
    | ProposeTrade
    | AcceptTrade
    | RejectTrade
    | EndTurn
)
COMMAND_TYPES: tuple[type, ...] = (
    DealStartingCards,
    DrawCard,
    BuildCasino,
    SprawlCasino,
    RemodelCasino,
    ReorganizeCasino,
    AssignReorganizedDice,
    Gamble,
    DecideLayOff,
    SettleGamble,
    ProposeTrade,
    AcceptTrade,
    RejectTrade,
    EndTurn,
)

# ---------------------------------------------------------------------------------------------
# Events


@dataclass(frozen=True, slots=True)
class GameStarted:
    players: int
    banker: int = 0


@dataclass(frozen=True, slots=True)
class StartingCardsDealt:
    """`hands[seat]` are that seat's two lots; `set_aside` the F cards redrawn in a 2-player
    game; the End of Game card went in at `end_card_position` (0 = top) of what was left."""

    hands: tuple[tuple[str, ...], ...]
    set_aside: tuple[str, ...]
    end_card_position: int
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class CasinoPaid:
    """One casino's payment when its card came up: `points` to `boss` (None: no single boss)."""

    lots: tuple[str, ...]
    colour: Colour
    boss: int | None
    points: int
    money: int


@dataclass(frozen=True, slots=True)
class CardDrawn:
    seat: int
    card: str  # a lot id, or "END"
    pays: str  # a casino colour, or "strip"
    takeover: Takeover
    die_value: int = 0  # the value of the drawer's die after a take-over of a tile
    die_moved_from: str | None = None  # where the drawer's die came from when all were placed
    payouts: tuple[CasinoPaid, ...] = ()
    points: tuple[int, ...] = ()  # every seat's score after this payment
    transfers: tuple[Transfer, ...] = ()
    game_over: bool = False


@dataclass(frozen=True, slots=True)
class CasinoBuilt:
    seat: int
    lot: str
    colour: Colour
    die: int
    die_from: str | None
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class CasinoSprawled:
    seat: int
    lot: str
    colour: Colour
    die: int
    die_from: str | None
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class CasinoRemodelled:
    seat: int
    lots: tuple[str, ...]
    old_colour: Colour
    colour: Colour
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class CasinoReorganized:
    """Paid for; the dice on `lots` (all dice of the casino) are rerolled next."""

    seat: int
    lots: tuple[str, ...]
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class ReorganizedDiceAssigned:
    seat: int
    placements: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class GambleOffered:
    seat: int
    boss: int
    lot: str
    amount: int


@dataclass(frozen=True, slots=True)
class LayOffDecided:
    seat: int
    lay_off: bool


@dataclass(frozen=True, slots=True)
class GambleSettled:
    seat: int
    boss: int
    roll: int
    amount: int
    lay_off: bool
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class TradeProposed:
    offer: TradeOffer


@dataclass(frozen=True, slots=True)
class TradeAccepted:
    offer: TradeOffer
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class TradeRejected:
    offer: TradeOffer


@dataclass(frozen=True, slots=True)
class TurnEnded:
    seat: int
    next_seat: int


Event = (
    GameStarted
    | StartingCardsDealt
    | CardDrawn
    | CasinoBuilt
    | CasinoSprawled
    | CasinoRemodelled
    | CasinoReorganized
    | ReorganizedDiceAssigned
    | GambleOffered
    | LayOffDecided
    | GambleSettled
    | TradeProposed
    | TradeAccepted
    | TradeRejected
    | TurnEnded
)
EVENT_TYPES: tuple[type, ...] = (
    GameStarted,
    StartingCardsDealt,
    CardDrawn,
    CasinoBuilt,
    CasinoSprawled,
    CasinoRemodelled,
    CasinoReorganized,
    ReorganizedDiceAssigned,
    GambleOffered,
    LayOffDecided,
    GambleSettled,
    TradeProposed,
    TradeAccepted,
    TradeRejected,
    TurnEnded,
)

# ---------------------------------------------------------------------------------------------
# State


@dataclass(frozen=True, slots=True)
class Space:
    """One lot: a marker (an owned lot) or a tile, which may hold one die."""

    marker: int | None = None
    tile: Colour | None = None
    owner: int | None = None  # owner of the die on the tile; None: no die
    die: int = 0


EMPTY_SPACE = Space()


@dataclass(frozen=True, slots=True)
class PendingReorganization:
    """A reorganization between payment and the dice going back. `values` is the roll (one
    per lot of `lots`, None until rolled); `awaiting` the seats still placing their dice."""

    seat: int
    lots: tuple[str, ...]
    owners: tuple[int, ...]
    values: tuple[int, ...] | None = None
    awaiting: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class PendingGamble:
    seat: int
    boss: int
    lot: str
    amount: int
    lay_off: bool | None = None
    roll: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class State:
    players: int = 0
    phase: Phase = Phase.SHUFFLE
    banker: int = 0
    current: int = 0
    contenders: tuple[int, ...] = ()
    deck: tuple[str, ...] = ()  # top first; hidden by `view`
    cards_left: int = 0
    discards: tuple[str, ...] = ()  # every card drawn or set aside, in order (public)
    spaces: tuple[Space, ...] = ()
    cash: tuple[int, ...] = ()
    points: tuple[int, ...] = ()
    gambled: bool = False
    reorganized: frozenset[str] = frozenset()  # lots whose dice were reorganized this turn
    pending_reorganization: PendingReorganization | None = None
    pending_gamble: PendingGamble | None = None
    pending_trade: TradeOffer | None = None
    trades_this_turn: int = 0
    end_reason: str = ""
