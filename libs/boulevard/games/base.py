"""The one shape every game has: pure functions over frozen data (a decider, see STYLE.md).

A game never produces randomness: `chance(state)` says what it needs, the engine asks the
dice service, and feeds the answer back through `evolve` as a `ChanceResolved` event. Money
moves only through events that carry `transfers`, so the ledger never re-implements rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, Protocol, TypeVar

from boulevard.games.clock import TimeControl

Seat = int
"""A player's seat, 0-based, in turn order of the table (not of play)."""

BANK = "bank"


def seat_account(seat: Seat) -> str:
    """The ledger account name of a seat's money inside one game."""
    return f"seat:{seat}"


# A field added to a recorded type after logs holding that type were written: the codec
# leaves it out while it has its default, so every older record encodes to the very bytes
# it was stored as (the audit re-encodes each payload and compares bytes).
# Use: `name: T = field(default=..., metadata=ADDED_LATER)`.
OMITTED_AT_DEFAULT = "boulevard.omitted_at_default"
ADDED_LATER: Mapping[str, bool] = {OMITTED_AT_DEFAULT: True}


class RulesError(Exception):
    """A command the rules refuse. `code` is stable (tests and clients match on it); the
    message is for a player to read. A refused command produces no events."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Transfer:
    """Money moved by an event: `amount` (whole dollars of the game's unit, > 0) goes from
    account `source` to account `target` (`bank`, `seat:N`, or a game-defined escrow)."""

    source: str
    target: str
    amount: int
    reason: str


class ChanceKind(StrEnum):
    ROLL = "roll"  # `count` dice of `sides` sides, each value in 1..sides
    SHUFFLE = "shuffle"  # a uniform permutation of range(count)


@dataclass(frozen=True, slots=True)
class ChanceRequest:
    """Randomness a game needs before anyone can act. `purpose` is the game's own label
    (e.g. "start_player", "reorganize", "deck") so the answer can be routed."""

    purpose: str
    kind: ChanceKind
    count: int
    sides: int = 6


@dataclass(frozen=True, slots=True)
class ChanceResolved:
    """The answer to a ChanceRequest, recorded as an event. `nonce` is the dice service's
    outcome number (the proof reference an auditor checks); -1 when resolved in-process."""

    purpose: str
    kind: ChanceKind
    values: tuple[int, ...]
    nonce: int = -1
    sides: int = 6


def hidden_until_end(event: object) -> bool:
    """Whether an event's values stay hidden from players and watchers until the game ends:
    a shuffle's (they are the deck's future order)."""
    return isinstance(event, ChanceResolved) and event.kind is ChanceKind.SHUFFLE


@dataclass(frozen=True, slots=True)
class GameConfig:
    players: int
    options: tuple[tuple[str, str], ...] = ()

    def option(self, name: str, default: str = "") -> str:
        return dict(self.options).get(name, default)


@dataclass(frozen=True, slots=True)
class GameOption:
    """One creation option a game accepts: the exact values allowed and the default."""

    values: tuple[str, ...]
    default: str
    description: str = ""


@dataclass(frozen=True, slots=True)
class PlayerSeat:
    seat: Seat
    player_id: str
    bot: bool = False
    seed_commitment: str = ""  # hex SHA-256 of the seat's client seed ("" = no seed)
    # Lowercase hex of the raw Ed25519 key that signs this seat's commands (bots: the
    # operator's bot key); see docs/auditing.md.
    public_key: str = ""


@dataclass(frozen=True, slots=True)
class GameCreated:
    """The platform's first event of every game (the engine's, not a game's own): who sits
    where, the options, and the dice commitment published before anyone acts."""

    game: str
    config: GameConfig
    seats: tuple[PlayerSeat, ...]
    seed_commitment: str
    match_id: str = ""
    # Seats reveal their client seeds (ClientSeedRevealed) until this time; then the seeds
    # are fixed (ClientSeedsFixed) and chance may run. 0: no deadline (every seat must).
    reveal_deadline_unix_ms: int = 0
    # The rules that decide this game, for its whole life: "<number>:<sha256>" of its
    # game's recorded rules versions (boulevard.games.versions). "" (games created before
    # rules were pinned): version 1.
    rules_version: str = ""
    # Each seat's clock (boulevard.games.clock); None: no clock, seats wait forever.
    time_control: TimeControl | None = field(default=None, metadata=ADDED_LATER)
    # The engine's promise that this game's GameFinished will carry the dice log's signed
    # head (`GameFinished.dice_head`): an audit fails a flagged game that ends without one.
    # False: a game created before dice anchors (or while older engines, which record none,
    # may still finish it: a rolling upgrade); its head is checked when present.
    dice_anchored: bool = field(default=False, metadata=ADDED_LATER)


@dataclass(frozen=True, slots=True)
class ClientSeedRevealed:
    """A seat revealed the client seed it committed to in GameCreated (the engine checked
    SHA-256 of it against the commitment before recording it)."""

    seat: Seat
    client_seed: str


@dataclass(frozen=True, slots=True)
class ClientSeedsFixed:
    """The client seeds the game's dice use, per seat; a seat in `missing_seats` had not
    revealed by the deadline and plays with an empty seed. No chance before this event."""

    client_seeds: tuple[str, ...]
    missing_seats: tuple[Seat, ...] = ()


@dataclass(frozen=True, slots=True)
class DiceHeadRef:
    """The dice service's signed head of a game's outcome log, as GameFinished records it:
    exactly what verifies its signature (the head's canonical JSON, docs/fairness.md, with
    the game id as `log_id`). `root_hash` and `signature` are lowercase hex."""

    tree_size: int
    root_hash: str
    timestamp_unix_ms: int
    key_id: str
    signature: str


@dataclass(frozen=True, slots=True)
class GameFinished:
    """The platform's last event of a finished game: the outcome, with players named, and
    (games of this release on) the dice log's signed head over every leaf before the
    reveal, so the game's chain — and the ledger's anchor of it — commits to its dice."""

    ranking: tuple[tuple[Seat, ...], ...]
    scores: tuple[int, ...]
    player_ids: tuple[str, ...]
    reason: str = ""
    dice_head: DiceHeadRef | None = field(default=None, metadata=ADDED_LATER)


@dataclass(frozen=True, slots=True)
class CommandAccepted:
    """The platform's record of a player's command, appended in the same commit as (and
    just before) the events the command produced: who asked (seat, authenticated player),
    what exactly they signed (`action`: hex of the Action message's bytes), and the
    signature (hex) by the seat's key. docs/auditing.md says how to check it."""

    seat: Seat
    player_id: str
    idempotency_key: str
    expected_version: int
    action: str
    signature: str
    # Played by the platform's bot for a seat that timed out (SeatTimedOut): signed with the
    # stand-in key that event names, not the seat's own. The money stays the seat's.
    stand_in: bool = field(default=False, metadata=ADDED_LATER)


@dataclass(frozen=True, slots=True)
class SeatTimedOut:
    """A seat's clock reached zero at `deadline_unix_ms` (re-derived from the log by anyone:
    boulevard.games.clock); the seat is absent from now on and the platform's bot plays it,
    signing with `stand_in_key` (lowercase hex of a raw Ed25519 public key)."""

    seat: Seat
    deadline_unix_ms: int
    stand_in_key: str


@dataclass(frozen=True, slots=True)
class SeatReclaimed:
    """The seat's player took the seat back from the platform's bot (turn-based games): a
    signed request by the seat's own key (docs/auditing.md, "Clocks"), for the version it
    follows. The seat's clock starts a fresh move."""

    seat: Seat
    player_id: str
    expected_version: int
    signature: str


PLATFORM_EVENTS: tuple[type, ...] = (
    GameCreated,
    GameFinished,
    CommandAccepted,
    ClientSeedRevealed,
    ClientSeedsFixed,
    SeatTimedOut,
    SeatReclaimed,
)


@dataclass(frozen=True, slots=True)
class Outcome:
    """`ranking` lists groups of seats best first; seats in one group share that place."""

    finished: bool
    ranking: tuple[tuple[Seat, ...], ...] = ()
    scores: tuple[int, ...] = ()
    reason: str = ""

    @property
    def winners(self) -> tuple[Seat, ...]:
        return self.ranking[0] if self.ranking else ()


class RandomSource(Protocol):
    """What a bot needs of a random generator (random.Random satisfies it). Bots take one
    as an argument so the rules packages never touch global randomness."""

    def random(self) -> float: ...
    def randrange(self, start: int, stop: int | None = ..., step: int = ...) -> int: ...


S = TypeVar("S")
C = TypeVar("C")
E = TypeVar("E")
V = TypeVar("V")

Bot = Callable[[Any, Sequence[Any], Seat, RandomSource], Any]
"""A bot sees only what its seat may see: (view, legal commands, seat, rng) -> command."""


@dataclass(frozen=True)
class GameDefinition(Generic[S, C, E, V]):
    """Everything the platform knows about one game. The engine, the ledger and the bots
    reach a game only through this record (and `REGISTRY`)."""

    name: str
    title: str
    min_players: int
    max_players: int
    command_types: tuple[type, ...]
    event_types: tuple[type, ...]
    initial_state: Callable[[], S]
    new_game: Callable[[GameConfig], Sequence[E]]
    decide: Callable[[C, S], Sequence[E]]
    evolve: Callable[[S, E | ChanceResolved], S]
    chance: Callable[[S], ChanceRequest | None]
    legal_commands: Callable[[S, Seat], Sequence[C]]
    view: Callable[[S, Seat | None], V]
    outcome: Callable[[S], Outcome]
    money: Callable[[S], Mapping[Seat, int]]
    render: Callable[[V], str]
    bots: Mapping[str, Bot] = field(default_factory=dict)
    view_type: type | None = None
    # One event in words for people watching (`boulevard watch`, the demo): (event, the
    # seats' names) -> a short sentence. None: the table shows the event's type.
    describe: Callable[[Any, Sequence[str]], str] | None = None
    # The options `new_game` understands; anything else is refused at creation. The
    # default, no options, is the safe one for a game that declares none.
    options: Mapping[str, GameOption] = field(default_factory=dict)


def transfers_of(event: object) -> tuple[Transfer, ...]:
    """The money an event moves: its `transfers` field, or nothing."""
    transfers: tuple[Transfer, ...] = getattr(event, "transfers", ())
    return transfers


def check_options(
    game: GameDefinition[Any, Any, Any, Any], options: Sequence[tuple[str, str]]
) -> None:
    """Refuse (RulesError `bad_option`) an option the game does not declare, a value outside
    its schema, or an option given twice."""
    seen: set[str] = set()
    for name, value in options:
        schema = game.options.get(name)
        if schema is None:
            known = ", ".join(sorted(game.options)) or "none"
            raise RulesError(
                "bad_option", f"{game.title} has no option {name!r} (options: {known})"
            )
        if name in seen:
            raise RulesError("bad_option", f"option {name!r} is given twice")
        seen.add(name)
        if value not in schema.values:
            raise RulesError(
                "bad_option", f"option {name} takes {' or '.join(schema.values)}, not {value!r}"
            )
