"""The engine's gRPC servicer: requests to engine calls, results to responses. Errors are
mapped to status codes by the platform's interceptor, not here."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import grpc
import structlog

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2
from boulevard.audit.evidence import receipt_to_pb
from boulevard.audit.signing import Receipt, chain_hash
from boulevard.contract import mapping
from boulevard.contract.clocks import (
    seat_clocks_to_proto,
    time_control_from_proto,
    time_control_to_proto,
)
from boulevard.contract.players import BOT_PREFIX
from boulevard.eventlog.jetstream import JetStreamEventStore, follow
from boulevard.games.base import RulesError
from boulevard.games.clock import TimeControl
from boulevard.platform import metrics
from boulevard.platform.auth import PlayerClaims, authorize, verify_token
from boulevard.platform.edge import checked
from boulevard.platform.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
)
from boulevard.platform.errors import status_of as error_status
from boulevard.platform.identity import OPERATOR, PLAYER, TokenVerifier
from boulevard.platform.wire import sent_unknown_field
from services.engine.chance import Finish, FixSeeds, Resolve, owed
from services.engine.commands import Submit
from services.engine.engine import Engine, SeatRequest
from services.engine.games_index import GamesIndex, IndexUnavailable
from services.engine.sessions import Mark, Session, redacted

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]


def status_of(session: Session) -> engine_pb2.GameStatus.ValueType:
    if session.halted is not None:
        return engine_pb2.GAME_STATUS_HALTED
    return engine_pb2.GAME_STATUS_FINISHED if session.finished else engine_pb2.GAME_STATUS_ACTIVE


def _time_control(request: engine_pb2.CreateGameRequest) -> TimeControl | None:
    """The concrete control a CreateGame asks for (a game default resolved); None: none."""
    if not request.HasField("time_control"):
        return None
    try:
        return time_control_from_proto(request.time_control, request.game)
    except ValueError as err:
        raise InvalidArgument(f"time_control: {err}") from None


_STATUSES = {
    "active": engine_pb2.GAME_STATUS_ACTIVE,
    "finished": engine_pb2.GAME_STATUS_FINISHED,
    "halted": engine_pb2.GAME_STATUS_HALTED,
}


def summary_json(session: Session) -> bytes:
    status = "finished" if session.finished else "active"
    summary: dict[str, Any] = {
        "game": session.game.name,
        "status": "halted" if session.halted is not None else status,
        "version": session.version,
        "players": [s.player_id for s in session.created.seats],
        # When the engine wrote this summary (the game's creation, then its end): what
        # `boulevard audit all --since` filters on.
        "updated_unix_ms": int(time.time() * 1000),
    }
    if session.halted is not None:
        summary["halted_at_version"] = session.halted[0]
    elif not session.seeds_fixed:
        # What the reveal sweeper looks for after a restart.
        summary["seeds_pending_until"] = session.created.reveal_deadline_unix_ms
    if session.created.time_control is not None:
        summary["clocked"] = True  # what the clock sweeper looks for after a restart
    return json.dumps(summary, sort_keys=True).encode()


log = structlog.get_logger(__name__)

PLAYER_POLL_SECONDS = 0.5  # WatchPlayer looks at a player's games this often
LIST_WAIT_SECONDS = 5.0  # ListGames waits this long for a replaying index, then UNAVAILABLE
BURST_MAX = 128  # WatchGame in bursts mode: events per message at most (a catch-up splits)


class Feed:
    """One game's log as this replica reads it, shared by all of the game's WatchGame streams
    here: one NATS consumer and one decode per event, however many watch (issue 17: each
    stream had its own consumer, so every event crossed the NATS socket once per watcher).
    It holds the events read so far; each stream walks them at its own pace.

    `known` is the version this replica knows is stored (its own appends; 0: unknown). A
    consumer that stops delivering while the log goes on (seen in the network-fault runs:
    tables stopped with a seat to act whose bot's stream never brought its turn) would
    leave every stream waiting for good, so a feed more than `STALE_SECONDS` behind what
    this replica itself appended reads the log again with a new consumer, from the start,
    keeping only the versions it does not hold yet."""

    STALE_SECONDS = 8.0  # past nats-py's own reset of a silent ordered consumer (2 x 5 s)
    CHECK_SECONDS = 1.0

    def __init__(
        self, store: JetStreamEventStore, game_id: str, known: Callable[[], int] = lambda: 0
    ) -> None:
        self.events: list[events_pb2.EventEnvelope] = []
        # version -> its envelope as watchers see it during the game (`shown`).
        self._shown: dict[int, events_pb2.EventEnvelope] = {}
        self.watchers = 0
        self.restarts = 0  # times a stale consumer was replaced (logged; for tests)
        self._known = known
        self._error: BaseException | None = None
        self._wake = asyncio.Event()
        self.task = asyncio.create_task(self._read(store, game_id), name=f"feed-{game_id}")
        # Its streams get any failure (`after`); retrieved here so asyncio does not report it.
        self.task.add_done_callback(lambda t: t.cancelled() or t.exception())

    @property
    def version(self) -> int:
        return int(self.events[-1].version) if self.events else 0

    async def _read(self, store: JetStreamEventStore, game_id: str) -> None:
        try:
            while True:
                reader = asyncio.create_task(self._follow(store, game_id))
                try:
                    await self._until_stale(reader)
                finally:
                    reader.cancel()
                    await asyncio.gather(reader, return_exceptions=True)
                self.restarts += 1
                log.warning(
                    "a game's feed fell behind this engine's appends; reading it anew",
                    game_id=game_id,
                    held=self.version,
                    stored=self._known(),
                )
        except BaseException as exc:
            self._error = exc
            self._wake.set()
            raise

    async def _follow(self, store: JetStreamEventStore, game_id: str) -> None:
        async for batch in follow(store, game_id):
            held = self.version
            fresh = [events_pb2.EventEnvelope.FromString(r.data) for r in batch if r.version > held]
            if fresh:
                self._add(fresh)

    async def _until_stale(self, reader: asyncio.Task[None]) -> None:
        """Return when the reader has been behind `known` for STALE_SECONDS (or ended);
        its failure passes through."""
        behind_since: float | None = None
        while True:
            done, _ = await asyncio.wait({reader}, timeout=self.CHECK_SECONDS)
            if done:
                reader.result()
                return  # a follow never ends by itself: read again
            if self._known() <= self.version:
                behind_since = None
                continue
            now = time.monotonic()
            behind_since = behind_since or now
            if now - behind_since >= self.STALE_SECONDS:
                return

    def offer(self, envelopes: Sequence[events_pb2.EventEnvelope]) -> None:
        """This replica's own append, confirmed by the store (`envelopes`: what it stored,
        in order), fed to the streams at once: no wait for the consumer's delivery and no
        decode of it (issue 28). Taken only when it follows what the feed holds; otherwise
        the consumer brings it, as it brings every other replica's appends. The consumer
        keeps reading everything, and whatever it delivers that the feed holds already (by
        version) it drops unread."""
        if envelopes and int(envelopes[0].version) == self.version + 1:
            self._add(list(envelopes))

    def _add(self, fresh: list[events_pb2.EventEnvelope]) -> None:
        self.events.extend(fresh)
        self._wake.set()  # wakes every stream waiting now; later ones wait anew
        self._wake = asyncio.Event()

    def shown(self, game: Any, envelope: events_pb2.EventEnvelope) -> events_pb2.EventEnvelope:
        """`envelope` (one of `events`) as players and watchers may see it before the game
        ends (`redacted`), worked out once per event for all of the feed's streams: telling
        a roll from a shuffle decodes the event (issue 28: every stream decoded every roll).
        What cannot be read raises RulesError, each time it is asked for."""
        if envelope.type != "ChanceResolved":
            return envelope  # what `redacted` leaves as it is without decoding
        version = int(envelope.version)
        found = self._shown.get(version)
        if found is None:
            found = self._shown[version] = redacted(game, envelope, False)
        return found

    async def after(self, seen: int) -> list[events_pb2.EventEnvelope]:
        """The events past the first `seen`, once there are any (what arrived together)."""
        while len(self.events) <= seen:
            if self._error is not None:
                raise self._error
            await self._wake.wait()
        return self.events[seen:]


class Actions:
    """Legal commands mapped to `Action` protos, kept by value across versions and games.

    Most of a version's legal commands were legal the version before (a Vegas Showdown
    seat's 66 on average, 87% of them; Lords of Vegas 70%), and mapping one costs several
    times looking it up. The mapping is a function of the command's value (a frozen
    dataclass; sets are mapped sorted), so an equal command gets the message it would have
    got anyway: the key is the game's name and the command (its class included), all the
    mapping depends on. The messages are only read (responses copy them), never changed.
    Bounded: forgotten all at once when full, then filled again."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._known: dict[tuple[str, Any], engine_pb2.Action] = {}

    def action(self, game: Any, command: Any) -> engine_pb2.Action:
        key = (game.name, command)
        found = self._known.get(key)
        if found is None:
            if len(self._known) >= self.size:
                self._known.clear()
            found = self._known[key] = mapping.command_to_action(game, command)
        return found


ACTIONS = Actions()


class Shown:
    """One distinct view of a game's version: the game's view, its `GameView` message
    without the text board, and the text board once a reader asked for it (rendering is a
    good part of a view's cost, and clients that draw their own board never read it)."""

    __slots__ = ("_text", "message", "view")

    def __init__(self, view: Any, message: engine_pb2.GameView) -> None:
        self.view = view
        self.message = message
        self._text: str | None = None

    def text(self, game: Any) -> str:
        """The view's text board (the game's `render`), rendered once."""
        if self._text is None:
            self._text = game.render(self.view)
        return self._text


# How long the seats' clocks computed for one version's updates serve other streams sending
# the same version (`clocks_at`).
CLOCKS_SHARED_MS = 50


def clocks_at(session: Session, at_ms: int) -> tuple[int, list[events_pb2.SeatClock]]:
    """Every seat's clock at `at_ms` (never before the last envelope's time) as the messages
    an update carries, and the time they were computed at (its `clocks_unix_ms`). Made once
    for the streams that send the same version within CLOCKS_SHARED_MS of one another, at
    the first one's time (issue 28: per stream and version they were most of what a clock
    costs a move): the update says when they were computed, and a ticking clock is drawn
    from its `deadline_unix_ms`, which no instant changes (docs/clients.md, "Clocks")."""
    at_ms = max(at_ms, session.time_ms())
    made: list[tuple[int, list[events_pb2.SeatClock]]] = session.memo("clocks", None, list)
    if made and 0 <= at_ms - made[0][0] <= CLOCKS_SHARED_MS:
        return made[0]
    made[:] = [(at_ms, seat_clocks_to_proto(session.clock_times(at_ms)))]
    return made[0]


class Expiry:
    """A seat's stream's token expiry: one timer for the stream's whole life, which ends the
    stream's wait for its next burst (`next_batch`) when it fires. Issue 28: an
    `asyncio.timeout` around every wait (a timer made, pushed on the loop's heap and
    cancelled per burst and stream) was a visible share of the engine's CPU.

    Expiry is by the wall clock, as the token's is: a wait never starts once the token's
    `expires_unix` has passed, and the timer, which runs on the loop's clock, re-arms itself
    if it fires before that. `close` cancels the timer (when the stream ends)."""

    def __init__(self, expires_unix: float) -> None:
        self.expires_unix = expires_unix
        self._loop = asyncio.get_running_loop()
        self._waiting: asyncio.Task[Any] | None = None  # the task waiting now, if any
        self._cancelling = 0  # its cancellation requests from elsewhere when it began
        self._cancelled = False  # the timer cancelled the wait
        self._timer = self._arm()

    def _arm(self) -> asyncio.TimerHandle:
        return self._loop.call_later(max(self.expires_unix - time.time(), 0.0), self._fire)

    def _fire(self) -> None:
        if time.time() < self.expires_unix:
            self._timer = self._arm()  # the loop's clock ran ahead of the wall clock
        elif self._waiting is not None and not self._cancelled:
            self._cancelled = True
            self._waiting.cancel()

    @property
    def expired(self) -> bool:
        return time.time() >= self.expires_unix

    def close(self) -> None:
        self._timer.cancel()

    async def wait(self, feed: Feed, seen: int) -> list[events_pb2.EventEnvelope] | None:
        """`feed.after(seen)`, or None when the token expires first (or has already)."""
        if self.expired:
            return None
        task = asyncio.current_task()
        assert task is not None, "called from a task"
        self._waiting, self._cancelling, self._cancelled = task, task.cancelling(), False
        try:
            return await feed.after(seen)
        except asyncio.CancelledError:
            # Ours alone: the token's expiry. Any other cancellation passes on.
            if self._cancelled and task.uncancel() <= self._cancelling:
                return None
            raise
        finally:
            self._waiting = None


async def next_batch(
    feed: Feed, seen: int, expiry: Expiry | None, resume_at: int
) -> list[events_pb2.EventEnvelope]:
    """The feed's events past `seen`, once there are any; a seat's stream (`expiry`: its
    token's) ends UNAUTHENTICATED at expiry, naming the version to watch again from.
    The feed's own failures (a NATS timeout among them) pass through as they are: they are
    not the token's expiry.

    Called once per burst by every stream, so it waits in the stream's own task, under the
    stream's one timer (`Expiry`)."""
    if expiry is None:
        return await feed.after(seen)
    batch = await expiry.wait(feed, seen)
    if batch is not None:
        return batch
    raise Unauthenticated(
        "player token expired; renew it (RenewPlayerToken) and watch again from version "
        f"{resume_at}"
    )


SUBMIT_ACTIONS = "/boulevard.v1.EngineService/SubmitActions"
SUBMIT_FIRST_SECONDS = 10.0  # a SubmitActions stream's first move or `open` comes within this


def _refusal(exc: Exception) -> tuple[grpc.StatusCode, str]:
    """The status a unary call failing with `exc` ends with (`abort_for`'s mapping): the
    known errors' code and message, INTERNAL (logged) for the unexpected."""
    mapped = error_status(exc)
    if mapped is None:
        log.error("unexpected error", method=SUBMIT_ACTIONS, exc_info=exc)
        return grpc.StatusCode.INTERNAL, f"internal error: {type(exc).__name__}"
    return mapped


def _addressed(
    message: engine_pb2.SubmitActionRequest | engine_pb2.SubmitActionsOpen,
) -> tuple[str, str]:
    """The game id and token a SubmitActions message (its move or its `open`) names, once
    it is within the edge's limits (`checked`: InvalidArgument if not)."""
    checked(message)
    return message.game_id, message.player_token


class EngineServicer(engine_pb2_grpc.EngineServiceServicer):
    def __init__(
        self,
        engine: Engine,
        store: JetStreamEventStore,
        games_index: GamesIndex,
        verifier: TokenVerifier,
        max_spectator_streams: int = 2000,
        max_streams_per_seat: int = 4,
        key_history_file: Path | None = None,
    ) -> None:
        self.engine = engine
        # The platform's published key history, served as the operator last wrote it.
        self.key_history_file = key_history_file
        self.store = store
        self.index = games_index
        self.verifier = verifier
        self._feeds: dict[str, Feed] = {}  # game id -> its log, while anyone watches it
        # Open WatchGame streams: spectators' (one budget for all), and each seat's own.
        self.max_spectator_streams = max_spectator_streams
        self.max_streams_per_seat = max_streams_per_seat
        self._spectators = 0
        self._seat_streams: dict[tuple[str, int], int] = {}
        self._player_streams: dict[str, int] = {}  # WatchPlayer streams by player id
        self._submit_streams: dict[tuple[str, int], int] = {}  # SubmitActions, by seat
        # SubmitActions counts each message as a call (the interceptor counts unary calls,
        # and a bidi stream as a whole under "SubmitActions.stream").
        self._submit_counts = {
            code: metrics.GRPC_REQUESTS.labels("engine", "SubmitActions", code.name)
            for code in grpc.StatusCode
        }
        self._submit_seconds = metrics.GRPC_SECONDS.labels("engine", "SubmitActions")
        # An `open` is no move: counted apart, by code, and not timed (its work is a token
        # check; the moves' histogram stays the moves').
        self._open_counts = {
            code: metrics.GRPC_REQUESTS.labels("engine", "SubmitActions.open", code.name)
            for code in grpc.StatusCode
        }
        # This replica's own appends go to the game's feed as soon as they are stored.
        engine.recorder.appended = self._offer

    async def CreateGame(
        self, request: engine_pb2.CreateGameRequest, context: Context
    ) -> engine_pb2.CreateGameResponse:
        operator = self.verifier.require(context.invocation_metadata(), OPERATOR, "CreateGame")
        if any(sent_unknown_field(s, 3) for s in request.seats):
            raise InvalidArgument(
                "seats carry client_seed_commitment (SHA-256 of the seed), not client_seed: "
                "the seed is revealed with RevealSeed after the game is created"
            )
        for s in request.seats:
            if s.player_id.startswith(BOT_PREFIX):
                # The platform's bots are seated by matchmaking only, with the bot key: a
                # `bot-<n>` seat named here would be the operator's own seat passed off as
                # the platform's bot (its token and key are the operator's).
                raise InvalidArgument(
                    f"seat {s.seat}: player ids starting with {BOT_PREFIX!r} are reserved "
                    "for the platform's bots, which only matchmaking seats"
                )
        created = await self.engine.create_game(
            request.request_id,
            request.game,
            [
                SeatRequest(s.seat, s.player_id, s.client_seed_commitment, public_key=s.public_key)
                for s in request.seats
            ],
            tuple(sorted(request.options.items())),
            creator=operator.subject,
            time_control=_time_control(request),
        )
        session = await self.engine.load(created.game_id)
        await self.index.put(created.game_id, summary_json(session))
        return engine_pb2.CreateGameResponse(
            game_id=created.game_id,
            player_tokens=list(created.tokens),
            seed_commitment=created.seed_commitment,
        )

    @staticmethod
    def _shown(session: Session, seat: int | None) -> Shown:
        """A seat's (or a spectator's, None) view at the session's version, mapped once per
        version and shared by every reader of that seat; its text board is rendered only
        when a reader asks for it (`Shown.text`)."""

        def compute() -> Shown:
            view = session.game.view(session.state, seat)
            # Seats that may see the same (in many games, everyone sees everything but the
            # deck) share one mapped message: it is a function of the view's value alone,
            # so an equal view gets the bytes it would have got anyway.
            known: list[Shown] = session.memo("views", None, list)
            for other in known:
                if type(other.view) is type(view) and other.view == view:
                    return other
            # Views that differ only a little (Las Vegas: in `seat` alone) are mapped as the
            # first one's message with what differs written anew: the same bytes.
            like = (known[0].view, known[0].message) if known else None
            shown = Shown(view, mapping.view_to_proto(session.game, view, like, render=False))
            known.append(shown)
            return shown

        shown: Shown = session.memo("view", seat, compute)
        return shown

    @staticmethod
    def _view(session: Session, seat: int | None) -> engine_pb2.GameView:
        """A seat's `GameView` with its text board (GetGame's)."""
        shown = EngineServicer._shown(session, seat)
        view = engine_pb2.GameView()
        view.CopyFrom(shown.message)
        view.rendered = shown.text(session.game)
        return view

    @staticmethod
    def _legal_actions(session: Session, seat: int) -> list[engine_pb2.Action]:
        """A seat's legal actions as protos: mapped once per version and shared by every
        reader (ListLegalActions and each WatchGame stream of that seat)."""

        def compute() -> list[engine_pb2.Action]:
            return [ACTIONS.action(session.game, c) for c in session.legal(seat)]

        actions: list[engine_pb2.Action] = session.memo("legal_actions", seat, compute)
        return actions

    def _seat(self, token: str, game_id: str) -> int | None:
        """The caller's seat, or None for a spectator (no token)."""
        if not token:
            return None
        return authorize(self.engine.token_key, token, game_id).seat

    async def GetGame(
        self, request: engine_pb2.GetGameRequest, context: Context
    ) -> engine_pb2.GetGameResponse:
        seat = self._seat(request.player_token, request.game_id)
        session = await self.engine.load(request.game_id)
        response = engine_pb2.GetGameResponse(
            game_id=session.game_id,
            game=session.game.name,
            version=session.version,
            status=status_of(session),
            view=self._view(session, seat),
            to_act=session.to_act() if session.halted is None else [],
            halted_at_version=session.halted[0] if session.halted else 0,
            halted_reason=session.halted[1] if session.halted else "",
        )
        control = session.created.time_control
        if control is not None:
            now = self.engine.clock()
            response.time_control.CopyFrom(time_control_to_proto(control))
            response.clocks.extend(seat_clocks_to_proto(session.clock_times(now)))
            response.clocks_unix_ms = now
        return response

    async def ListLegalActions(
        self, request: engine_pb2.ListLegalActionsRequest, context: Context
    ) -> engine_pb2.ListLegalActionsResponse:
        seat = self._seat(request.player_token, request.game_id)
        if seat is None:
            raise Unauthenticated("a player token is required")
        session = await self.engine.load(request.game_id)
        return engine_pb2.ListLegalActionsResponse(
            version=session.version, actions=self._legal_actions(session, seat)
        )

    async def SubmitAction(
        self, request: engine_pb2.SubmitActionRequest, context: Context
    ) -> engine_pb2.SubmitActionResponse:
        claims = verify_token(self.engine.token_key, request.player_token)
        return await self._submit(request, claims)

    async def _submit(
        self, request: engine_pb2.SubmitActionRequest, claims: PlayerClaims
    ) -> engine_pb2.SubmitActionResponse:
        """One move, its token's claims verified: what SubmitAction and each message of
        SubmitActions run, so the two answer and fail alike."""
        action = request.action if request.HasField("action") else None
        # The command as the seat sent it; the pipeline maps the Action to the game's command
        # once the game is loaded. The seat signed the Action's deterministic encoding.
        result = await self.engine.handle(
            Submit(
                request.game_id,
                claims,
                request.expected_version,
                request.idempotency_key,
                action.SerializeToString(deterministic=True) if action is not None else b"",
                request.signature,
                action=action,
            )
        )
        if result.finished:
            await self.index.put(
                request.game_id, summary_json(await self.engine.load(request.game_id))
            )
        return engine_pb2.SubmitActionResponse(
            version=result.version, events=result.envelopes, receipt=result.receipt
        )

    async def SubmitActions(
        self, requests: AsyncIterator[engine_pb2.SubmitActionsRequest], context: Context
    ) -> AsyncIterator[engine_pb2.SubmitActionsResponse]:
        """SubmitAction, one message per move on a stream (issue 28: a unary call cost the
        engine's gRPC several times what a stream message does; bench/grpc_calls.py).

        Each move (a message's `submit`) runs what SubmitAction runs (`_submit`) and is
        answered in order: with SubmitAction's response, or with the code and message
        SubmitAction would fail with (the stream goes on). The stream is one seat's: it is
        bound to the game, seat and player of its first message's token, and it ends (its
        status: what the message would get from SubmitAction) on any message whose token
        does not verify, is for another game or seat or player, or names another game than
        the stream's. It ends UNAUTHENTICATED, too, when the latest token it was sent
        expires (idle or not), and when no first message comes within SUBMIT_FIRST_SECONDS.
        Each seat has at most `max_streams_per_seat` of them open on this replica.

        An `open` message binds the stream as a first move would, with the same checks (its
        token, its game, the seat's bound), and runs no move: answered `opened` (the seat,
        the token's expiry). A client sends it when the seat sits down, so that its first
        move does not wait for grpc to take on a new call (issue 28: a median of 2.6 s on a
        saturated engine). On a bound stream an `open` of the same seat carries the stream
        on to its token's expiry (a renewed token), and anyone else's ends it as their move
        would. A message with neither `submit` nor `open`, or both, is refused alone
        (INVALID_ARGUMENT) and binds nothing.

        The platform's interceptor wraps the stream as a whole: what ends it is raised and
        mapped to its status there, the stream is counted when it ends
        ("SubmitActions.stream"), and bytes that are no message end it INVALID_ARGUMENT at
        their read. What it cannot know is done here per message, as the interceptor does
        per unary call: the edge's limits (a message over them is refused alone) and the
        counts: method "SubmitActions", by code, one per message that is not an `open` (and
        its time in the histogram); "SubmitActions.open", by code, one per `open` answered
        or refused alone, not timed (an open is no move). The NATS deadline guard has no
        deadline to answer by (a message has none); with NATS away a move fails
        UNAVAILABLE when the engine's own NATS wait times out."""
        # One generator for the whole stream (the interceptor's is the only other one a
        # move passes through): its seat, once its first message is in, is released at
        # its end, whatever ends it.
        bound: PlayerClaims | None = None
        verified = ""  # the token whose claims are `claims`, verified on this stream
        claims: PlayerClaims | None = None
        loop = asyncio.get_running_loop()
        incoming = aiter(requests)
        read_by = loop.time() + SUBMIT_FIRST_SECONDS
        try:
            while True:
                try:
                    async with asyncio.timeout_at(read_by):
                        message = await anext(incoming)
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    if bound is None:
                        raise Unauthenticated(
                            f"no move (nor `open`) within {SUBMIT_FIRST_SECONDS:.0f} s of "
                            "opening the stream"
                        ) from None
                    raise Unauthenticated(
                        "player token expired; renew it (RenewPlayerToken) and open the "
                        "stream again"
                    ) from None
                start = time.perf_counter()
                opening = message.HasField("open")
                if opening == message.HasField("submit"):
                    what = "both" if opening else "neither"
                    refused = InvalidArgument(
                        "a SubmitActions message carries a move (`submit`) or an `open`, "
                        f"exactly one; this one has {what}"
                    )
                    yield self._refused("", refused, start)
                    continue
                request = message.submit
                try:
                    # The edge's limits, before the token, as on a unary call; here, not in
                    # the interceptor, as a message over them is refused alone and the
                    # stream goes on.
                    game_id, token = _addressed(message.open if opening else request)
                except InvalidArgument as exc:
                    # Not even its key is echoed: it may be what is over its bound.
                    yield self._refused_open(exc) if opening else self._refused("", exc, start)
                    continue
                # What ends the stream: a token that does not verify, or anyone else's. The
                # token the stream's last message came with verified then: the same string is
                # not checked again (its MAC), only its expiry (issue 28: ~20 µs a move).
                if claims is None or token != verified or time.time() >= claims.expires_unix:
                    claims = verify_token(self.engine.token_key, token)
                    verified = token
                if claims.game_id != game_id:
                    raise PermissionDenied("this token is for another game")
                if bound is None:
                    self._admit_submitter(claims)  # before its first move runs (or `opened`)
                    bound = claims
                if (claims.game_id, claims.seat, claims.player_id) != (
                    bound.game_id,
                    bound.seat,
                    bound.player_id,
                ):
                    raise PermissionDenied(
                        f"this stream submits the moves of seat {bound.seat} in game "
                        f"{bound.game_id}; open another for another seat or game"
                    )
                # The stream lasts as long as the latest token it was sent (a renewed one
                # carries it on): a leaked token must not keep a seat's stream open for good.
                read_by = loop.time() + (claims.expires_unix - time.time())
                if opening:
                    self._open_counts[grpc.StatusCode.OK].inc()
                    yield engine_pb2.SubmitActionsResponse(
                        opened=engine_pb2.SubmitActionsOpened(
                            seat=claims.seat, expires_unix_ms=claims.expires_unix * 1000
                        )
                    )
                    continue
                try:
                    accepted = await self._submit(request, claims)
                except Exception as exc:
                    yield self._refused(request.idempotency_key, exc, start)
                    continue
                self._submit_counts[grpc.StatusCode.OK].inc()
                self._submit_seconds.observe(time.perf_counter() - start)
                yield engine_pb2.SubmitActionsResponse(
                    idempotency_key=request.idempotency_key, accepted=accepted
                )
        finally:
            if bound is not None:
                self._release_submitter(bound)

    def _refused(self, key: str, exc: Exception, start: float) -> engine_pb2.SubmitActionsResponse:
        """The answer to the move of idempotency key `key` that SubmitAction would fail with
        `exc`, counted."""
        code, text = _refusal(exc)
        self._submit_counts[code].inc()
        self._submit_seconds.observe(time.perf_counter() - start)
        return engine_pb2.SubmitActionsResponse(
            idempotency_key=key,
            error=engine_pb2.SubmitActionError(code=code.value[0], message=text),
        )

    def _refused_open(self, exc: Exception) -> engine_pb2.SubmitActionsResponse:
        """The answer to an `open` refused alone (over the edge's limits), counted."""
        code, text = _refusal(exc)
        self._open_counts[code].inc()
        return engine_pb2.SubmitActionsResponse(
            error=engine_pb2.SubmitActionError(code=code.value[0], message=text)
        )

    def _admit_submitter(self, claims: PlayerClaims) -> None:
        """Count a SubmitActions stream in for its seat; RESOURCE_EXHAUSTED over the bound
        (a stream holds a task and its buffers for as long as its token lasts)."""
        key = (claims.game_id, claims.seat)
        held = self._submit_streams.get(key, 0)
        if held >= self.max_streams_per_seat:
            raise ResourceExhausted(
                f"seat {claims.seat} already has {held} SubmitActions streams open on this "
                "game; close one first"
            )
        self._submit_streams[key] = held + 1

    def _release_submitter(self, claims: PlayerClaims) -> None:
        key = (claims.game_id, claims.seat)
        left = self._submit_streams.get(key, 0) - 1
        if left > 0:
            self._submit_streams[key] = left
        else:
            self._submit_streams.pop(key, None)

    async def RevealSeed(
        self, request: engine_pb2.RevealSeedRequest, context: Context
    ) -> engine_pb2.RevealSeedResponse:
        claims = verify_token(self.engine.token_key, request.player_token)
        revealed = await self.engine.reveal_seed(request.game_id, claims, request.client_seed)
        return engine_pb2.RevealSeedResponse(
            version=revealed.version,
            all_revealed=revealed.all_revealed,
            deadline_unix_ms=revealed.deadline_unix_ms,
            receipt=revealed.receipt,
        )

    async def ReclaimSeat(
        self, request: engine_pb2.ReclaimSeatRequest, context: Context
    ) -> engine_pb2.ReclaimSeatResponse:
        claims = verify_token(self.engine.token_key, request.player_token)
        reclaimed = await self.engine.reclaim_seat(
            request.game_id, claims, request.expected_version, request.signature
        )
        return engine_pb2.ReclaimSeatResponse(version=reclaimed.version, receipt=reclaimed.receipt)

    async def GetGameLog(
        self, request: engine_pb2.GetGameLogRequest, context: Context
    ) -> engine_pb2.GetGameLogResponse:
        size = request.page_size or 500
        if size > 1000:
            raise InvalidArgument("page_size is at most 1000")
        session = await self.engine.load(request.game_id)  # NOT_FOUND, malformed id
        finished = session.finished is not None
        start = max(request.from_version, 1)
        # Everything stored, not only what this replica folded: an auditor wants the log.
        recorded = await self.store.read(session.game_id, start)
        last_stored = recorded[-1].version if recorded else session.version
        page = recorded[:size]
        out = []
        for r in page:
            envelope = r.data
            hidden = False
            if not finished:
                # During a game, the same redaction as WatchGame: a shuffle's order is the
                # deck's future, so it stays hidden until the end. Bytes that are no
                # envelope (or no event) hide nothing: served as stored, for the audit.
                try:
                    parsed = events_pb2.EventEnvelope.FromString(r.data)
                    shown = redacted(session.game, parsed, False)
                except Exception:
                    shown = parsed = events_pb2.EventEnvelope()
                if shown is not parsed:
                    envelope, hidden = shown.SerializeToString(), True
            out.append(
                engine_pb2.LoggedEnvelope(
                    version=r.version,
                    envelope=envelope,
                    redacted=hidden,
                    chain_hash=chain_hash(r.data),
                )
            )
        last = page[-1].version if page else start - 1
        return engine_pb2.GetGameLogResponse(
            game_id=session.game_id,
            game=session.game.name,
            envelopes=out,
            last_version=last_stored,
            finished=finished,
            next_from_version=last + 1 if last < last_stored else 0,
            halted_at_version=session.halted[0] if session.halted else 0,
        )

    async def GetEngineKey(
        self, request: engine_pb2.GetEngineKeyRequest, context: Context
    ) -> engine_pb2.GetEngineKeyResponse:
        key = self.engine.receipt_key
        return engine_pb2.GetEngineKeyResponse(
            public_key=key.public_hex,
            key_id=key.key_id,
            key_history=await asyncio.to_thread(self._key_history),
        )

    def _key_history(self) -> str:
        """The history file as written (read on each call: `boulevard keys history` may
        extend it while the engine runs); "" when none is published. Served unchecked: the
        auditor verifies it and compares it with the one it pinned."""
        if self.key_history_file is None:
            return ""
        try:
            return self.key_history_file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""

    async def WatchGame(
        self, request: engine_pb2.WatchGameRequest, context: Context
    ) -> AsyncIterator[engine_pb2.WatchGameResponse]:
        seat = self._seat(request.player_token, request.game_id)
        self._admit(request.game_id, seat, context)
        # A seat's stream lasts as long as its token: a leaked token must not be a window
        # onto the seat's hand forever. At expiry the stream ends UNAUTHENTICATED; the owner
        # renews (RenewPlayerToken) and watches again from the next version.
        expires = (
            verify_token(self.engine.token_key, request.player_token).expires_unix
            if seat is not None
            else None
        )
        session = await self.engine.load(request.game_id)  # NOT_FOUND before streaming
        self.engine.refuse_halted(session)  # its log: GetGameLog, as stored
        if session.finished is not None and request.from_version > session.version:
            return  # past the end of a finished game: nothing will ever follow
        # This stream's own copy of the game, for views when this replica does not hold the
        # game at the stream's version. Folding it is most of what a stream costs, so events
        # are folded only when such a view is needed (`unfolded` waits until then); when the
        # live game stands at the same version, its state (immutable) is taken instead.
        watched = Session.new(session.game_id, session.created)
        # The live game as it stood when a burst last found it at the burst's version: the
        # stream's own copy is made from it only when a later burst needs one (`resume`).
        mark: Mark | None = None
        unfolded: list[events_pb2.EventEnvelope] = []
        over = False
        seen = 0
        sent = 0  # the last version this stream sent
        burst: list[events_pb2.EventEnvelope] = []  # bursts mode: not yet sent
        feed = self._watch(session.game_id)
        expiry = Expiry(expires) if expires is not None else None
        try:
            while True:
                # What arrived together: one burst.
                batch = await next_batch(feed, seen, expiry, max(sent + 1, request.from_version))
                seen += len(batch)
                for i, envelope in enumerate(batch):
                    unfolded.append(envelope)
                    over = over or envelope.type == "GameFinished"
                    if envelope.version < request.from_version:
                        if over:
                            # The game ended before the version asked for: nothing follows,
                            # so the stream ends (it must not hold the game's feed forever).
                            return
                        continue
                    # A game over when the call began shows everything, its shuffles
                    # included: that is what lets an auditor check the game used the
                    # recorded dice.
                    revealed = over or session.finished is not None
                    try:
                        event = envelope if revealed else feed.shown(session.game, envelope)
                    except RulesError as err:  # written after this stream began
                        raise FailedPrecondition(
                            f"version {envelope.version} is no event the engine can read "
                            f"({err.message}): the game halts there"
                        ) from None
                    last = i == len(batch) - 1
                    if last:
                        # One view per burst of events (the state after the last of them):
                        # views are what watching costs, and a client draws only the latest.
                        # The live game at the same version has them computed already.
                        live = self.engine.cached(session.game_id)
                        if live is not None and live.version == envelope.version:
                            mark, source = live.mark(), live
                        else:
                            if mark is not None:
                                watched, mark = session.resume(mark), None
                            for pending in unfolded:
                                watched.apply_envelope(pending)
                            source = watched
                        unfolded.clear()
                    if request.bursts:
                        burst.append(event)
                        if not last and len(burst) < BURST_MAX:
                            continue
                        if last and request.settled and not over and self._acts_next(source):
                            continue  # held: it goes with the burst that answers it
                        events, burst = burst, []
                    else:
                        events = [event]
                    if last and source.clocks is None:
                        update = self._shared(source, request, seat, events, revealed, over)
                    else:
                        update = self._update(request, events)
                        if last:
                            at = self.engine.clock() if source is live else envelope.time_unix_ms
                            self._settle(update, request, source, seat, at, over)
                    yield update
                    sent = envelope.version
                    if over:
                        return
        finally:
            if expiry is not None:
                expiry.close()
            self._unwatch(session.game_id, feed)

    @staticmethod
    def _update(
        request: engine_pb2.WatchGameRequest, events: list[events_pb2.EventEnvelope]
    ) -> engine_pb2.WatchGameResponse:
        if request.bursts:
            return engine_pb2.WatchGameResponse(events=events)
        return engine_pb2.WatchGameResponse(event=events[0])

    def _shared(
        self,
        source: Session,
        request: engine_pb2.WatchGameRequest,
        seat: int | None,
        events: list[events_pb2.EventEnvelope],
        revealed: bool,
        over: bool,
    ) -> engine_pb2.WatchGameResponse:
        """The last update of a burst in a game without clocks, built once a version for
        every stream sent the same one: the same seat (or spectators), the same options,
        the same events (their versions and redaction). Its parts are shared already; this
        saves copying them into one message per stream (many spectators of one game). gRPC
        only serializes what it is given and nothing changes an update once yielded, so
        the streams share the message. A clock's update is its own: it is read at the
        moment each stream sends it."""
        key = (
            seat,
            request.bursts,
            request.omit_rendered,
            request.views_on_turn,
            events[0].version,
            events[-1].version,
            revealed,
            over,
        )
        shared: dict[tuple[Any, ...], engine_pb2.WatchGameResponse]
        shared = source.memo("updates", None, dict)
        update = shared.get(key)
        if update is None:
            update = shared[key] = self._update(request, events)
            self._settle(update, request, source, seat, 0, over)
        return update

    def _settle(
        self,
        update: engine_pb2.WatchGameResponse,
        request: engine_pb2.WatchGameRequest,
        source: Session,
        seat: int | None,
        at_ms: int,
        over: bool,
    ) -> None:
        """What the last update of a burst carries besides its events: the caller's view
        (its text board unless `omit_rendered`; none while the seat waits, with
        `views_on_turn`), the seats to act, the clocks at `at_ms` and the seat's legal
        actions. Only the caller's own seat's view and actions, whatever the options: they
        only leave things out."""
        # What the seat may do now: no ListLegalActions call per move.
        actions = self._legal_actions(source, seat) if seat is not None else []
        waits = seat is not None and not actions and not over and source.finished is None
        if not (request.views_on_turn and waits):
            shown = self._shown(source, seat)
            update.view.CopyFrom(shown.message)
            if not request.omit_rendered:
                update.view.rendered = shown.text(source.game)
        update.to_act.extend(source.to_act())
        if source.clocks is not None:
            # The live game's clocks now; a past version's at its time.
            at, clocks = clocks_at(source, at_ms)
            update.clocks.extend(clocks)
            update.clocks_unix_ms = at
        update.legal_actions.extend(actions)

    def _acts_next(self, session: Session) -> bool:
        """Whether the engine itself goes on with the game at once, nobody asked: a chance
        to resolve, seeds to fix or an end to record (`owed`; what `settled` holds a burst
        back for). Not while the game waits for its seeds to be revealed, nor when halted."""
        if session.halted is not None:
            return False
        return isinstance(owed(session, self.engine.clock()), Resolve | FixSeeds | Finish)

    def _admit(self, game_id: str, seat: int | None, context: Context) -> None:
        """Count a WatchGame stream in, until the call ends (however it ends); refuse it
        with RESOURCE_EXHAUSTED over the bounds. Every stream holds memory for as long as
        its caller likes and a spectator needs no token, so spectators share one budget;
        a seat's own streams are counted apart, so strangers cannot crowd a player out."""
        key = None if seat is None else (game_id, seat)
        if key is None:
            if self._spectators >= self.max_spectator_streams:
                raise ResourceExhausted(
                    f"{self._spectators} spectators are watching games here, the most this "
                    "engine serves at once; try again later"
                )
            self._spectators += 1
        else:
            held = self._seat_streams.get(key, 0)
            if held >= self.max_streams_per_seat:
                raise ResourceExhausted(
                    f"seat {seat} already has {held} WatchGame streams open on this game; "
                    "close one first"
                )
            self._seat_streams[key] = held + 1
        context.add_done_callback(lambda _call: self._release(key))

    def _release_player(self, player_id: str) -> None:
        left = self._player_streams[player_id] - 1
        if left:
            self._player_streams[player_id] = left
        else:
            del self._player_streams[player_id]

    def _release(self, key: tuple[str, int] | None) -> None:
        if key is None:
            self._spectators -= 1
            return
        left = self._seat_streams[key] - 1
        if left:
            self._seat_streams[key] = left
        else:
            del self._seat_streams[key]

    def _offer(self, game_id: str, envelopes: Sequence[events_pb2.EventEnvelope]) -> None:
        feed = self._feeds.get(game_id)
        if feed is not None and not feed.task.done():
            feed.offer(envelopes)

    def _watch(self, game_id: str) -> Feed:
        feed = self._feeds.get(game_id)
        if feed is None or feed.task.done():
            feed = self._feeds[game_id] = Feed(
                self.store, game_id, lambda: self.engine.stored_version(game_id)
            )
        feed.watchers += 1
        return feed

    def _unwatch(self, game_id: str, feed: Feed) -> None:
        feed.watchers -= 1
        if feed.watchers == 0:
            feed.task.cancel()
            if self._feeds.get(game_id) is feed:
                del self._feeds[game_id]

    async def RenewPlayerToken(
        self, request: engine_pb2.RenewPlayerTokenRequest, context: Context
    ) -> engine_pb2.RenewPlayerTokenResponse:
        player = self.verifier.require(context.invocation_metadata(), PLAYER, "RenewPlayerToken")
        seat, token = await self.engine.renew_token(request.game_id, player.subject)
        expires = verify_token(self.engine.token_key, token).expires_unix
        return engine_pb2.RenewPlayerTokenResponse(
            player_token=token, seat=seat, expires_unix_ms=expires * 1000
        )

    async def WatchPlayer(
        self, request: engine_pb2.WatchPlayerRequest, context: Context
    ) -> AsyncIterator[engine_pb2.WatchPlayerResponse]:
        """Every game of the caller (their JWT's subject), as the games index lists them,
        looked at every PLAYER_POLL_SECONDS: a message per change of what the player must
        know (playing, their turn, timed out, over). It reads the index and each of their
        games as this replica holds it (cached), not every event."""
        player = self.verifier.require(context.invocation_metadata(), PLAYER, "WatchPlayer")
        me = player.subject
        # Each stream looks at the player's games twice a second: a few per player.
        held = self._player_streams.get(me, 0)
        if held >= self.max_streams_per_seat:
            raise ResourceExhausted(
                f"you already have {held} WatchPlayer streams open here; close one first"
            )
        self._player_streams[me] = held + 1
        context.add_done_callback(lambda _call: self._release_player(me))
        try:
            await self.index.wait_ready(LIST_WAIT_SECONDS)
        except IndexUnavailable as exc:
            raise Unavailable(str(exc)) from None
        seen: dict[str, tuple[int, bool, bool]] = {}  # game id -> (kind, your turn, absent)
        while True:
            for game_id, info in self.index.games_of(me):
                before = seen.get(game_id)
                if info.status != "active":
                    if before is not None and before[0] != engine_pb2.PLAYER_EVENT_KIND_GAME_OVER:
                        seen[game_id] = (engine_pb2.PLAYER_EVENT_KIND_GAME_OVER, False, False)
                        yield engine_pb2.WatchPlayerResponse(
                            game_id=game_id,
                            game=info.game,
                            kind=engine_pb2.PLAYER_EVENT_KIND_GAME_OVER,
                            seat=info.players.index(me),
                        )
                    continue
                update = await self._player_update(game_id, me)
                if update is None:
                    continue
                absent = update.clock.absent
                now = (update.kind, update.your_turn, absent)
                if before is None:
                    update.kind = engine_pb2.PLAYER_EVENT_KIND_PLAYING
                elif update.kind == engine_pb2.PLAYER_EVENT_KIND_GAME_OVER:
                    pass
                elif absent and not before[2]:
                    update.kind = engine_pb2.PLAYER_EVENT_KIND_TIMED_OUT
                    # Signed like a move's answer: the seat keeps it as evidence.
                    update.receipt.CopyFrom(await self._receipt_now(game_id))
                elif update.your_turn and not before[1]:
                    update.kind = engine_pb2.PLAYER_EVENT_KIND_YOUR_TURN
                else:
                    seen[game_id] = now
                    continue
                seen[game_id] = (update.kind, update.your_turn, absent)
                yield update
            await asyncio.sleep(PLAYER_POLL_SECONDS)

    async def _receipt_now(self, game_id: str) -> engine_pb2.Receipt:
        """The engine's signed, timed receipt for the game's log as it stands: its version,
        chain head and the time of the envelope there."""
        session = await self.engine.load(game_id)
        version, head = session.version, session.head_hash
        at = session.recent.get(version)
        if at is None:
            (stored, *_) = await self.store.read(game_id, version)
            at = events_pb2.EventEnvelope.FromString(stored.data)
        signed = Receipt.sign(self.engine.receipt_key, game_id, version, head, int(at.time_unix_ms))
        return receipt_to_pb(signed)

    async def _player_update(
        self, game_id: str, player_id: str
    ) -> engine_pb2.WatchPlayerResponse | None:
        try:
            session = await self.engine.load(game_id)
        except NotFound:
            return None
        seat = next((s.seat for s in session.created.seats if s.player_id == player_id), None)
        if seat is None:
            return None
        now = self.engine.clock()
        update = engine_pb2.WatchPlayerResponse(
            game_id=game_id,
            game=session.game.name,
            kind=engine_pb2.PLAYER_EVENT_KIND_GAME_OVER
            if session.finished is not None
            else engine_pb2.PLAYER_EVENT_KIND_PLAYING,
            seat=seat,
            version=session.version,
            your_turn=seat in session.to_act(),
        )
        times = session.clock_times(now)
        if times:
            update.clock.CopyFrom(seat_clocks_to_proto(times)[seat])
            update.clocks_unix_ms = now
        return update

    async def ListGames(
        self, request: engine_pb2.ListGamesRequest, context: Context
    ) -> engine_pb2.ListGamesResponse:
        # Who plays what is the operator's to see; a player may list their own games.
        caller = self.verifier.principal(context.invocation_metadata())
        operator = caller is not None and caller.is_operator
        mine = caller is not None and caller.subject == request.player_id
        if request.player_id and not (operator or mine):
            raise PermissionDenied("only operators may list another player's games")
        size = request.page_size or 50
        if size > 500:
            raise InvalidArgument("page_size is at most 500")
        wanted_status = {
            engine_pb2.GAME_STATUS_ACTIVE: "active",
            engine_pb2.GAME_STATUS_FINISHED: "finished",
            engine_pb2.GAME_STATUS_HALTED: "halted",
        }.get(request.status)
        try:
            await self.index.wait_ready(LIST_WAIT_SECONDS)
        except IndexUnavailable as exc:
            raise Unavailable(str(exc)) from None
        games: list[engine_pb2.GameSummary] = []
        # From the page token on, in memory and without an await: the page is read from one
        # state of the index (docs/architecture.md, "The games index in memory").
        for key, info in self.index.after(request.page_token):
            if wanted_status and info.status != wanted_status:
                continue
            if request.game and info.game != request.game:
                continue
            if request.player_id and request.player_id not in info.players:
                continue
            if len(games) == size:  # one more matches: there is a next page
                return engine_pb2.ListGamesResponse(games=games, next_page_token=games[-1].game_id)
            games.append(
                engine_pb2.GameSummary(
                    game_id=key,
                    game=info.game,
                    status=_STATUSES.get(info.status, engine_pb2.GAME_STATUS_ACTIVE),
                    version=info.version,
                    player_ids=info.players if operator else [],
                    updated_unix_ms=info.updated_unix_ms,
                )
            )
        return engine_pb2.ListGamesResponse(games=games, next_page_token="")
