"""The commands that change a game, each as the steps the pipeline runs for it.

`Engine.handle` (services/engine/engine.py) is the one path every command takes: authorize,
load, verify, recorded?, decide, append at the expected version (evolve, snapshot), chance,
receipt. What differs from one command to another is here, one class per command, one
method per step: who may ask (`authorize`), what the loaded game must show (`verify`),
whether the log holds the command already (`recorded`), what happens (`decide`), and what
the caller gets back (`receipt`). None of these methods touches the event store; the few
that need the outside world (the dice service, the clock, the log's envelopes) are handed
it when the command is built.

Commands to come take the same shape: a seat's clock running out, and a bot's move for an
absent seat (the clocks issue), are classes here, issued by a sweeper instead of a player.
"""

from __future__ import annotations

import random
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar

import structlog

from boulevard.api.v1 import engine_pb2, events_pb2
from boulevard.audit.signing import SigningKey, reclaim_signing_bytes, verify
from boulevard.contract import mapping
from boulevard.fairness import MAX_CLIENT_SEED_BYTES, client_seed_commitment, is_commitment
from boulevard.games import REGISTRY
from boulevard.games.base import (
    ClientSeedRevealed,
    CommandAccepted,
    GameConfig,
    GameCreated,
    GameDefinition,
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
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)
from services.engine.chain import accept_command, check_public_key, receipt_pb
from services.engine.chance import ChanceSource
from services.engine.sessions import Session, redacted

log = structlog.get_logger(__name__)

GAME_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")  # a well-formed game (and match) id

R_co = TypeVar("R_co", covariant=True)


class Command(Protocol[R_co]):
    """One request to change one game, as `Engine.handle` runs it. The pipeline calls the
    steps in the order they are listed here; each raises the error the caller gets."""

    # Resolve chance owed from before (a crash between an append and its chance) before
    # deciding. Not for a seed reveal: past the deadline that would fix the seeds first.
    settles_first: ClassVar[bool]

    @property
    def game_id(self) -> str: ...

    @property
    def causation(self) -> str:
        """The key the log records the command's events under (each envelope's
        causation_id): what lets a retry find the first run."""

    @property
    def pinned(self) -> bool:
        """The caller pinned the version it decided on: a lost race is ABORTED, not
        retried."""

    def authorize(self) -> None:
        """Refuse a caller who may not ask this at all, before anything is read."""

    async def open(self) -> Session:
        """The game when the log has none: a new one (creation), else NOT_FOUND."""

    def verify(self, session: Session) -> None:
        """Refuse a command the loaded game does not accept from this caller (a signature
        that does not verify under the seat's key, a seat the game does not have)."""

    def recorded(self, session: Session) -> bool:
        """Whether the log holds this command already (a retry): then `receipt` answers
        with the first result and nothing is decided or appended."""

    async def decide(self, session: Session) -> Sequence[Any]:
        """The events the command adds to the log, or none when there is nothing to add."""

    def unconfirmed(self) -> str | None:
        """What to tell the caller when the store did not confirm the append (the command
        may or may not be stored), or None to pass the store's error on as it is."""

    async def receipt(self, session: Session, first: int | None) -> R_co:
        """What the caller gets back: `first` is the version of the command's first event,
        or None for a command the log held already."""


@dataclass(frozen=True, slots=True)
class SeatRequest:
    seat: int
    player_id: str
    seed_commitment: str = ""  # hex SHA-256 of the seat's client seed; "" = no seed
    bot: bool = False
    public_key: str = ""  # hex Ed25519 key that will sign this seat's commands


@dataclass(frozen=True, slots=True)
class Submitted:
    version: int
    envelopes: tuple[events_pb2.EventEnvelope, ...]
    finished: bool
    head: bytes = b""  # the chain hash at `version` (what a receipt signs)
    # The engine's signature over (game, version, head): what the seat keeps as proof.
    # Not compared: two replicas (two keys) answering one retry give the same result.
    receipt: engine_pb2.Receipt | None = field(default=None, compare=False)


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


# What the pipeline lends a command that reads the log: the envelopes at versions
# first..last (from memory when it holds them).
ReadEnvelopes = Callable[[Session, int, int], Awaitable[tuple[events_pb2.EventEnvelope, ...]]]


class _Existing:
    """The `open` step of every command but creation: a game must exist to act in it."""

    game_id: str

    async def open(self) -> Session:
        raise NotFound(f"no game {self.game_id!r}")


async def sign_receipt(
    key: SigningKey, session: Session, read: ReadEnvelopes
) -> engine_pb2.Receipt:
    """The pipeline's `sign a receipt` step: the engine's signature over the game's version
    now, its chain head and the time the envelope there was recorded (when the engine
    accepted what the receipt is for)."""
    (at,) = await read(session, session.version, session.version)
    return receipt_pb(
        key, session.game_id, session.version, session.head_hash, int(at.time_unix_ms)
    )


def from_action(
    action: engine_pb2.Action | None,
) -> Callable[[GameDefinition[Any, Any, Any, Any]], Any]:
    """How a SubmitAction's Action becomes the game's command, once the game is known."""

    def to_command(game: GameDefinition[Any, Any, Any, Any]) -> Any:
        if action is None:
            raise InvalidArgument("action is required")
        return mapping.action_to_command(game, action)

    return to_command


@dataclass
class Submit(_Existing):
    """A seat's signed move (SubmitAction): `action` is the exact bytes the seat signed
    (the Action message's deterministic encoding) and `to_command` gives the game command
    they stand for, once the game is loaded (the mapping depends on the game)."""

    game_id: str
    claims: PlayerClaims
    to_command: Callable[[GameDefinition[Any, Any, Any, Any]], Any]
    expected_version: int
    idempotency_key: str
    action: bytes
    signature: bytes
    read: ReadEnvelopes
    receipt_key: SigningKey
    settles_first: ClassVar[bool] = True
    _command: Any = None
    _accepted: CommandAccepted | None = None

    @property
    def causation(self) -> str:
        return f"cmd:{self.idempotency_key}"

    @property
    def pinned(self) -> bool:
        return bool(self.expected_version)

    def authorize(self) -> None:
        if self.claims.game_id != self.game_id:
            raise PermissionDenied("this token is for another game")
        if not GAME_ID.match(self.game_id):
            raise InvalidArgument(f"malformed game id {self.game_id!r}")

    def verify(self, session: Session) -> None:
        """The action is one of this game's commands, for the token's seat, signed with
        the seat's key (INVALID_ARGUMENT, PERMISSION_DENIED, UNAUTHENTICATED)."""
        command = self._command = self.to_command(session.game)
        if getattr(command, "seat", self.claims.seat) != self.claims.seat:
            raise PermissionDenied(
                f"you play seat {self.claims.seat}; you cannot act for seat {command.seat}"
            )
        self._accepted = accept_command(
            self.game_id,
            session.created,
            self.claims,
            self.expected_version,
            self.idempotency_key,
            self.action,
            self.signature,
        )

    def recorded(self, session: Session) -> bool:
        return self.causation in session.commands

    async def decide(self, session: Session) -> Sequence[Any]:
        if session.finished is not None:
            raise FailedPrecondition("the game is over")
        if self.expected_version and self.expected_version != session.version:
            raise Aborted(
                f"the game is at version {session.version}, not {self.expected_version}: "
                "reload and decide again"
            )
        events = session.game.decide(self._command, session.state)
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

    async def receipt(self, session: Session, first: int | None) -> Submitted:
        if first is None:
            done = session.commands[self.causation]
            return self._retried(session, await self._result(session, done.first, done.last))
        return await self._result(session, first, session.version)

    async def _result(self, session: Session, first: int, last: int) -> Submitted:
        finished = session.finished is not None
        envelopes = await self.read(session, first, last)
        return Submitted(
            session.version,
            # As the seat may see them: a shuffle's order stays hidden until the end.
            tuple(redacted(session.game, e, finished) for e in envelopes),
            finished,
            session.head_hash,
            await sign_receipt(self.receipt_key, session, self.read),
        )

    def _retried(self, session: Session, result: Submitted) -> Submitted:
        """The recorded result of a command whose key was used before, for the seat that
        used it (docs/clients.md: a retry, or a second action under a used key, gets the
        first result); ALREADY_EXISTS for any other seat: a key names one seat's command,
        and another seat must not be told that its move was applied."""
        assert self._accepted is not None, "verify() runs before receipt()"
        recorded = session.codec.loads(result.envelopes[0].payload) if result.envelopes else None
        if not isinstance(recorded, CommandAccepted) or recorded.seat != self._accepted.seat:
            raise AlreadyExists(
                f"idempotency_key {self.idempotency_key!r} was used by another seat's "
                "command in this game; send each new command with a fresh key"
            )
        return result


@dataclass
class Reveal(_Existing):
    """A seat's client seed (RevealSeed), checked against the commitment it made before
    the server seed was drawn; once every seat has revealed, the game's dice can run."""

    game_id: str
    claims: PlayerClaims
    client_seed: str
    clock: Callable[[], int]
    read: ReadEnvelopes
    receipt_key: SigningKey
    settles_first: ClassVar[bool] = False
    pinned: bool = False

    @property
    def causation(self) -> str:
        return f"reveal:{self.claims.seat}"

    def authorize(self) -> None:
        if self.claims.game_id != self.game_id:
            raise PermissionDenied("this token is for another game")
        if len(self.client_seed.encode("utf-8")) > MAX_CLIENT_SEED_BYTES:
            raise InvalidArgument(f"a client seed is at most {MAX_CLIENT_SEED_BYTES} bytes")

    def verify(self, session: Session) -> None:
        if not 0 <= self.claims.seat < len(session.created.seats):
            raise PermissionDenied(f"this game has no seat {self.claims.seat}")

    def recorded(self, session: Session) -> bool:
        return False  # a second reveal of the same seed settles and answers again: `decide`

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

    async def receipt(self, session: Session, first: int | None) -> SeedRevealed:
        return SeedRevealed(
            session.version,
            not session.unrevealed(),
            session.created.reveal_deadline_unix_ms,
            await sign_receipt(self.receipt_key, session, self.read),
        )


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
    issue_token: Callable[[str, int, str], str]
    time_control: TimeControl | None = None
    # New games take this release's rules ("": the newest; engine_new_games_rules_release).
    rules_release: str = ""
    settles_first: ClassVar[bool] = False
    pinned: bool = False

    @property
    def causation(self) -> str:
        return f"create:{self.request_id}"

    def authorize(self) -> None:
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
        )
        return Session.new(self.game_id, created)

    def verify(self, session: Session) -> None:
        pass  # the seats' keys were checked in `authorize`; nobody signs a creation

    def recorded(self, session: Session) -> bool:
        """A stored game: the one this request made, which a retry must ask for again."""
        if not session.version:
            return False
        ordered = sorted(self.seats, key=lambda s: s.seat)
        wanted = (self.game_name, tuple((s.seat, s.player_id) for s in ordered))
        have = (session.created.game, tuple((s.seat, s.player_id) for s in session.created.seats))
        if wanted != have:
            raise InvalidArgument("this request_id was already used to create a different game")
        return True

    async def decide(self, session: Session) -> Sequence[Any]:
        try:
            setup = session.game.new_game(session.created.config)
        except RulesError as err:
            raise InvalidArgument(f"bad options: {err.message}") from err
        return [session.created, *setup]

    def unconfirmed(self) -> None:
        return None

    async def receipt(self, session: Session, first: int | None) -> Created:
        log.info("game ready", game_id=self.game_id, game=self.game_name, version=session.version)
        created = session.created
        tokens = tuple(self.issue_token(self.game_id, s.seat, s.player_id) for s in created.seats)
        return Created(self.game_id, tokens, created.seed_commitment)


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
    pinned: bool = False
    causation: str = "clock:timeout"

    def authorize(self) -> None:
        pass  # the engine's own

    def verify(self, session: Session) -> None:
        pass

    def recorded(self, session: Session) -> bool:
        return False  # `decide` finds what is overdue now; nothing overdue, nothing added

    async def decide(self, session: Session) -> Sequence[Any]:
        key = self.stand_in_key.public_hex
        overdue = session.overdue(self.clock())
        for seat, deadline in overdue:
            log.info("seat timed out", game_id=self.game_id, seat=seat, deadline=deadline)
        return [SeatTimedOut(seat, deadline, key) for seat, deadline in overdue]

    def unconfirmed(self) -> None:
        return None

    async def receipt(self, session: Session, first: int | None) -> Session:
        return session


@dataclass
class StandIn(_Existing):
    """One move of the platform's bot for a seat that timed out and that the game asks to
    act (docs/games/*.md, "Absence"): signed with the stand-in key and marked `stand_in`;
    the seat's money stays the seat's. The bot's randomness is seeded by the game, version
    and seat, so two replicas racing for the move choose the same one."""

    game_id: str
    stand_in_key: SigningKey
    settles_first: ClassVar[bool] = True
    pinned: bool = False
    causation: str = "stand-in"

    def authorize(self) -> None:
        pass  # the engine's own

    def verify(self, session: Session) -> None:
        pass

    def recorded(self, session: Session) -> bool:
        return False

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

    async def receipt(self, session: Session, first: int | None) -> Session:
        return session


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
    receipt_key: SigningKey
    read: ReadEnvelopes
    settles_first: ClassVar[bool] = True
    pinned: bool = True

    @property
    def causation(self) -> str:
        return f"reclaim:{self.claims.seat}:{self.expected_version}"

    def authorize(self) -> None:
        if self.claims.game_id != self.game_id:
            raise PermissionDenied("this token is for another game")
        if not self.signature:
            raise Unauthenticated("a reclaim must be signed by the seat's key")

    def verify(self, session: Session) -> None:
        seat = self.claims.seat
        seats = session.created.seats
        if not 0 <= seat < len(seats) or seats[seat].player_id != self.claims.player_id:
            raise PermissionDenied(f"this game has no seat {seat} for you")
        message = reclaim_signing_bytes(self.game_id, seat, self.expected_version)
        if not verify(bytes.fromhex(seats[seat].public_key), self.signature, message):
            raise PermissionDenied(f"the signature does not verify under seat {seat}'s key")

    def recorded(self, session: Session) -> bool:
        return self.causation in session.commands

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

    async def receipt(self, session: Session, first: int | None) -> Reclaimed:
        version = first if first is not None else session.commands[self.causation].first
        # Timed: the player can show when the engine took the seat back for them.
        return Reclaimed(version, await sign_receipt(self.receipt_key, session, self.read))
