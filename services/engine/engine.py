"""The engine: create games, run commands through a game's rules, resolve chance, finish.

Per game, commands run one at a time (a lock per game in this replica); across replicas the
event store's expected version makes a lost race safe: the loser reloads and retries, or
answers ABORTED when the client pinned the version it saw. Nothing here knows any one game:
games come from `boulevard.games.REGISTRY` through their `GameDefinition`.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from boulevard.api.v1 import events_pb2
from boulevard.audit.signing import SigningKey, chain_hash
from boulevard.eventlog.errors import ConcurrencyConflict
from boulevard.eventlog.store import EventStore, NewEvent
from boulevard.fairness import MAX_CLIENT_SEED_BYTES, client_seed_commitment, is_commitment
from boulevard.games import REGISTRY
from boulevard.games.base import (
    ChanceRequest,
    ChanceResolved,
    ClientSeedRevealed,
    ClientSeedsFixed,
    CommandAccepted,
    GameConfig,
    GameCreated,
    GameFinished,
    PlayerSeat,
    RulesError,
    check_options,
)
from boulevard.games.codec import Codec
from boulevard.games.versions import UnknownRulesVersion, newest
from boulevard.platform import metrics, tracing
from boulevard.platform.auth import DEFAULT_TTL_SECONDS, PlayerClaims, issue_token
from boulevard.platform.errors import (
    Aborted,
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unavailable,
    nats_unavailable,
)
from services.engine.chain import (
    accept_command,
    check_public_key,
    link,
    open_snapshot,
    seal_snapshot,
)
from services.engine.sessions import Session, StaleSnapshot, envelope_of

log = structlog.get_logger(__name__)

_GAME_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
MAX_RETRIES = 5
# Where each game lookup found its game: in memory, from a snapshot it could open (and the
# log after it), or from its whole log.
_LOADED_FROM_CACHE = metrics.GAME_LOADS.labels("cache")
_LOADED_FROM_SNAPSHOT = metrics.GAME_LOADS.labels("snapshot")
_LOADED_FROM_LOG = metrics.GAME_LOADS.labels("log")


class OutcomeUnknown(Unavailable):
    """UNAVAILABLE for a command whose append was not confirmed: it may be in the log."""


class ChanceSource(Protocol):
    """Where randomness comes from: the dice service (or, in pure tests, a local rng)."""

    async def open_game(
        self, game_id: str, seed_commitments: Sequence[str], reveal_deadline_unix_ms: int
    ) -> Opened: ...
    async def fix_seeds(
        self, game_id: str, client_seeds: Sequence[str], missing_seats: Sequence[int]
    ) -> None: ...
    async def resolve(
        self, game_id: str, request_id: str, chance: ChanceRequest
    ) -> ChanceResolved: ...
    async def reveal(self, game_id: str) -> None: ...


class KeyValue(Protocol):
    async def get(self, key: str) -> bytes | None: ...
    async def put(self, key: str, value: bytes) -> object: ...  # JetStream: the revision


class MemoryKeyValue:
    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    async def get(self, key: str) -> bytes | None:
        return self.data.get(key)

    async def put(self, key: str, value: bytes) -> None:
        self.data[key] = value


@dataclass(frozen=True, slots=True)
class Opened:
    """The dice service's answer to opening a game: its server seed commitment, and the
    reveal deadline as it recorded it (a retried open keeps the first one)."""

    commitment: str
    reveal_deadline_unix_ms: int


@dataclass(frozen=True, slots=True)
class SeatRequest:
    seat: int
    player_id: str
    seed_commitment: str = ""  # hex SHA-256 of the seat's client seed; "" = no seed
    bot: bool = False
    public_key: str = ""  # hex Ed25519 key that will sign this seat's commands


@dataclass(frozen=True, slots=True)
class SeedRevealed:
    version: int
    all_revealed: bool
    deadline_unix_ms: int


@dataclass(frozen=True, slots=True)
class Created:
    game_id: str
    tokens: tuple[str, ...]
    seed_commitment: str


@dataclass(frozen=True, slots=True)
class Submitted:
    version: int
    envelopes: tuple[events_pb2.EventEnvelope, ...]
    finished: bool
    head: bytes = b""  # the chain hash at `version` (what a receipt signs)


def game_id_for(creator: str, request_id: str) -> str:
    """The id of a game an operator creates: a digest of who asked and their request id.
    Same caller and request, same game, forever; a request id equal to an existing game's id
    (or another caller's request id) names a different game, never that one."""
    digest = hashlib.sha256(f"create\0{creator}\0{request_id}".encode()).hexdigest()
    return "g" + digest[:31]


class Engine:
    def __init__(
        self,
        store: EventStore,
        chance: ChanceSource,
        snapshots: KeyValue,
        token_key: bytes,
        snapshot_every: int = 100,
        token_ttl_seconds: float = DEFAULT_TTL_SECONDS,
        cache_size: int = 10_000,
        clock: Callable[[], int] = lambda: int(time.time() * 1000),
        on_finished: Callable[[Session], Awaitable[None]] | None = None,
        reveal_seconds: float = 60.0,
        receipt_key: SigningKey | None = None,
        idle_trim_seconds: float = 30.0,
    ) -> None:
        self.store = store
        self.chance = chance
        self.snapshots = snapshots
        self.token_key = token_key
        self.token_ttl_seconds = token_ttl_seconds
        self.snapshot_every = snapshot_every
        self.clock = clock
        self.on_finished = on_finished
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        # One lock per game while anyone holds or awaits it, then gone: a lookup of a game
        # that does not exist (GetGame, WatchGame, with no token) must leave nothing behind,
        # or made-up ids grow this forever. Whoever waits holds a reference, so two callers
        # always share the one lock.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._cache_size = cache_size
        # Cached games by when they were last used (oldest first): `trim_idle` drops the
        # caches inside the sessions nobody used for `idle_trim_seconds` (docs/performance.md,
        # "Capacity": an idle game's views cost several times its state).
        self.idle_trim_seconds = idle_trim_seconds
        self._warm: OrderedDict[str, float] = OrderedDict()
        self.reveal_ms = int(reveal_seconds * 1000)
        # Games waiting for their seats' seed reveals -> the reveal deadline: what
        # `sweep_reveals` wakes when no player ever comes back.
        self.awaiting_seeds: dict[str, int] = {}
        # Signs receipts and snapshots; its public half is served by GetEngineKey.
        self.receipt_key = receipt_key or SigningKey.generate()
        self.forged_snapshots = 0  # snapshots refused because the log disagreed

    # -- creating -------------------------------------------------------------------------

    async def create_game(
        self,
        request_id: str,
        game_name: str,
        seats: Sequence[SeatRequest],
        options: Sequence[tuple[str, str]] = (),
        match_id: str = "",
        creator: str = "",
    ) -> Created:
        """Create (or, for a retry, find) a game. A matched game's id is its match id; any
        other game's id is `game_id_for(creator, request_id)`."""
        if not request_id:
            raise InvalidArgument("request_id is required (it makes CreateGame idempotent)")
        if game_name not in REGISTRY:
            raise InvalidArgument(
                f"unknown game {game_name!r}; known: {', '.join(sorted(REGISTRY))}"
            )
        rules = newest(game_name)  # new games take the newest rules, for their whole life
        game = rules.definition
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
            check_options(game, options)
        except RulesError as err:
            raise InvalidArgument(f"bad options: {err.message}") from err
        for s in seats:
            check_public_key(s.seat, s.public_key)
        ordered = sorted(seats, key=lambda s: s.seat)
        if match_id:
            if not _GAME_ID.match(match_id):
                raise InvalidArgument("malformed match id")
            game_id = match_id
        else:
            game_id = game_id_for(creator, request_id)
        async with self._lock(game_id):
            session = await self._load_or_none(game_id)
            if session is None:
                config = GameConfig(len(seats), tuple(sorted(options)))
                # The dice service draws and commits its seed knowing only the seats'
                # commitments; the seeds themselves come later (reveal_seed).
                opened = await self.chance.open_game(
                    game_id,
                    [s.seed_commitment for s in ordered],
                    self.clock() + self.reveal_ms,
                )
                created = GameCreated(
                    game=game_name,
                    config=config,
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
                    match_id=match_id,
                    reveal_deadline_unix_ms=opened.reveal_deadline_unix_ms,
                    rules_version=rules.pin,
                )
                session = Session.new(game_id, created)
                try:
                    setup = game.new_game(config)
                except RulesError as err:
                    raise InvalidArgument(f"bad options: {err.message}") from err
                try:
                    await self._append(session, [created, *setup], f"create:{request_id}")
                except ConcurrencyConflict:
                    self._sessions.pop(game_id, None)
                    session = await self._load(game_id)
                await self._settle(session)
            else:
                _same_game(session.created, game_name, ordered)
            log.info("game ready", game_id=game_id, game=game_name, version=session.version)
        tokens = tuple(self.seat_token(game_id, s.seat, s.player_id) for s in session.created.seats)
        return Created(game_id, tokens, session.created.seed_commitment)

    def seat_token(self, game_id: str, seat: int, player_id: str) -> str:
        return issue_token(
            self.token_key, PlayerClaims(game_id, seat, player_id), self.token_ttl_seconds
        )

    async def renew_token(self, game_id: str, player_id: str) -> tuple[int, str]:
        """A fresh token for the seat `player_id` holds in the game (its seat and token)."""
        session = await self.load(game_id)
        for s in session.created.seats:
            if s.player_id == player_id and not s.bot:
                return s.seat, self.seat_token(game_id, s.seat, player_id)
        raise PermissionDenied(f"you hold no seat in game {game_id}")

    # -- loading --------------------------------------------------------------------------

    def _lock(self, game_id: str) -> asyncio.Lock:
        lock = self._locks.get(game_id)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[game_id] = lock
        return lock

    def _cache(self, session: Session) -> None:
        self._sessions[session.game_id] = session
        self._sessions.move_to_end(session.game_id)
        self._used(session.game_id)
        while len(self._sessions) > self._cache_size:
            evicted, _ = self._sessions.popitem(last=False)
            self._warm.pop(evicted, None)

    def _used(self, game_id: str) -> None:
        self._warm[game_id] = time.monotonic()
        self._warm.move_to_end(game_id)

    def trim_idle(self) -> int:
        """Drop the views, legal commands and recent envelopes of cached games unused for
        `idle_trim_seconds`, keeping their fold (state, version, chain head, command keys):
        each is recomputed or read from the log when next asked for. How many were trimmed."""
        cutoff = time.monotonic() - self.idle_trim_seconds
        trimmed = 0
        while self._warm:
            game_id, used = next(iter(self._warm.items()))
            if used > cutoff:
                break
            del self._warm[game_id]
            session = self._sessions.get(game_id)
            if session is not None:
                session.trim()
                trimmed += 1
        return trimmed

    def cached_games(self) -> int:
        """Games this replica holds in memory (at most `cache_size`)."""
        return len(self._sessions)

    def live_games(self) -> int:
        """Unfinished games this replica holds (what the games-live gauge shows)."""
        return sum(1 for s in list(self._sessions.values()) if s.finished is None)

    def cached(self, game_id: str) -> Session | None:
        """The game as this replica last saw it, if it holds it (no I/O, no lock)."""
        return self._sessions.get(game_id)

    async def _load_or_none(self, game_id: str) -> Session | None:
        cached = self._sessions.get(game_id)
        if cached is not None:
            _LOADED_FROM_CACHE.inc()
            self._used(game_id)
            return cached
        try:
            session = await self._fold(game_id)
        except UnknownRulesVersion as err:
            # Never replayed with other rules: the game waits for an engine that has them.
            raise FailedPrecondition(
                f"game {game_id!r}: {err}; an engine of a release that hosts it must serve it"
            ) from None
        if session is not None:
            self._cache(session)
        return session

    async def _fold(self, game_id: str) -> Session | None:
        """The game from its sealed snapshot (if it can be trusted) and its log's tail."""
        session: Session | None = None
        raw = await self.snapshots.get(game_id)
        if raw is not None:
            session = self._open_snapshot(game_id, raw)
        (_LOADED_FROM_SNAPSHOT if session is not None else _LOADED_FROM_LOG).inc()
        log_ = await self.store.read(game_id, session.version if session else 1)
        if session is not None:
            # Trust the snapshot only if the log's envelope at its version has its hash.
            if (
                log_
                and log_[0].version == session.version
                and (chain_hash(log_[0].data) == session.head_hash)
            ):
                log_ = log_[1:]
            else:
                self._forged_snapshot(game_id, "the log's chain hash differs")
                session = None
                log_ = await self.store.read(game_id, 1)
        for recorded in log_:
            envelope = events_pb2.EventEnvelope.FromString(recorded.data)
            if session is None:
                created = created_of(envelope)
                session = Session.new(game_id, created)
            session.apply_envelope(envelope, recorded.data)
        return session

    def _open_snapshot(self, game_id: str, raw: bytes) -> Session | None:
        opened = open_snapshot(self.receipt_key, raw)
        if opened is None:
            self._forged_snapshot(game_id, "not signed by this engine's key")
            return None
        body, _version, _head = opened
        try:
            return Session.from_snapshot(game_id, body)
        except StaleSnapshot as stale:
            log.info(
                "snapshot of another schema: rebuilding from the log",
                game_id=game_id,
                why=str(stale),
            )
            return None
        except (ValueError, KeyError, TypeError, RulesError):
            self._forged_snapshot(game_id, "it does not decode")
            return None

    def _forged_snapshot(self, game_id: str, why: str) -> None:
        self.forged_snapshots += 1
        log.error("forged snapshot: rebuilding the game from its log", game_id=game_id, why=why)

    async def _load(self, game_id: str) -> Session:
        session = await self._load_or_none(game_id)
        if session is None:
            raise NotFound(f"no game {game_id!r}")
        return session

    async def load(self, game_id: str) -> Session:
        """The game as it stands, with any owed chance resolved and a finished game closed
        (a crash between appending and resolving leaves such work; whoever loads does it)."""
        if not _GAME_ID.match(game_id):
            raise InvalidArgument(f"malformed game id {game_id!r}")
        async with self._lock(game_id):
            for _attempt in range(MAX_RETRIES):
                session = await self._load(game_id)
                try:
                    await self._settle(session)
                except ConcurrencyConflict:
                    continue  # another replica settled it first: read the log again
                return session
        raise Aborted("too many concurrent writers on this game; try again")

    # -- the opening: client seeds revealed after the commitment ---------------------------

    async def reveal_seed(
        self, game_id: str, claims: PlayerClaims, client_seed: str
    ) -> SeedRevealed:
        """Record a seat's client seed, checked against the commitment it made before the
        server seed was drawn; once every seat has revealed, the game's dice can run."""
        if claims.game_id != game_id:
            raise PermissionDenied("this token is for another game")
        if len(client_seed.encode("utf-8")) > MAX_CLIENT_SEED_BYTES:
            raise InvalidArgument(f"a client seed is at most {MAX_CLIENT_SEED_BYTES} bytes")
        key = f"reveal:{claims.seat}"
        for _attempt in range(MAX_RETRIES):
            async with self._lock(game_id):
                session = await self._load(game_id)
                created = session.created
                if not 0 <= claims.seat < len(created.seats):
                    raise PermissionDenied(f"this game has no seat {claims.seat}")
                known = session.client_seeds.get(claims.seat)
                if known is None:
                    self._check_reveal(session, claims.seat, client_seed)
                    try:
                        await self._append(
                            session, [ClientSeedRevealed(claims.seat, client_seed)], key
                        )
                    except ConcurrencyConflict:
                        continue
                elif known != client_seed:
                    raise InvalidArgument("your seat revealed another seed already")
                session = await self._settle_racing(session, key)
                return SeedRevealed(
                    session.version,
                    not self._unrevealed(session),
                    created.reveal_deadline_unix_ms,
                )
        raise Aborted("too many concurrent writers on this game; try again")

    def _check_reveal(self, session: Session, seat: int, client_seed: str) -> None:
        committed = session.created.seats[seat].seed_commitment
        if session.seeds_fixed:
            raise FailedPrecondition("the game's client seeds are fixed already")
        if not committed:
            raise FailedPrecondition(f"seat {seat} committed to no client seed")
        if client_seed_commitment(client_seed) != committed:
            raise InvalidArgument(
                f"SHA-256 of that seed is not seat {seat}'s commitment {committed}"
            )
        deadline = session.created.reveal_deadline_unix_ms
        if deadline and self.clock() >= deadline:
            raise FailedPrecondition("the reveal deadline has passed: the seat plays with ''")

    @staticmethod
    def _unrevealed(session: Session) -> list[int]:
        return [
            s.seat
            for s in session.created.seats
            if s.seed_commitment and s.seat not in session.client_seeds
        ]

    async def _fix_seeds_when_due(self, session: Session, causation: str) -> bool:
        """Fix the client seeds once every seat has revealed or the deadline has passed
        (missing seats play with ""): hand them to the dice service, which checks them
        against the commitments it recorded, then record ClientSeedsFixed. False while the
        game still waits for reveals."""
        missing = self._unrevealed(session)
        deadline = session.created.reveal_deadline_unix_ms
        if missing and (not deadline or self.clock() < deadline):
            self.awaiting_seeds[session.game_id] = deadline
            return False
        seeds = tuple(session.client_seeds.get(s.seat, "") for s in session.created.seats)
        await self.chance.fix_seeds(session.game_id, seeds, missing)
        await self._append(session, [ClientSeedsFixed(seeds, tuple(missing))], causation)
        self.awaiting_seeds.pop(session.game_id, None)
        if missing:
            log.warning("seats did not reveal their seeds", game_id=session.game_id, seats=missing)
        return True

    async def sweep_reveals(self) -> int:
        """Wake the games whose reveal deadline has passed (their players may never come
        back): each is loaded, which fixes its seeds and runs its chance. How many woke."""
        now = self.clock()
        due = [g for g, deadline in self.awaiting_seeds.items() if deadline and deadline <= now]
        for game_id in due:
            try:
                session = await self.load(game_id)
                if session.seeds_fixed:
                    self.awaiting_seeds.pop(game_id, None)
            except Exception:
                log.exception("could not settle a game past its reveal deadline", game_id=game_id)
        return len(due)

    # -- acting ---------------------------------------------------------------------------

    async def submit(
        self,
        game_id: str,
        claims: PlayerClaims,
        command: Any,
        expected_version: int,
        idempotency_key: str,
        action: bytes = b"",
        signature: bytes = b"",
    ) -> Submitted:
        """Run one signed command: `action` is the exact bytes the seat signed (the Action
        message's deterministic encoding) and `command` the game command it maps to."""
        if claims.game_id != game_id:
            raise PermissionDenied("this token is for another game")
        if getattr(command, "seat", claims.seat) != claims.seat:
            raise PermissionDenied(
                f"you play seat {claims.seat}; you cannot act for seat {command.seat}"
            )
        key = f"cmd:{idempotency_key}"
        for _attempt in range(MAX_RETRIES):
            async with self._lock(game_id):
                session = await self._load(game_id)
                try:
                    await self._settle(session)
                except ConcurrencyConflict:
                    continue  # another replica settled it first: read the log again
                accepted = accept_command(
                    game_id,
                    session.created,
                    claims,
                    expected_version,
                    idempotency_key,
                    action,
                    signature,
                )
                done = session.commands.get(key)
                if done is not None:
                    return self._retried(
                        session, accepted, await self._result(session, done.first, done.last)
                    )
                if session.finished is not None:
                    raise FailedPrecondition("the game is over")
                if expected_version and expected_version != session.version:
                    raise Aborted(
                        f"the game is at version {session.version}, not {expected_version}: "
                        "reload and decide again"
                    )
                events = session.game.decide(command, session.state)
                if not events:
                    raise FailedPrecondition("that action changes nothing")
                first = session.version + 1
                try:
                    # The command is recorded with its events, in the same atomic append.
                    await self._append(session, [accepted, *events], key)
                except ConcurrencyConflict:
                    # Another replica wrote first (`_append` dropped our copy), or an
                    # earlier attempt of this very command did (its append unconfirmed).
                    if expected_version:
                        fresh = await self._load(game_id)
                        # Not kept: the other writer may still be settling its command.
                        self._sessions.pop(game_id, None)
                        done = fresh.commands.get(key)
                        if done is not None:
                            return self._retried(
                                fresh, accepted, await self._result(fresh, done.first, done.last)
                            )
                        raise  # the client pinned the version it decided on: ABORTED
                    continue  # decide again on the fresh log (or find the key there)
                except Exception as exc:
                    if not nats_unavailable(exc):
                        raise
                    # The append may or may not have been stored: only a retry with the same
                    # key can tell (it returns the recorded result, or applies it once).
                    raise OutcomeUnknown(
                        "the event store did not confirm this action, so it may or may not "
                        "have been applied: retry with the same idempotency_key"
                        if idempotency_key
                        else "the event store did not confirm this action, so it may or may "
                        "not have been applied: reload the game before acting again (send an "
                        "idempotency_key to make such retries safe)"
                    ) from exc
                session = await self._settle_after(session, key)
                return await self._result(session, first, session.version)
        raise Aborted("too many concurrent writers on this game; try again")

    @staticmethod
    def _retried(session: Session, accepted: CommandAccepted, result: Submitted) -> Submitted:
        """The recorded result of a command whose key was used before, for the seat that
        used it (docs/clients.md: a retry, or a second action under a used key, gets the
        first result); ALREADY_EXISTS for any other seat: a key names one seat's command,
        and another seat must not be told that its move was applied."""
        recorded = session.codec.loads(result.envelopes[0].payload) if result.envelopes else None
        if not isinstance(recorded, CommandAccepted) or recorded.seat != accepted.seat:
            raise AlreadyExists(
                f"idempotency_key {accepted.idempotency_key!r} was used by another seat's "
                "command in this game; send each new command with a fresh key"
            )
        return result

    async def _settle_after(self, session: Session, key: str) -> Session:
        """Settle what a stored command led to. Another replica that reloaded the game may
        resolve the same chance first (the same outcome: the request id names the version);
        the command stands, so read the log again and carry on rather than fail it."""
        for _attempt in range(MAX_RETRIES):
            try:
                await self._settle(session, key)
                return session
            except ConcurrencyConflict:
                session = await self._load(session.game_id)
        raise Aborted("too many concurrent writers on this game; reload to see your move")

    async def _result(self, session: Session, first: int, last: int) -> Submitted:
        wanted = range(first, last + 1)
        if all(v in session.recent for v in wanted):
            envelopes = tuple(session.recent[v] for v in wanted)
        else:
            recorded = await self.store.read(session.game_id, first)
            envelopes = tuple(
                events_pb2.EventEnvelope.FromString(r.data) for r in recorded if r.version <= last
            )
        return Submitted(
            session.version, envelopes, session.finished is not None, session.head_hash
        )

    async def _append(self, session: Session, events: Sequence[Any], causation: str) -> None:
        """Append events after the session's version, then fold them in."""
        now = self.clock()
        correlation = session.created.match_id or session.game_id
        envelopes = []
        for i, event in enumerate(events, start=session.version + 1):
            envelopes.append(
                envelope_of(
                    session.game,
                    session.game_id,
                    event,
                    i,
                    uuid.uuid4().hex,
                    now,
                    causation,
                    correlation,
                )
            )
        new = []
        head = session.head_hash
        for e in envelopes:
            data, head = link(e, head)
            new.append(NewEvent(e.event_id, e.type, data))
        started = time.perf_counter()
        try:
            with tracing.span("games.append", game_id=session.game_id, events=len(new)):
                await self.store.append(session.game_id, new, session.version)
        except Exception:
            # Refused, or unconfirmed (it may be stored): the cached copy may be behind the
            # log, so the next load reads the log again.
            self._sessions.pop(session.game_id, None)
            raise
        _count_appended(session.game.name, events, time.perf_counter() - started)
        before = session.version
        for envelope, event in zip(envelopes, events, strict=True):
            session.remember(envelope)
            session.apply(event, int(envelope.version), causation)
        session.head_hash = head
        self._cache(session)
        if session.version // self.snapshot_every > before // self.snapshot_every:
            await self._snapshot(session)

    async def _settle_racing(self, session: Session, causation: str) -> Session:
        """Settle after this replica's own append. Another replica that loaded the game
        meanwhile may resolve the same chance first (the same request id, so the same dice
        outcome): our append of it then conflicts, although our command is recorded. Read
        the log again and go on from there instead of failing the command."""
        for _attempt in range(MAX_RETRIES):
            try:
                await self._settle(session, causation)
                return session
            except ConcurrencyConflict:
                session = await self._load(session.game_id)  # `_append` dropped our copy
        raise Aborted("too many concurrent writers on this game; reload it")

    async def _settle(self, session: Session, causation: str = "") -> None:
        """Resolve every chance the game asks for, then close it if it is over."""
        causation = causation or session.last_causation
        while session.finished is None:
            if not session.seeds_fixed:
                if not await self._fix_seeds_when_due(session, causation or "seeds"):
                    return  # no chance before the seeds are fixed
                continue
            request = session.game.chance(session.state)
            if request is not None:
                # The request id names the version it answers: a retry after a crash
                # gets the same outcome from the dice service, never a fresh one.
                request_id = f"{session.game_id}:{session.version}"
                resolved = await self.chance.resolve(session.game_id, request_id, request)
                await self._append(session, [resolved], causation)
                continue
            outcome = session.game.outcome(session.state)
            if not outcome.finished:
                return
            finished = GameFinished(
                ranking=outcome.ranking,
                scores=outcome.scores,
                player_ids=tuple(s.player_id for s in session.created.seats),
                reason=outcome.reason,
            )
            await self._append(session, [finished], causation)
            await self._snapshot(session)
            log.info("game finished", game_id=session.game_id, ranking=outcome.ranking)
            if self.on_finished is not None:
                await self.on_finished(session)
        if not session.revealed:
            # Idempotent at the dice service; done by whoever first sees the game finished,
            # so a crash between GameFinished and the reveal still reveals.
            await self.chance.reveal(session.game_id)
            session.revealed = True

    async def _snapshot(self, session: Session) -> None:
        await self.snapshots.put(
            session.game_id, seal_snapshot(self.receipt_key, session.snapshot())
        )


def _count_appended(game: str, events: Sequence[Any], seconds: float) -> None:
    metrics.APPEND_SECONDS.labels(game).observe(seconds)
    metrics.EVENTS_APPENDED.labels(game).inc(len(events))
    metrics.LAST_APPEND.set_to_current_time()
    for event in events:
        if isinstance(event, GameCreated):
            metrics.GAMES_STARTED.labels(game).inc()
        elif isinstance(event, GameFinished):
            metrics.GAMES_FINISHED.labels(game).inc()


def _same_game(created: GameCreated, game_name: str, seats: Sequence[SeatRequest]) -> None:
    """A retried CreateGame must ask for the game its request id made."""
    wanted = (game_name, tuple((s.seat, s.player_id) for s in seats))
    have = (created.game, tuple((s.seat, s.player_id) for s in created.seats))
    if wanted != have:
        raise InvalidArgument("this request_id was already used to create a different game")


def created_of(envelope: events_pb2.EventEnvelope) -> GameCreated:
    """A game's first event, which names the game (so its codec can be chosen)."""
    event = Codec(()).loads(envelope.payload)
    if not isinstance(event, GameCreated):
        raise NotFound(f"game {envelope.game_id!r} has no GameCreated event first")
    return event
