"""The engine: every command that changes a game runs through one pipeline, `Engine.handle`.

Per game, commands run one at a time (a lock per game in this replica); across replicas the
event store's expected version makes a lost race safe: the loser reloads and retries, or
answers ABORTED when the client pinned the version it saw. Nothing here knows any one game:
games come from `boulevard.games.REGISTRY` through their `GameDefinition`, and what differs
between commands is in services/engine/commands.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import structlog
from google.protobuf.message import DecodeError

from boulevard.api.v1 import engine_pb2, events_pb2
from boulevard.audit.signing import SigningKey, chain_hash
from boulevard.eventlog.errors import ConcurrencyConflict
from boulevard.eventlog.store import EventStore
from boulevard.games import REGISTRY
from boulevard.games.base import GameCreated, RulesError
from boulevard.games.clock import TimeControl
from boulevard.games.codec import Codec
from boulevard.games.versions import UnknownRulesVersion, for_release
from boulevard.platform import metrics
from boulevard.platform.auth import DEFAULT_TTL_SECONDS, PlayerClaims, issue_token
from boulevard.platform.errors import (
    Aborted,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unavailable,
    nats_unavailable,
)
from services.engine.chain import KeyValue, Recorder, open_snapshot
from services.engine.chance import ChanceSource, Settler
from services.engine.commands import (
    GAME_ID,
    Command,
    CopyBehind,
    Create,
    Created,
    Reclaim,
    Reclaimed,
    Reveal,
    SeatRequest,
    SeedRevealed,
    StandIn,
    Submit,
    Submitted,
    TimeOut,
)
from services.engine.sessions import Answer, Session, StaleSnapshot, answer

__all__ = [
    "Engine",
    "KeyValue",
    "MemoryKeyValue",
    "OutcomeUnknown",
    "SeatRequest",
    "Submitted",
    "game_id_for",
]

log = structlog.get_logger(__name__)

MAX_RETRIES = 5
# Where each game lookup found its game: in memory, from a snapshot it could open (and the
# log after it), or from its whole log.
_LOADED_FROM_CACHE = metrics.GAME_LOADS.labels("cache")
_LOADED_FROM_SNAPSHOT = metrics.GAME_LOADS.labels("snapshot")
_LOADED_FROM_LOG = metrics.GAME_LOADS.labels("log")


class OutcomeUnknown(Unavailable):
    """UNAVAILABLE for a command whose append was not confirmed: it may be in the log."""


class MemoryKeyValue:
    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    async def get(self, key: str) -> bytes | None:
        return self.data.get(key)

    async def put(self, key: str, value: bytes) -> None:
        self.data[key] = value


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
        on_halted: Callable[[Session], Awaitable[None]] | None = None,
        reveal_seconds: float = 60.0,
        receipt_key: SigningKey | None = None,
        idle_trim_seconds: float = 30.0,
        stand_in_key: SigningKey | None = None,
        rules_release: str = "",
    ) -> None:
        # New games take this release's rules ("": the newest recorded). Checked now, so a
        # misspelt release fails the start, not the first CreateGame.
        for name in REGISTRY:
            for_release(name, rules_release)
        self.rules_release = rules_release
        self.store = store
        self.chance = chance
        self.snapshots = snapshots
        self.token_key = token_key
        self.token_ttl_seconds = token_ttl_seconds
        self.snapshot_every = snapshot_every
        self.clock = clock
        self.on_finished = on_finished
        self.on_halted = on_halted  # told once per load that finds the game halted
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
        # Games with a clock -> when they next need the engine unasked (a deadline, or now
        # when the bot is to play an absent seat): what `sweep_clocks` wakes. Rebuilt from
        # each game's log when loaded, and after a restart from the games index.
        self.clock_due: dict[str, int] = {}
        # Signs the moves the platform's bot plays for seats whose time ran out; its public
        # half is named in each SeatTimedOut (docs/auditing.md, "Clocks").
        self.stand_in_key = stand_in_key or SigningKey.generate()
        # Signs receipts and snapshots; its public half is served by GetEngineKey.
        self.receipt_key = receipt_key or SigningKey.generate()
        self.forged_snapshots = 0  # snapshots refused because the log disagreed
        # The pipeline's collaborators, in the order it calls them: the settling of what a
        # game owes (the dice service), and the append (the log, the snapshots).
        self.recorder = Recorder(
            store,
            snapshots,
            self.receipt_key,
            snapshot_every,
            clock,
            kept=self._kept,
            dropped=self._dropped,
        )
        self.settler = Settler(chance, self.recorder, clock, self.awaiting_seeds, on_finished)

    # -- the commands: each is built here and run by `handle` ------------------------------

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
        message's deterministic encoding) and `command` the game command it maps to. (The
        server builds SubmitAction's `Submit` from the request itself.)"""
        return await self.handle(
            Submit(
                game_id,
                claims,
                expected_version,
                idempotency_key,
                action,
                signature,
                command=command,
            )
        )

    async def submit_action(
        self,
        game_id: str,
        claims: PlayerClaims,
        action: engine_pb2.Action | None,
        expected_version: int,
        idempotency_key: str,
        signature: bytes,
    ) -> Submitted:
        """Run one signed Action as a seat sends it (as SubmitAction does, for callers in
        this process): mapped to the game's command once the game is loaded; the seat
        signed its deterministic encoding."""
        signed = action.SerializeToString(deterministic=True) if action is not None else b""
        return await self.handle(
            Submit(game_id, claims, expected_version, idempotency_key, signed, signature, action)
        )

    async def reclaim_seat(
        self, game_id: str, claims: PlayerClaims, expected_version: int, signature: bytes
    ) -> Reclaimed:
        """A timed-out seat of a turn-based game takes its place back from the bot."""
        done = await self.handle(Reclaim(game_id, claims, expected_version, signature))
        assert done.receipt is not None, "a reclaim is receipted"
        # Timed: the player can show when the engine took the seat back for them.
        return Reclaimed(done.first, done.receipt)

    async def reveal_seed(
        self, game_id: str, claims: PlayerClaims, client_seed: str
    ) -> SeedRevealed:
        """Record a seat's client seed, checked against the commitment it made before the
        server seed was drawn; once every seat has revealed, the game's dice can run."""
        done = await self.handle(Reveal(game_id, claims, client_seed, clock=self.clock))
        assert done.session is not None, "the pipeline answers with the game"
        return SeedRevealed(
            done.version,
            not done.session.unrevealed(),
            done.session.created.reveal_deadline_unix_ms,
            done.receipt,
        )

    async def create_game(
        self,
        request_id: str,
        game_name: str,
        seats: Sequence[SeatRequest],
        options: Sequence[tuple[str, str]] = (),
        match_id: str = "",
        creator: str = "",
        time_control: TimeControl | None = None,
    ) -> Created:
        """Create (or, for a retry, find) a game. A matched game's id is its match id; any
        other game's id is `game_id_for(creator, request_id)`."""
        game_id = match_id or game_id_for(creator, request_id)
        done = await self.handle(
            Create(
                game_id=game_id,
                request_id=request_id,
                game_name=game_name,
                seats=seats,
                options=options,
                match_id=match_id,
                chance=self.chance,
                clock=self.clock,
                reveal_ms=self.reveal_ms,
                time_control=time_control,
                rules_release=self.rules_release,
            )
        )
        assert done.session is not None, "the pipeline answers with the game"
        created = done.session.created
        log.info("game ready", game_id=game_id, game=created.game, version=done.version)
        tokens = tuple(self.seat_token(game_id, s.seat, s.player_id) for s in created.seats)
        return Created(game_id, tokens, created.seed_commitment)

    # -- the pipeline ---------------------------------------------------------------------

    async def handle(self, command: Command) -> Answer:
        """Run one command that changes a game, step by step (docs/architecture.md, "One
        command pipeline"); each step is a function of the module that owns its concern, in
        the order they are called: this file (authorize, load), chance.py (settle),
        commands.py (verify, decide), chain.py (append), sessions.py (evolve, answer). A
        lost race with another writer reloads the game and runs the steps again, unless the
        caller pinned the version it decided on (ABORTED). A caller who pinned a version
        past this replica's cached copy (another replica wrote since) has the log read
        again, once, before the rules decide (`CopyBehind`).

        The rules a game runs by are the ones its GameCreated names, chosen where the session
        is made (`Session.new`, `Session.from_snapshot`); a command that is not a player's
        (a seat's timeout, a bot's move for an absent seat) is a class of its own in
        commands.py, handed to `handle` by a sweeper as a player's call is by the server."""
        # authorize: who may ask, before anything is read (the rest of the request was
        # checked when the command was built).
        if command.claims is not None and command.claims.game_id != command.game_id:
            raise PermissionDenied("this token is for another game")
        reread = False  # the log was read again for a caller who saw past the cached copy
        for _attempt in range(MAX_RETRIES):
            async with self._lock(command.game_id):
                # The game from cache, snapshot and log, with the rules its GameCreated
                # names: never other rules (FAILED_PRECONDITION when not hosted here).
                session = await self._load_or_none(command.game_id)
                if session is None:
                    session = await command.open()  # a new game, or NOT_FOUND
                self.refuse_halted(session)  # an event it cannot read stopped the game
                if command.settles_first and not await self.settler.settled(session):
                    continue  # another replica settled it first: read the log again
                done = command.verify(session)  # the signature, the seat
                if done is not None:  # a retry: the first result, to the seat that sent it
                    return await answer(
                        session, done.first, done.last, self.store, self.receipt_key,
                        command.receipted, command.claims,
                    )  # fmt: skip
                try:
                    events = await command.decide(session)  # the rules
                except CopyBehind:
                    if reread:
                        raise  # the log itself is not there: ABORTED
                    # Another replica wrote since this copy was cached: drop it and read
                    # the log again (a call that missed the game's owner costs a load).
                    self._sessions.pop(command.game_id, None)
                    reread = True
                    continue
                first = session.version + 1
                if events:
                    try:
                        # At the expected version; folds the events in and snapshots.
                        await self.recorder.append(session, events, command.causation)
                    except ConcurrencyConflict:
                        # Another replica wrote first (`append` dropped our copy), or an
                        # earlier attempt of this very command did (its append unconfirmed).
                        if not command.pinned:
                            continue  # decide again on the fresh log (or find it there)
                        fresh = await self._load(command.game_id)
                        # Not kept: the other writer may still be settling its command.
                        self._sessions.pop(command.game_id, None)
                        done = command.verify(fresh)
                        if done is not None:
                            return await answer(
                                fresh, done.first, done.last, self.store, self.receipt_key,
                                command.receipted, command.claims,
                            )  # fmt: skip
                        raise  # the client pinned the version it decided on: ABORTED
                    except Exception as exc:
                        why = command.unconfirmed()
                        if why is None or not nats_unavailable(exc):
                            raise
                        # The append may or may not have been stored.
                        raise OutcomeUnknown(why) from exc
                # What the stored command led to (chance, the end). Another replica that
                # reloaded the game may resolve the same chance first (the same outcome: the
                # request id names the version); the command stands, so read the log again
                # and carry on rather than fail it.
                for _settling in range(MAX_RETRIES):
                    if await self.settler.settled(session, command.causation):
                        break
                    session = await self._load(command.game_id)  # `append` dropped our copy
                else:
                    raise Aborted(
                        "too many concurrent writers on this game; reload to see your move"
                    )
                return await answer(
                    session,
                    first,
                    session.version,
                    self.store,
                    self.receipt_key,
                    signed=command.receipted,
                )
        raise Aborted("too many concurrent writers on this game; try again")

    def stored_version(self, game_id: str) -> int:
        """The version this replica last saw stored for the game (its cached copy: its own
        appends and loads), 0 when it holds none; never a read."""
        session = self._sessions.get(game_id)
        return session.version if session is not None else 0

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

    def _kept(self, session: Session) -> None:
        """A session that moved on (an append): cached, its clock's next step tracked."""
        self._cache(session)
        self._track_clock(session)

    def _dropped(self, game_id: str) -> None:
        """A game whose cached copy may be behind the log: read from the log next time."""
        self._sessions.pop(game_id, None)

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

    def waiting_since_ms(self) -> list[int]:
        """For each unfinished, unhalted game this replica holds, when its newest event
        was appended (ms since the epoch; 0 if unknown): what the stall signal reads."""
        return [
            s.last_event_ms
            for s in list(self._sessions.values())
            if s.finished is None and s.halted is None
        ]

    def cached(self, game_id: str) -> Session | None:
        """The game as this replica last saw it, if it holds it (no I/O, no lock)."""
        return self._sessions.get(game_id)

    async def _load_or_none(self, game_id: str) -> Session | None:
        """The pipeline's `load` step: the game from memory, else from its sealed snapshot
        and the log after it (`_fold`); None when it has no log. INVALID_ARGUMENT for a
        malformed id, before anything is read."""
        if not GAME_ID.match(game_id):
            raise InvalidArgument(f"malformed game id {game_id!r}")
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
            self._track_clock(session)
        return session

    async def _fold(self, game_id: str) -> Session | None:
        """The game from its sealed snapshot (if it can be trusted) and its log's tail,
        folded by the rules version its GameCreated names (`rules_of`, sessions.py)."""
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
            if session is not None and session.halted is not None:
                break
            try:
                envelope = events_pb2.EventEnvelope.FromString(recorded.data)
            except DecodeError as exc:
                if session is None:
                    raise
                await self._halt(session, recorded.version, f"not an EventEnvelope ({exc})")
                break
            if session is None:
                created = created_of(envelope)
                session = Session.new(game_id, created)
            try:
                session.apply_envelope(envelope, recorded.data)
            except Exception as exc:  # any event the rules cannot read or apply halts
                await self._halt(session, recorded.version, f"{envelope.type or 'an event'}: {exc}")

        return session

    async def _halt(self, session: Session, version: int, why: str) -> None:
        """The pipeline's `halt` step: a game whose log holds an event this engine cannot
        read stops there, visibly (its status, a metric, an alert, the version named),
        instead of failing every call on it — and no other game is touched. It takes no
        more commands; its log is still served as stored, and every audit fails there."""
        session.halted = (version, why[:500])
        self.awaiting_seeds.pop(session.game_id, None)
        metrics.GAMES_HALTED.labels(session.game.name).inc()
        log.error(
            "GAME HALTED: its log holds an event the engine cannot read",
            game_id=session.game_id,
            version=version,
            why=why,
        )
        if self.on_halted is not None:
            try:
                await self.on_halted(session)
            except Exception:  # the index shows it next time; the game is halted regardless
                log.exception("could not record the halted game", game_id=session.game_id)

    @staticmethod
    def refuse_halted(session: Session) -> None:
        """FAILED_PRECONDITION for any command on a halted game."""
        if session.halted is not None:
            version, why = session.halted
            raise FailedPrecondition(
                f"game {session.game_id} is halted at version {version}: its log holds an "
                f"event the engine cannot read ({why}); it takes no more commands"
            )

    def _open_snapshot(self, game_id: str, raw: bytes) -> Session | None:
        opened = open_snapshot(self.receipt_key, raw)
        if opened is None:
            self._forged_snapshot(game_id, "not signed by this engine's key")
            return None
        body, _version, _head = opened
        try:
            return Session.from_snapshot(game_id, body)
        except StaleSnapshot as stale:
            log.info("snapshot of another schema: rebuilding from the log", game_id=game_id)
            log.debug("stale snapshot", why=str(stale))
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
        if not GAME_ID.match(game_id):  # before a lock is made for it
            raise InvalidArgument(f"malformed game id {game_id!r}")
        async with self._lock(game_id):
            for _attempt in range(MAX_RETRIES):
                session = await self._load(game_id)
                if session.halted is not None:
                    return session  # nothing to settle: it takes nothing more
                if await self.settler.settled(session):
                    return session
                # else another replica settled it first: read the log again
        raise Aborted("too many concurrent writers on this game; try again")

    # -- waking games nobody calls ------------------------------------------------------

    async def sweep_reveals(self) -> int:
        """Wake the games whose reveal deadline has passed (their players may never come
        back): each is loaded, which fixes its seeds and runs its chance. How many woke."""
        now = self.clock()
        due = [g for g, deadline in self.awaiting_seeds.items() if deadline and deadline <= now]
        for game_id in due:
            try:
                async with self._lock(game_id):
                    # A copy cached here may be behind the log: the seats may have revealed
                    # through another replica (the game's owner, when it was made here).
                    # Fixing the seeds from a stale opening would be refused by the dice
                    # service at every sweep; read the log (once per game, at its deadline).
                    self._sessions.pop(game_id, None)
                session = await self.load(game_id)
                if session.seeds_fixed:
                    self.awaiting_seeds.pop(game_id, None)
            except Exception:
                log.exception("could not settle a game past its reveal deadline", game_id=game_id)
        return len(due)

    # -- clocks: timeouts and the bot for absent seats ---------------------------------------

    def _track_clock(self, session: Session) -> None:
        due = session.next_clock_due()
        if due is None:
            self.clock_due.pop(session.game_id, None)
        else:
            self.clock_due[session.game_id] = due

    def overdue_games(self, grace_ms: int = 10_000) -> int:
        """Games whose clock step is over `grace_ms` late (the sweeper is stuck or failing):
        what the games-overdue gauge shows."""
        cutoff = self.clock() - grace_ms
        return sum(1 for due in list(self.clock_due.values()) if due < cutoff)

    async def sweep_clocks(self) -> int:
        """Time out the seats whose deadline has passed and let the platform's bot play the
        seats that are absent, in every game due (docs/auditing.md, "Clocks"). Any replica
        may sweep any game: each step is an append at the expected version, so a step two
        replicas race for is recorded once. How many games were swept."""
        now = self.clock()
        due = [g for g, when in self.clock_due.items() if when <= now]
        for game_id in due:
            try:
                await self.run_clock(game_id)
            except Exception:
                log.exception("could not run a game's clock", game_id=game_id)
        return len(due)

    async def run_clock(self, game_id: str, max_moves: int = 10_000) -> Session:
        """One game's clock steps, now: its overdue seats timed out (SeatTimedOut), then the
        bot's moves for absent seats while the game asks one to act. The game as it stands
        after them."""
        await self.handle(TimeOut(game_id, self.clock, self.stand_in_key))
        for _move in range(max_moves):
            session = await self.load(game_id)
            if not session.absent_to_act():
                return session
            await self.handle(StandIn(game_id, self.stand_in_key))
        return await self.load(game_id)

    # -- tokens ---------------------------------------------------------------------------

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


def created_of(envelope: events_pb2.EventEnvelope) -> GameCreated:
    """A game's first event, which names the game (so its codec can be chosen)."""
    event = Codec(()).loads(envelope.payload)
    if not isinstance(event, GameCreated):
        raise NotFound(f"game {envelope.game_id!r} has no GameCreated event first")
    return event
