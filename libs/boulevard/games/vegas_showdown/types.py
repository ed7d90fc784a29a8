"""Vegas Showdown commands, events, state and view: closed sets of frozen values.

Seats are 0-based; clockwise (the button passes "to the left") is ascending seat number.
Every physical tile has an id (see `data.py`: ids run through the tile list, each kind's
copies together), so "every tile is somewhere" is a checkable fact. Tracks are named
`slots`, `lounge`, `restaurant`, `slots_2` (5 players) and `premier_1`..`premier_4`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from boulevard.games.base import ChanceResolved, Transfer

# --- commands ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Placement:
    """Tile `tile` with its top-left cell at (`col`, `row`) of the sheet, turned `rotation`
    quarter turns clockwise from its printed orientation (0..3)."""

    tile: int
    col: int
    row: int
    rotation: int = 0


@dataclass(frozen=True, slots=True)
class StartTurn:
    """The button holder starts the turn: lower prices, flip new tiles, collect income."""

    seat: int


@dataclass(frozen=True, slots=True)
class Bid:
    """Put your bid marker on `amount` of track `track`."""

    seat: int
    track: str
    amount: int


@dataclass(frozen=True, slots=True)
class Renovate:
    """Take 0-2 tiles off your sheet, then place 0-2 tiles you own (any off-sheet tile)."""

    seat: int
    remove: tuple[int, ...] = ()
    place: tuple[Placement, ...] = ()


@dataclass(frozen=True, slots=True)
class Publicity:
    """+1 Fame, and optionally place one tile you own that is off your sheet."""

    seat: int
    place: Placement | None = None


@dataclass(frozen=True, slots=True)
class PlaceTile:
    """After winning a bid: place one off-sheet tile (the one just bought, or one set aside
    earlier), or none (`placement` unset: everything stays aside)."""

    seat: int
    placement: Placement | None = None


@dataclass(frozen=True, slots=True)
class StageRenovation:
    """Rules version 2: one step of a Renovate built in stages (the whole 0-2 / 0-2 set is
    too large to list): take `remove` off your sheet, or place `place` (exactly one of the
    two). The first step starts the renovation, which is your action until you finish or
    cancel it; removals come before placements, as in the rulebook."""

    seat: int
    remove: int | None = None
    place: Placement | None = None


@dataclass(frozen=True, slots=True)
class FinishRenovation:
    """Rules version 2: carry out the staged renovation (the same checks as `Renovate`)."""

    seat: int


@dataclass(frozen=True, slots=True)
class CancelRenovation:
    """Rules version 2: drop the staged renovation; the sheet is as it was, the action
    still to choose."""

    seat: int


Command = (
    StartTurn
    | Bid
    | Renovate
    | Publicity
    | PlaceTile
    | StageRenovation
    | FinishRenovation
    | CancelRenovation
)

# --- events -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GameStarted:
    """Seats taken, $20 each from the bank; the chance requests of setup follow."""

    players: int
    sheet: str
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class PricesLowered:
    """Step 1: every premier minimum-bid marker went one circle down (`minimums`, per track
    name); `removed` tiles went off the 3 circle and left the game."""

    minimums: tuple[tuple[str, int], ...]
    removed: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class EventCardDrawn:
    """Step 2: an event card came off the deck and was carried out (`done`), or stays in
    play until it can be (`done` false). `fame` is what each seat gained, per seat."""

    card: str
    done: bool
    fame: tuple[int, ...]
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class EventCardDone:
    """A card left in play on an earlier turn could be carried out at last."""

    card: str
    fame: tuple[int, ...]
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class TileFlipped:
    """The top tile of a premier stack went to an empty space, its minimum-bid marker on
    the tile's start price."""

    track: str
    tile: int
    minimum: int


@dataclass(frozen=True, slots=True)
class IncomeCollected:
    """Step 3: each seat got min(Population, Revenue) from the bank."""

    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class BidPlaced:
    """A bid; `outbid` is the seat whose standing bid it beat (it chooses again later)."""

    seat: int
    track: str
    amount: int
    outbid: int | None


@dataclass(frozen=True, slots=True)
class Renovated:
    seat: int
    removed: tuple[int, ...]
    placed: tuple[Placement, ...]


@dataclass(frozen=True, slots=True)
class RenovationStaged:
    """Rules version 2: a step of a staged renovation (`removed` or `placed`). Nothing on
    the sheet changes until `Renovated`."""

    seat: int
    removed: int | None
    placed: Placement | None


@dataclass(frozen=True, slots=True)
class RenovationCancelled:
    """Rules version 2: the staged renovation was dropped."""

    seat: int


@dataclass(frozen=True, slots=True)
class PublicityTaken:
    """`fame` is 1, or 0 while PR Scandal is in effect."""

    seat: int
    fame: int
    placed: Placement | None


@dataclass(frozen=True, slots=True)
class TileBought:
    """Bidding is over: the winner of `track` paid `price` to the bank and owns `tile`."""

    seat: int
    track: str
    tile: int
    price: int
    transfers: tuple[Transfer, ...]


@dataclass(frozen=True, slots=True)
class TilePlaced:
    """A buyer placed one off-sheet tile (`placement`), or none."""

    seat: int
    placement: Placement | None


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """Steps 5-6: bid markers back, no-bid markers removed, the button passed to `button`."""

    turn: int
    button: int


@dataclass(frozen=True, slots=True)
class FinalScore:
    """One seat's end-of-game Fame, category by category (`money` is full $10s, paid to
    the bank by the GameEnded transfers)."""

    seat: int
    casino_full: int
    hotel_full: int
    connected: int
    population: int
    revenue: int
    money: int
    three_quarter_diamonds: int
    full_diamonds: int
    total: int


@dataclass(frozen=True, slots=True)
class GameEnded:
    """`reason`: "sheet_full" or "stack_empty". Final scoring is in `scores`."""

    reason: str
    scores: tuple[FinalScore, ...]
    transfers: tuple[Transfer, ...]


Event = (
    GameStarted
    | PricesLowered
    | EventCardDrawn
    | EventCardDone
    | TileFlipped
    | IncomeCollected
    | BidPlaced
    | Renovated
    | PublicityTaken
    | TileBought
    | TilePlaced
    | TurnEnded
    | GameEnded
    | RenovationStaged
    | RenovationCancelled
)
AnyEvent = Event | ChanceResolved

COMMAND_TYPES: tuple[type, ...] = (
    StartTurn,
    Bid,
    Renovate,
    Publicity,
    PlaceTile,
    StageRenovation,
    FinishRenovation,
    CancelRenovation,
)
# The commands rules version 1 does not have (boulevard.games.vegas_showdown.EARLIER_RULES).
STAGED_COMMANDS: tuple[type, ...] = (StageRenovation, FinishRenovation, CancelRenovation)
EVENT_TYPES: tuple[type, ...] = (
    GameStarted,
    PricesLowered,
    EventCardDrawn,
    EventCardDone,
    TileFlipped,
    IncomeCollected,
    BidPlaced,
    Renovated,
    PublicityTaken,
    TileBought,
    TilePlaced,
    TurnEnded,
    GameEnded,
    RenovationStaged,
    RenovationCancelled,
)

# --- chance purposes --------------------------------------------------------------------

ROLL_FIRST_PLAYER = "first_player"
"""ROLL of one die with as many sides as players: seat value-1 takes the button."""
SHUFFLE_EVENTS = "events"
"""SHUFFLE of the 33 event cards: values[i] is the index (data order) of the i-th card."""
SHUFFLE_STACK_PREFIX = "stack_"
"""SHUFFLE `stack_<size>_<back>` of one size's A or B tiles: values[i] indexes that part's
tiles in id order; the A part goes on top of the B part."""

# --- state ------------------------------------------------------------------------------


class Phase(StrEnum):
    SETUP = "setup"  # waiting for the setup chance
    TURN_START = "turn_start"  # the button holder must start the turn
    ACTIONS = "actions"  # step 4: players choose actions
    PLACING = "placing"  # buyers place (or set aside) in turn order
    FINISHED = "finished"


class ActionKind(StrEnum):
    NONE = "none"
    BID = "bid"
    RENOVATE = "renovate"
    PUBLICITY = "publicity"


@dataclass(frozen=True, slots=True)
class Track:
    """A bid track. Premier: `tile` is the tile on the space (None: empty) and `minimum`
    the marker's circle. Basic: the tile is the top of the stack; `minimum` the yellow
    space."""

    name: str
    tile: int | None
    minimum: int
    bidder: int | None = None
    bid: int = 0
    no_bid: bool = False


@dataclass(frozen=True, slots=True)
class SeatState:
    cash: int
    fame: int = 0
    sheet: tuple[Placement, ...] = ()
    aside: tuple[int, ...] = ()  # owned tiles off the sheet
    action: ActionKind = ActionKind.NONE
    must_act: bool = True  # has not acted this turn, or was out-bid
    publicity_fame: int = 0  # Fame from Publicity so far (for the accounting checks)
    event_fame: int = 0  # Fame from event cards so far


@dataclass(frozen=True, slots=True)
class VegasShowdownState:
    phase: Phase = Phase.SETUP
    players: int = 0
    sheet: str = ""
    pending_chance: tuple[str, ...] = ()
    turn: int = 0
    button: int = 0
    current: int | None = None
    seats: tuple[SeatState, ...] = ()
    tracks: tuple[Track, ...] = ()
    basic_stacks: tuple[tuple[int, ...], ...] = ()  # slots, lounge, restaurant; top first
    premier_stacks: tuple[tuple[int, ...], ...] = ()  # small, medium, large; top first
    stack_parts: tuple[tuple[str, tuple[int, ...]], ...] = ()  # shuffled parts so far
    deck: tuple[str, ...] = ()  # event cards, top first (hidden)
    discards: tuple[str, ...] = ()
    in_play: tuple[str, ...] = ()  # cards that could not be carried out yet
    drawn: tuple[str, ...] = ()  # cards drawn this turn
    removed: tuple[int, ...] = ()  # tiles out of the game
    no_renovate: bool = False
    pr_scandal: bool = False
    to_place: tuple[int, ...] = ()  # buyers still to place, in turn order
    end_reason: str = ""
    scores: tuple[FinalScore, ...] = ()
    # Rules version 2: the current seat's renovation in stages (`staging`), so far.
    staging: bool = False
    staged_remove: tuple[int, ...] = ()
    staged_place: tuple[Placement, ...] = ()


# --- view -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TrackView:
    name: str
    tile: int | None  # premier: the tile on the space; basic: the top of the stack
    tile_name: str
    minimum: int
    top: int
    bidder: int | None
    bid: int
    no_bid: bool
    left: int  # basic: tiles in the stack; premier: 1 with a tile, else 0


@dataclass(frozen=True, slots=True)
class SheetTile:
    tile: int
    name: str
    col: int
    row: int
    rotation: int


@dataclass(frozen=True, slots=True)
class SeatView:
    seat: int
    cash: int
    fame: int
    population: int
    revenue: int
    sheet: tuple[SheetTile, ...]
    aside: tuple[int, ...]
    action: ActionKind
    must_act: bool


@dataclass(frozen=True, slots=True)
class VegasShowdownView:
    """What a seat (or a spectator, `seat` unset) sees: everything on the table and the
    sheets, but of the premier stacks and the event deck only how many are left."""

    seat: int | None
    phase: Phase
    players: int
    sheet: str
    turn: int
    button: int
    current: int | None
    to_place: tuple[int, ...]
    tracks: tuple[TrackView, ...]
    seats: tuple[SeatView, ...]
    premier_left: tuple[int, ...]  # small, medium, large
    events_left: int
    drawn: tuple[str, ...]
    in_play: tuple[str, ...]
    discards: tuple[str, ...]
    removed: tuple[int, ...]
    no_renovate: bool
    pr_scandal: bool
    end_reason: str
    scores: tuple[FinalScore, ...]
    # Rules version 2: the current seat's renovation in stages, so far (public, as the
    # sheets are).
    staging: bool = False
    staged_remove: tuple[int, ...] = ()
    staged_place: tuple[Placement, ...] = ()
