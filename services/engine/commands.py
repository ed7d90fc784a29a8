"""The commands that change a game, each as the steps the pipeline runs for it.

`Engine.handle` (services/engine/engine.py) is the one path every command takes: authorize,
load, settle, verify, decide, append at the expected version (evolve, snapshot), settle,
answer. What differs from one command to another is here, one class per command: what its
request must be (checked when it is built, before anything is read), what the loaded game
must show and whether the log holds it already (`verify`), and what happens (`decide`).
None of these methods touches the event store; the few that need the outside world (the
dice service, the clock) are handed it when the command is built.

The commands no player sends have the same shape: a seat's clock running out (`TimeOut`)
and a bot's move for an absent seat (`StandIn`), issued by the clock sweeper.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import structlog

from boulevard.api.v1 import engine_pb2
from boulevard.audit.signing import (
    MAX_IDEMPOTENCY_KEY,
    SigningKey,
    command_signing_bytes,
    parse_public_key,
    reclaim_signing_bytes,
    verify,
)
from boulevard.contract import mapping
from boulevard.fairness import MAX_CLIENT_SEED_BYTES, client_seed_commitment, is_commitment
from boulevard.games import REGISTRY
from boulevard.games.base import (
    ClientSeedRevealed,
    CommandAccepted,
    GameConfig,
    GameCreated,
    PlayerSeat,
    RulesError,
    SeatReclaimed,
    SeatTimedOut,
    check_options,
)
from boulevard.games.clock import ClockKind, TimeControl
from boulevard.games.versions import RulesVersion, for_release
from boulevard.platform.auth import PlayerClaims
from boulevard.platform.errors import (
    Aborted,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)
from services.engine.chance import ChanceSource
from services.engine.sessions import Answer, CommandResult, Session

log = structlog.get_logger(__name__)

GAME_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")  # a well-formed game (and match) id


class Command(Protocol):
    """One request to change one game, as `Engine.handle` runs it. The pipeline calls the
    steps in the order they are listed here; each raises the error the caller gets. What
    the request must be is checked when the command is built (`__post_init__`), before
    anything is read."""

    # Resolve chance owed from before (a crash between an append and its chance) before
    # deciding. Not for a seed reveal: past the deadline that would fix the seeds first.
    settles_first: ClassVar[bool]
    # Answered with the command's envelopes and a signed receipt (a player's commands); the
    # others get the game's version alone.
    receipted: ClassVar[bool]

    @property
    def game_id(self) -> str: ...

    @property
    def claims(self) -> PlayerClaims | None:
        """The seat's token the command came with (None: the engine's own, or an
        operator's): it must be for this game."""

    @property
    def causation(self) -> str:
        """The key the log records the command's events under (each envelope's
        causation_id): what lets a retry find the first run."""

    @property
    def pinned(self) -> bool:
        """The caller pinned the version it decided on: a lost race is ABORTED, not
        retried."""

    async def open(self) -> Session:
        """The game when the log has none: a new one (creation), else NOT_FOUND."""

    def verify(self, session: Session) -> CommandResult | None:
        """Refuse a command the loaded game does not accept from this caller (a signature
        that does not verify under the seat's key, a seat the game does not have). Where
        the log holds the command already (a retry): the versions it wrote, which the
        caller is answered with; nothing is decided or appended."""

    async def decide(self, session: Session) -> Sequence[Any]:
        """The events the command adds to the log, or none when there is nothing to add."""

    def unconfirmed(self) -> str | None:
        """What to tell the caller when the store did not confirm the append (the command
        may or may not be stored), or None to pass the store's error on as it is."""


@dataclass(frozen=True, slots=True)
class SeatRequest:
    seat: int
    player_id: str
    seed_commitment: str = ""  # hex SHA-256 of the seat's client seed; "" = no seed
    bot: bool = False
    public_key: str = ""  # hex Ed25519 key that will sign this seat's commands


# SubmitAction's answer: the pipeline's own (the name the engine's callers know).
Submitted = Answer


@dataclass(frozen=True, slots=True)
class SeedRevealed:
    version: int
    all_revealed: bool
    deadline_unix_ms: int
    # The engine's signature over (game, version, head, time): the seat's proof that the
    # log held its reveal by `version`, should it ever be dropped (docs/auditing.md).
    receipt: engine_pb2.Receipt | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Created:
    game_id: str
    tokens: tuple[str, ...]
    seed_commitment: str


class _Existing:
    """The `open` step of every command but creation: a game must exist to act in it."""

    game_id: str

    async def open(self) -> Session:
        raise NotFound(f"no game {self.game_id!r}")


def check_public_key(seat: int, public_key: str) -> None:
    """A seat's key must be present and well formed before a game is created with it."""
    if not public_key:
        raise InvalidArgument(
            f"seat {seat} has no public_key: every seat signs its moves (docs/auditing.md)"
        )
    try:
        parse_public_key(public_key)
    except ValueError as err:
        raise InvalidArgument(f"seat {seat}: {err}") from None


@dataclass
class Submit(_Existing):
    """A seat's signed move (SubmitAction): `signed` is the exact bytes the seat signed
    (the Action message's deterministic encoding); `action` the Action itself, mapped to the
    game's command once the game is loaded (the mapping depends on the game and its rules
    version), or `command` when the caller holds the game's command already."""

    game_id: str
    claims: PlayerClaims
    expected_version: int
    idempotency_key: str
    signed: bytes
    signature: bytes
    action: engine_pb2.Action | None = None
    command: Any = None
    settles_first: ClassVar[bool] = True
    receipted: ClassVar[bool] = True
    _accepted: CommandAccepted | None = None

    @property
    def causation(self) -> str:
        return f"cmd:{self.idempotency_key}"

    @property
    def pinned(self) -> bool:
        return bool(self.expected_version)

    def verify(self, session: Session) -> CommandResult | None:
        """The action is one of this game's commands (the Action mapped once, here), for
        the token's seat, under a well-formed idempotency key, signed with the key bound to
        the seat in GameCreated, by the player who holds the seat (INVALID_ARGUMENT,
        PERMISSION_DENIED, UNAUTHENTICATED). It yields the CommandAccepted record."""
        if self.command is None:
            if self.action is None:
                raise InvalidArgument("action is required")
            self.command = mapping.action_to_command(session.game, self.action)
        claims = self.claims
        if getattr(self.command, "seat", claims.seat) != claims.seat:
            raise PermissionDenied(
                f"you play seat {claims.seat}; you cannot act for seat {self.command.seat}"
            )
        key = self.idempotency_key
        if not key or len(key) > MAX_IDEMPOTENCY_KEY:
            # The key is what stops a signed command from being replayed: it runs once.
            raise InvalidArgument(
                f"idempotency_key is required, 1-{MAX_IDEMPOTENCY_KEY} characters "
                "(a signed command runs once per key)"
            )
        if not self.signature:
            raise Unauthenticated("the command is not signed: sign it with your seat's key")
        seat = next((s for s in session.created.seats if s.seat == claims.seat), None)
        if seat is None or not seat.public_key:
            raise PermissionDenied(f"seat {claims.seat} has no key bound to it in this game")
        message = command_signing_bytes(
            self.game_id, claims.seat, self.expected_version, key, self.signed
        )
        if not verify(bytes.fromhex(seat.public_key), self.signature, message):
            raise PermissionDenied(f"the signature does not verify under seat {claims.seat}'s key")
        if claims.player_id != seat.player_id:
            raise PermissionDenied(f"seat {claims.seat} is not {claims.player_id!r}'s in this game")
        self._accepted = CommandAccepted(
            seat=claims.seat,
            player_id=claims.player_id,  # the authenticated player (the token's)
            idempotency_key=key,
            expected_version=self.expected_version,
            action=self.signed.hex(),
            signature=self.signature.hex(),
        )
        return session.commands.get(self.causation)

    async def decide(self, session: Session) -> Sequence[Any]:
        if session.finished is not None:
            raise FailedPrecondition("the game is over")
        if self.expected_version and self.expected_version != session.version:
            raise Aborted(
                f"the game is at version {session.version}, not {self.expected_version}: "
                "reload and decide again"
            )
        events = session.game.decide(self.command, session.state)
        if not events:
            raise FailedPrecondition("that action changes nothing")
        assert self._accepted is not None, "verify() runs before decide()"
        # The command is recorded with its events, in the same atomic append.
        return [self._accepted, *events]

    def unconfirmed(self) -> str:
        # Only a retry with the same key can tell (it returns the recorded result, or
        # applies the command once).
        if self.idempotency_key:
            return (
                "the event store did not confirm this action, so it may or may not "
                "have been applied: retry with the same idempotency_key"
            )
        return (
            "the event store did not confirm this action, so it may or may "
            "not have been applied: reload the game before acting again (send an "
            "idempotency_key to make such retries safe)"
        )


@dataclass
class Reveal(_Existing):
    """A seat's client seed (RevealSeed), checked against the commitment it made before
    the server seed was drawn; once every seat has revealed, the game's dice can run."""

    game_id: str
    claims: PlayerClaims
    client_seed: str
    clock: Callable[[], int]
    settles_first: ClassVar[bool] = False
    receipted: ClassVar[bool] = True
    pinned: bool = False

    def __post_init__(self) -> None:
        if len(self.client_seed.encode("utf-8")) > MAX_CLIENT_SEED_BYTES:
            raise InvalidArgument(f"a client seed is at most {MAX_CLIENT_SEED_BYTES} bytes")

    @property
    def causation(self) -> str:
        return f"reveal:{self.claims.seat}"

    def verify(self, session: Session) -> None:
        if not 0 <= self.claims.seat < len(session.created.seats):
            raise PermissionDenied(f"this game has no seat {self.claims.seat}")
        # Never held as done: a second reveal of the same seed settles and answers again.

    async def decide(self, session: Session) -> Sequence[Any]:
        seat = self.claims.seat
        known = session.client_seeds.get(seat)
        if known == self.client_seed:
            return []  # revealed already (a retry): nothing to add
        if known is not None:
            raise InvalidArgument("your seat revealed another seed already")
        committed = session.created.seats[seat].seed_commitment
        if session.seeds_fixed:
            raise FailedPrecondition("the game's client seeds are fixed already")
        if not committed:
            raise FailedPrecondition(f"seat {seat} committed to no client seed")
        if client_seed_commitment(self.client_seed) != committed:
            raise InvalidArgument(
                f"SHA-256 of that seed is not seat {seat}'s commitment {committed}"
            )
        deadline = session.created.reveal_deadline_unix_ms
        if deadline and self.clock() >= deadline:
            raise FailedPrecondition("the reveal deadline has passed: the seat plays with ''")
        return [ClientSeedRevealed(seat, self.client_seed)]

    def unconfirmed(self) -> None:
        return None


@dataclass
class Create:
    """A new game (CreateGame, MatchFormed), or for a retry the game its request made. A
    matched game's id is its match id; any other game's id is `game_id_for(creator,
    request_id)`."""

    game_id: str
    request_id: str
    game_name: str
    seats: Sequence[SeatRequest]
    options: Sequence[tuple[str, str]]
    match_id: str
    chance: ChanceSource
    clock: Callable[[], int]
    reveal_ms: int
    time_control: TimeControl | None = None
    # New games take this release's rules ("": the newest; engine_new_games_rules_release).
    rules_release: str = ""
    settles_first: ClassVar[bool] = False
    receipted: ClassVar[bool] = False
    pinned: bool = False
    claims: None = None  # the caller is an operator or the matchmaker (the server checked)

    @property
    def causation(self) -> str:
        return f"create:{self.request_id}"

    def __post_init__(self) -> None:
        """Refuse a request for a game the rules cannot host (the caller is an operator or
        the matchmaker: the server and the app checked who asks)."""
        if not self.request_id:
            raise InvalidArgument("request_id is required (it makes CreateGame idempotent)")
        if self.game_name not in REGISTRY:
            raise InvalidArgument(
                f"unknown game {self.game_name!r}; known: {', '.join(sorted(REGISTRY))}"
            )
        game = self.rules().definition
        seats = self.seats
        if not game.min_players <= len(seats) <= game.max_players:
            raise InvalidArgument(
                f"{game.title} takes {game.min_players}-{game.max_players} players, "
                f"not {len(seats)}"
            )
        if sorted(s.seat for s in seats) != list(range(len(seats))):
            raise InvalidArgument("seats must be numbered 0..n-1, each once")
        if any(not s.player_id for s in seats):
            raise InvalidArgument("every seat needs a player_id")
        if len({s.player_id for s in seats}) != len(seats):
            raise InvalidArgument("a player may take one seat only; player ids repeat")
        for s in seats:
            if s.seed_commitment and not is_commitment(s.seed_commitment):
                raise InvalidArgument(
                    f"seat {s.seat}: client_seed_commitment must be 64 lowercase hex digits "
                    "(SHA-256 of the client seed)"
                )
        try:
            check_options(game, self.options)
        except RulesError as err:
            raise InvalidArgument(f"bad options: {err.message}") from err
        for s in seats:
            check_public_key(s.seat, s.public_key)
        if self.match_id and not GAME_ID.match(self.match_id):
            raise InvalidArgument("malformed match id")

    def rules(self) -> RulesVersion:
        """The rules a new game takes: the newest, or during a rolling upgrade the ones of
        the release the engine was told to keep creating games with."""
        return for_release(self.game_name, self.rules_release)

    async def open(self) -> Session:
        """A new game: the dice service draws and commits its seed knowing only the seats'
        commitments (the seeds themselves come later, with RevealSeed)."""
        ordered = sorted(self.seats, key=lambda s: s.seat)
        opened = await self.chance.open_game(
            self.game_id,
            [s.seed_commitment for s in ordered],
            self.clock() + self.reveal_ms,
        )
        created = GameCreated(
            game=self.game_name,
            config=GameConfig(len(ordered), tuple(sorted(self.options))),
            seats=tuple(
                PlayerSeat(
                    s.seat,
                    s.player_id,
                    s.bot,
                    seed_commitment=s.seed_commitment,
                    public_key=s.public_key,
                )
                for s in ordered
            ),
            seed_commitment=opened.commitment,
            match_id=self.match_id,
            reveal_deadline_unix_ms=opened.reveal_deadline_unix_ms,
            time_control=self.time_control,
            # Pinned for the game's whole life (docs/architecture.md, "Rules versions").
            rules_version=self.rules().pin,
            # Its GameFinished will carry the dice log's signed head — unless the dice are
            # local (tests), or engines of an older release, which record none, may still
            # finish it (a rolling upgrade names their release: docs/operations.md).
            dice_anchored=self.chance.anchored and not self.rules_release,
        )
        return Session.new(self.game_id, created)

    def verify(self, session: Session) -> CommandResult | None:
        """A stored game: the one this request made, which a retry must ask for again (the
        seats' keys were checked when the request was built; nobody signs a creation)."""
        if not session.version:
            return None
        ordered = sorted(self.seats, key=lambda s: s.seat)
        wanted = (self.game_name, tuple((s.seat, s.player_id) for s in ordered))
        have = (session.created.game, tuple((s.seat, s.player_id) for s in session.created.seats))
        if wanted != have:
            raise InvalidArgument("this request_id was already used to create a different game")
        return CommandResult(1, 1)  # its GameCreated

    async def decide(self, session: Session) -> Sequence[Any]:
        try:
            setup = session.game.new_game(session.created.config)
        except RulesError as err:
            raise InvalidArgument(f"bad options: {err.message}") from err
        return [session.created, *setup]

    def unconfirmed(self) -> None:
        return None


# The bot that plays a seat whose time ran out: the game's heuristic bot, as for bot seats.
STAND_IN_BOT = "heuristic"


@dataclass
class TimeOut(_Existing):
    """The platform's own step, issued by the clock sweeper, not a player: every seat whose
    deadline has passed is recorded timed out (`SeatTimedOut`, naming the deadline and the
    key the bot signs its moves with). A seat already timed out has no running clock, so a
    timeout is recorded once, whichever replica sweeps first."""

    game_id: str
    clock: Callable[[], int]
    stand_in_key: SigningKey
    settles_first: ClassVar[bool] = True
    receipted: ClassVar[bool] = False
    pinned: bool = False
    causation: str = "clock:timeout"
    claims: None = None  # the engine's own

    def verify(self, session: Session) -> None:
        pass  # `decide` finds what is overdue now; nothing overdue, nothing added

    async def decide(self, session: Session) -> Sequence[Any]:
        key = self.stand_in_key.public_hex
        overdue = session.overdue(self.clock())
        for seat, deadline in overdue:
            log.info("seat timed out", game_id=self.game_id, seat=seat, deadline=deadline)
        return [SeatTimedOut(seat, deadline, key) for seat, deadline in overdue]

    def unconfirmed(self) -> None:
        return None


@dataclass
class StandIn(_Existing):
    """One move of the platform's bot for a seat that timed out and that the game asks to
    act (docs/games/*.md, "Absence"): signed with the stand-in key and marked `stand_in`;
    the seat's money stays the seat's. The bot's randomness is seeded by the game, version
    and seat, so two replicas racing for the move choose the same one."""

    game_id: str
    stand_in_key: SigningKey
    settles_first: ClassVar[bool] = True
    receipted: ClassVar[bool] = False
    pinned: bool = False
    causation: str = "stand-in"
    claims: None = None  # the engine's own

    def verify(self, session: Session) -> None:
        pass  # `decide` picks the move of the seat the game asks for now

    async def decide(self, session: Session) -> Sequence[Any]:
        absent = session.absent_to_act()
        if not absent:
            return []
        seat, version, game = absent[0], session.version, session.game
        legal = session.legal(seat)
        bot = game.bots.get(STAND_IN_BOT) or next(iter(game.bots.values()))
        rng = random.Random(f"{self.game_id}:{version}:{seat}")
        command = bot(game.view(session.state, seat), legal, seat, rng)
        action = mapping.command_to_action(game, command).SerializeToString(deterministic=True)
        key = f"stand-in:{version}:{seat}"
        signature = self.stand_in_key.sign_command(self.game_id, seat, version, key, action)
        accepted = CommandAccepted(
            seat,
            session.created.seats[seat].player_id,
            key,
            version,
            action.hex(),
            signature.hex(),
            stand_in=True,
        )
        self.causation = f"cmd:{key}"
        return [accepted, *game.decide(command, session.state)]

    def unconfirmed(self) -> None:
        return None


@dataclass(frozen=True, slots=True)
class Reclaimed:
    version: int  # the version of the SeatReclaimed event (or of the game, for a retry)
    receipt: engine_pb2.Receipt


@dataclass
class Reclaim(_Existing):
    """A seat that timed out in a turn-based game takes its place back from the platform's
    bot (ReclaimSeat): signed by the seat's own key over the reclaim signing bytes, for the
    version it saw (the bot may move meanwhile: then ABORTED, and the seat signs again)."""

    game_id: str
    claims: PlayerClaims
    expected_version: int
    signature: bytes
    settles_first: ClassVar[bool] = True
    receipted: ClassVar[bool] = True
    pinned: bool = True

    def __post_init__(self) -> None:
        if not self.signature:
            raise Unauthenticated("a reclaim must be signed by the seat's key")

    @property
    def causation(self) -> str:
        return f"reclaim:{self.claims.seat}:{self.expected_version}"

    def verify(self, session: Session) -> CommandResult | None:
        seat = self.claims.seat
        seats = session.created.seats
        if not 0 <= seat < len(seats) or seats[seat].player_id != self.claims.player_id:
            raise PermissionDenied(f"this game has no seat {seat} for you")
        message = reclaim_signing_bytes(self.game_id, seat, self.expected_version)
        if not verify(bytes.fromhex(seats[seat].public_key), self.signature, message):
            raise PermissionDenied(f"the signature does not verify under seat {seat}'s key")
        return session.commands.get(self.causation)

    async def decide(self, session: Session) -> Sequence[Any]:
        control = session.created.time_control
        clocks = session.clocks
        seat = self.claims.seat
        if control is None or clocks is None or control.kind is not ClockKind.TURN_BASED:
            raise FailedPrecondition("only a turn-based game's seat can be taken back")
        if session.finished is not None:
            raise FailedPrecondition("the game is over")
        if not clocks.seats[seat].absent:
            raise FailedPrecondition(f"seat {seat} has not timed out: it is yours already")
        if self.expected_version != session.version:
            raise Aborted(
                f"the game is at version {session.version}, not {self.expected_version}: "
                "sign the reclaim for the version you see"
            )
        return [SeatReclaimed(seat, self.claims.player_id, session.version, self.signature.hex())]

    def unconfirmed(self) -> str:
        return (
            "the event store did not confirm the reclaim: read the game again (the seat is "
            "yours if it shows you not absent)"
        )
