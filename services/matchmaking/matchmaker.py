"""The matchmaking service's logic: tickets in KV, a view of them, and the matcher loop.

Forming a match is resumable (docs/matchmaking.md):

1. write the match record `m.<id>` as PENDING;
2. reserve each ticket: WAITING -> MATCHED(match id), by revision, so a ticket cancelled or
   taken meanwhile is never reserved;
3. all reserved: record PENDING -> COMMITTED (by revision). Otherwise record -> ABANDONED
   and reserved tickets go back to WAITING;
4. publish `MatchFormed` (Nats-Msg-Id = match id), assign every ticket (game id, seat,
   player token), record -> DONE.

A ticket left MATCHED for `recover_after` seconds (its former crashed) leads any replica to
its record: PENDING is committed if every ticket is reserved, else abandoned; COMMITTED or
DONE is finished (publish again: deduplicated; assign: idempotent); ABANDONED puts the ticket
back. The record's status changes by revision too, so a recovery racing a slow former cannot
both commit and abandon one match.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import secrets
import time
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from nats.aio.client import Client as NATS
from nats.js.errors import NotFoundError
from nats.js.kv import KeyValue

from boulevard.api.v1 import events_pb2
from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.audit.signing import parse_public_key
from boulevard.contract.clocks import time_control_from_proto, time_control_to_proto
from boulevard.fairness import client_seed_commitment, is_commitment
from boulevard.games import REGISTRY
from boulevard.messaging.poison import poisoned
from boulevard.platform import metrics
from boulevard.platform.auth import DEFAULT_TTL_SECONDS, PlayerClaims, issue_token
from boulevard.platform.errors import (
    Aborted,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unavailable,
)
from boulevard.platform.wire import sent_unknown_field
from services.matchmaking.botrunner import bot_client_seed
from services.matchmaking.matcher import (
    BOT_PREFIX,
    Candidate,
    Proposal,
    WindowPolicy,
    bot_player_id,
    find_matches,
    seat_order,
)
from services.matchmaking.ratings import DEFAULT_MU, DEFAULT_SIGMA
from services.matchmaking.store import (
    ACTIVE,
    FINAL,
    Conflict,
    Records,
    index_key,
    match_key,
    rating_key,
    ticket_key,
)

log = structlog.get_logger(__name__)

MSG_ID = "Nats-Msg-Id"
MAX_PLAYER_ID = 128
LIST_PAGE_DEFAULT = 100  # ListTickets
LIST_PAGE_MAX = 1000
MAX_REQUEST_ID = 128
CAS_ATTEMPTS = 16
STOP_GRACE_SECONDS = 5.0
MIN_TICK_SECONDS = 0.005


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def status_name(status: int) -> str:
    return pb.TicketStatus.Name(status).removeprefix("TICKET_STATUS_").lower()  # type: ignore[arg-type]


@dataclass
class Config:
    token_key: bytes
    ticket_ttl_ms: int
    tick_seconds: float
    window: WindowPolicy
    recover_after_ms: int
    form_concurrency: int
    match_formed_subject: str
    seat_token_ttl_seconds: float = DEFAULT_TTL_SECONDS
    # Hex of the operator's bot key: bound to every bot seat (docs/auditing.md).
    bot_public_key: str = ""
    # Where the engine writes games: a ticket turns ASSIGNED only once its game's first
    # event is there, so a client that calls GetGame right after ASSIGNED finds the game.
    # Empty: do not wait (unit tests with no engine).
    games_stream: str = ""
    games_subject_prefix: str = "game"
    game_wait_seconds: float = 10.0


@dataclass
class Viewed:
    ticket: pb.Ticket
    revision: int


class Matchmaker:
    def __init__(
        self,
        nc: NATS,
        tickets_kv: KeyValue,
        matches_kv: KeyValue,
        ratings_kv: KeyValue,
        config: Config,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.nc = nc
        self.js = nc.jetstream()
        self.tickets = Records(tickets_kv)
        self.matches = Records(matches_kv)
        self.ratings = Records(ratings_kv)
        self._tickets_kv = tickets_kv
        self.config = config
        self.clock = clock
        # The view: every ticket as of the latest revision we saw (KV watch + our writes).
        self.view: dict[str, Viewed] = {}
        self._watchers: dict[str, set[asyncio.Queue[Viewed]]] = defaultdict(set)
        self._formed: dict[str, deque[tuple[int, str]]] = defaultdict(deque)  # game -> (ms, id)
        self._seen_matches: set[str] = set()
        self._in_flight: set[str] = set()  # match ids this process is forming
        self._tasks: list[asyncio.Task[None]] = []
        self._ready = asyncio.Event()
        self._wake = asyncio.Event()  # set when a ticket starts waiting
        self._busy: set[str] = set()  # tickets a running step is working on
        self._arrived: set[str] = set()  # tickets that started waiting since the last pass
        self._last_full_pass = 0.0
        self._jobs: set[asyncio.Task[None]] = set()
        self._gate = asyncio.Semaphore(config.form_concurrency)
        self._candidates: dict[str, tuple[int, Candidate]] = {}
        self._stopping = False
        self.matches_formed = 0
        self.matches_abandoned = 0

    # ---- lifecycle ----

    async def start(self) -> None:
        self._watcher = await self._tickets_kv.watch("t.>")
        self._tasks.append(asyncio.create_task(self._follow(), name="mm-follow"))
        await asyncio.wait_for(self._ready.wait(), 60)
        self._tasks.append(asyncio.create_task(self._loop(), name="mm-loop"))

    async def stop(self) -> None:
        self._stopping = True
        # Let the tick in progress finish its matches (a cancelled one would leave them to
        # recovery), then stop the watch: its callback blocks while its queue is full, and a
        # blocked subscription would hold up draining the connection.
        loop = next((t for t in self._tasks if t.get_name() == "mm-loop"), None)
        if loop is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(loop), STOP_GRACE_SECONDS)
        if self._jobs:  # the matches it started
            await asyncio.wait(set(self._jobs), timeout=STOP_GRACE_SECONDS)
        for job in set(self._jobs):
            job.cancel()
        with contextlib.suppress(Exception):
            await self._watcher.stop()  # type: ignore[no-untyped-call]
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks = []

    async def _follow(self) -> None:
        async for entry in self._watcher:
            if entry is None:
                self._ready.set()
                continue
            tid = entry.key.removeprefix("t.")
            if entry.operation in ("DEL", "PURGE") or not entry.value:
                self.view.pop(tid, None)
                continue
            if entry.revision is None:
                continue
            try:
                ticket = pb.Ticket.FromString(entry.value)
            except Exception as exc:  # a foreign value in our bucket: skip it
                poisoned("matchmaking.tickets", "undecodable", subject=entry.key, error=exc)
                continue
            if ticket.ticket_id != tid:
                # A value under another ticket's key would overwrite that ticket in the view.
                poisoned("matchmaking.tickets", "wrong_key", subject=entry.key)
                continue
            self._saw(ticket, entry.revision)

    def _saw(self, ticket: pb.Ticket, revision: int) -> None:
        """Take a ticket version into the view (if newer) and tell its watchers."""
        current = self.view.get(ticket.ticket_id)
        if current is not None and current.revision >= revision:
            return
        viewed = Viewed(ticket, revision)
        self.view[ticket.ticket_id] = viewed
        if ticket.status == pb.TICKET_STATUS_WAITING:
            self._arrived.add(ticket.ticket_id)
            self._wake.set()
        if ticket.status == pb.TICKET_STATUS_ASSIGNED:
            self._count_match(ticket)
        for q in self._watchers.get(ticket.ticket_id, ()):
            q.put_nowait(viewed)

    def _count_match(self, ticket: pb.Ticket) -> None:
        """Remember matches assigned in the last minute (for ListQueues), once each."""
        since = self.clock() - 60_000
        if ticket.match_id in self._seen_matches or ticket.updated_unix_ms < since:
            return
        formed = self._formed[ticket.game]
        formed.append((ticket.updated_unix_ms, ticket.match_id))
        self._seen_matches.add(ticket.match_id)
        while formed and formed[0][0] < since:
            self._seen_matches.discard(formed.popleft()[1])

    # ---- tickets ----

    def ticket_id_for(self, player_id: str, request_id: str) -> str:
        """A retried request maps to the same ticket; without the key nobody can guess it.
        The player id is the caller's verified identity, so a request id is scoped to its
        player: another caller repeating it gets a ticket of their own."""
        if not request_id:
            return secrets.token_hex(16)
        msg = f"ticket\0{player_id}\0{request_id}".encode()
        return hmac.new(self.config.token_key, msg, hashlib.sha256).hexdigest()[:32]

    async def create_ticket(self, req: pb.CreateTicketRequest) -> pb.Ticket:
        lo, hi = validate_create(req)
        if req.bot_fill_after_seconds * 1000 >= self.config.ticket_ttl_ms:
            raise InvalidArgument(
                f"bot_fill_after_seconds {req.bot_fill_after_seconds} is not less than the "
                f"ticket lifetime ({self.config.ticket_ttl_ms / 1000:g} s)"
            )
        tid = self.ticket_id_for(req.player_id, req.request_id)
        rating_lookup = self.ratings.get(rating_key(req.game, req.player_id), pb.PlayerRating)
        if req.request_id:
            found, rating = await asyncio.gather(
                self.tickets.get(ticket_key(tid), pb.Ticket), rating_lookup
            )
            if found is not None:
                return _same_request(found[0], req)
        else:
            rating = await rating_lookup
        now = self.clock()
        ticket = pb.Ticket(
            ticket_id=tid,
            player_id=req.player_id,
            game=req.game,
            min_seats=lo,
            max_seats=hi,
            status=pb.TICKET_STATUS_WAITING,
            client_seed_commitment=req.client_seed_commitment,
            bot_fill_after_seconds=req.bot_fill_after_seconds,
            public_key=req.public_key,
            created_unix_ms=now,
            expires_unix_ms=now + self.config.ticket_ttl_ms,
            updated_unix_ms=now,
            rating=rating[0].mu if rating else DEFAULT_MU,
        )
        if req.HasField("time_control"):
            ticket.time_control.CopyFrom(req.time_control)
        await self._claim_index(ticket)
        try:
            revision = await self.tickets.create(ticket_key(tid), ticket)
        except Conflict:
            found = await self.tickets.get(ticket_key(tid), pb.Ticket)
            if found is None or found[0].status_reason == SUPERSEDED:
                raise Aborted(
                    "another CreateTicket for this player and game won the race; retry"
                ) from None
            return _same_request(found[0], req)
        self._saw(ticket, revision)
        log.info("ticket created", ticket_id=tid, player=req.player_id, game=req.game)
        return ticket

    async def _claim_index(self, ticket: pb.Ticket) -> None:
        """Point the player's index for this game at this ticket, unless another of their
        tickets for the game is still active."""
        key = index_key(ticket.game, ticket.player_id)
        tid = ticket.ticket_id
        for _ in range(CAS_ATTEMPTS):
            try:
                await self.tickets.create_raw(key, tid.encode())
                return
            except Conflict:
                pass
            entry = await self.tickets.get_raw(key)
            if entry is None:
                continue  # deleted meanwhile: try to create again
            other, index_revision = entry[0].decode(), entry[1]
            if other == tid:
                return  # a retry of ours
            seen = self.view.get(other)
            found: tuple[pb.Ticket, int] | None
            if seen is not None and seen.ticket.status in FINAL:
                found = seen.ticket, seen.revision  # final states never change: no read
            else:
                found = await self.tickets.get(ticket_key(other), pb.Ticket)
            if found is None:
                # Its creator is between claiming the index and writing the ticket, or died
                # there: fence it off so it can never be written as WAITING.
                fence = pb.Ticket(
                    ticket_id=other,
                    player_id=ticket.player_id,
                    game=ticket.game,
                    status=pb.TICKET_STATUS_CANCELLED,
                    status_reason=SUPERSEDED,
                    updated_unix_ms=self.clock(),
                )
                try:
                    await self.tickets.create(ticket_key(other), fence)
                except Conflict:
                    continue  # it was written meanwhile: look again
                found = (fence, 0)
            if found[0].status in ACTIVE:
                raise FailedPrecondition(
                    f"player {ticket.player_id!r} already has a ticket for {ticket.game} "
                    "waiting or being matched; cancel it first"
                )
            try:
                await self.tickets.update_raw(key, tid.encode(), index_revision)
                return
            except Conflict:
                continue
        raise Aborted("too many concurrent ticket requests for this player and game; retry")

    async def get_ticket(self, ticket_id: str, owner: str | None = None) -> tuple[pb.Ticket, int]:
        """The ticket and its revision. With `owner`, only that player's ticket (an operator
        passes None)."""
        check_ticket_id(ticket_id)
        found = await self.tickets.get(ticket_key(ticket_id), pb.Ticket)
        if found is None:
            raise NotFound(f"no ticket {ticket_id!r}")
        if owner is not None and found[0].player_id != owner:
            raise PermissionDenied("this ticket is another player's")
        return found

    def seat_token(self, ticket: pb.Ticket) -> str:
        """A fresh player token for an assigned ticket's seat (tokens expire; each read by
        the owner gets one valid for the full lifetime)."""
        claims = PlayerClaims(ticket.game_id, ticket.seat, ticket.player_id)
        return issue_token(self.config.token_key, claims, self.config.seat_token_ttl_seconds)

    async def cancel_ticket(self, ticket_id: str, owner: str | None = None) -> pb.Ticket:
        for _ in range(CAS_ATTEMPTS):
            ticket, revision = await self.get_ticket(ticket_id, owner)
            if ticket.status == pb.TICKET_STATUS_CANCELLED:
                return ticket
            if ticket.status == pb.TICKET_STATUS_MATCHED:
                if not await self._request_cancel(ticket, revision):
                    continue  # it left MATCHED meanwhile (e.g. requeued): look again
                raise FailedPrecondition(
                    f"ticket {ticket_id} is in a match being formed; if that match falls "
                    "through the ticket will be cancelled"
                )
            if ticket.status != pb.TICKET_STATUS_WAITING:
                raise FailedPrecondition(
                    f"ticket {ticket_id} is {status_name(ticket.status)}: only a waiting "
                    "ticket can be cancelled"
                )
            done = pb.Ticket()
            done.CopyFrom(ticket)
            done.status = pb.TICKET_STATUS_CANCELLED
            done.status_reason = "cancelled by the player"
            done.updated_unix_ms = self.clock()
            try:
                revision = await self.tickets.update(ticket_key(ticket_id), done, revision)
            except Conflict:
                continue  # the matcher (or expiry) got there first: look again
            self._saw(done, revision)
            log.info("ticket cancelled", ticket_id=ticket_id)
            return done
        raise Aborted(f"ticket {ticket_id} keeps changing; retry")

    async def _request_cancel(self, ticket: pb.Ticket, revision: int) -> bool:
        """Mark a MATCHED ticket so that, if its match is abandoned, it is cancelled. False
        when the ticket is no longer MATCHED (the caller must look at it again)."""
        for _ in range(CAS_ATTEMPTS):
            if ticket.status != pb.TICKET_STATUS_MATCHED:
                return False
            if ticket.cancel_requested:
                return True
            marked = pb.Ticket()
            marked.CopyFrom(ticket)
            marked.cancel_requested = True
            try:
                revision = await self.tickets.update(ticket_key(ticket.ticket_id), marked, revision)
            except Conflict:
                ticket, revision = await self.get_ticket(ticket.ticket_id)
                continue
            self._saw(marked, revision)
            return True
        raise Aborted(f"ticket {ticket.ticket_id} keeps changing; retry")

    async def watch_ticket(
        self, ticket_id: str, owner: str | None = None
    ) -> AsyncIterator[pb.Ticket]:
        """The ticket now, then each change, until it is final."""
        check_ticket_id(ticket_id)
        queue: asyncio.Queue[Viewed] = asyncio.Queue()
        self._watchers[ticket_id].add(queue)
        try:
            ticket, revision = await self.get_ticket(ticket_id, owner)
            yield ticket
            while ticket.status not in FINAL:
                try:
                    seen = await asyncio.wait_for(queue.get(), timeout=1.0)
                except TimeoutError:
                    # Our view may lag behind another replica's write: read it again.
                    seen = Viewed(*await self.get_ticket(ticket_id))
                if seen.revision <= revision:
                    continue
                status = ticket.status
                ticket, revision = seen.ticket, seen.revision
                if ticket.status != status:
                    yield ticket
        finally:
            self._watchers[ticket_id].discard(queue)
            if not self._watchers[ticket_id]:
                del self._watchers[ticket_id]

    def list_tickets(
        self,
        owner: str | None,
        game: str = "",
        status: int = pb.TICKET_STATUS_UNSPECIFIED,
        page_size: int = 0,
        page_token: str = "",
    ) -> tuple[list[pb.Ticket], str]:
        """Tickets from the view, newest first: only `owner`'s (None: an operator's call, every
        player's), one page and the token of the next ('' at the end). The token is the last
        ticket's `<created_unix_ms>.<ticket_id>`, so pages hold while tickets come and go."""
        size = page_size or LIST_PAGE_DEFAULT
        if size > LIST_PAGE_MAX:
            raise InvalidArgument(f"page_size is at most {LIST_PAGE_MAX}")
        if game and game not in REGISTRY:
            raise InvalidArgument(f"unknown game {game!r}; known: {', '.join(sorted(REGISTRY))}")
        if status and status not in pb.TicketStatus.values():
            raise InvalidArgument(f"unknown ticket status {status}")
        after: tuple[int, str] | None = None
        if page_token:
            created, _, tid = page_token.partition(".")
            if not created.isdigit() or not tid:
                raise InvalidArgument("malformed page_token: pass next_page_token as it came")
            after = (-int(created), tid)

        def order(t: pb.Ticket) -> tuple[int, str]:
            return (-t.created_unix_ms, t.ticket_id)

        chosen = sorted(
            (
                v.ticket
                for v in self.view.values()
                if (owner is None or v.ticket.player_id == owner)
                and (not game or v.ticket.game == game)
                and (not status or v.ticket.status == status)
                and (after is None or order(v.ticket) > after)
            ),
            key=order,
        )
        page = chosen[:size]
        more = len(chosen) > size
        token = f"{page[-1].created_unix_ms}.{page[-1].ticket_id}" if more else ""
        return page, token

    # ---- queues and ratings ----

    def queue_stats(self, game: str) -> list[pb.QueueStats]:
        if game and game not in REGISTRY:
            raise InvalidArgument(f"unknown game {game!r}; known: {', '.join(sorted(REGISTRY))}")
        games = [game] if game else sorted(REGISTRY)
        now = self.clock()
        stats = {g: pb.QueueStats(game=g) for g in games}
        for v in self.view.values():
            s = stats.get(v.ticket.game)
            if s is None:
                continue
            if v.ticket.status == pb.TICKET_STATUS_WAITING and v.ticket.expires_unix_ms > now:
                s.waiting += 1
                s.oldest_wait_ms = max(s.oldest_wait_ms, now - v.ticket.created_unix_ms)
            elif v.ticket.status == pb.TICKET_STATUS_MATCHED:
                s.matched += 1
        for g, s in stats.items():
            formed = self._formed[g]
            while formed and formed[0][0] < now - 60_000:
                self._seen_matches.discard(formed.popleft()[1])
            s.matches_last_minute = sum(1 for t, _ in formed if t <= now)
        return [stats[g] for g in games]

    async def get_rating(self, player_id: str, game: str) -> pb.PlayerRating:
        if game not in REGISTRY:
            raise InvalidArgument(f"unknown game {game!r}; known: {', '.join(sorted(REGISTRY))}")
        check_player_id(player_id)
        found = await self.ratings.get(rating_key(game, player_id), pb.PlayerRating)
        rating = (
            found[0]
            if found
            else pb.PlayerRating(player_id=player_id, game=game, mu=DEFAULT_MU, sigma=DEFAULT_SIGMA)
        )
        rating.ordinal = rating.mu - 3 * rating.sigma
        return rating

    # ---- the matcher loop ----

    async def _loop(self) -> None:
        """A pass as soon as a ticket starts waiting (at most one per MIN_TICK_SECONDS, so a
        stream of arrivals is batched), and every `tick_seconds` anyway (windows widen,
        tickets expire, stuck matches are recovered)."""
        while not self._stopping:
            started = time.monotonic()
            self._wake.clear()
            full = started - self._last_full_pass >= self.config.tick_seconds
            if full:
                self._last_full_pass = started
            try:
                await self.tick(full)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # NATS reconnecting, …: the next tick tries again
                log.warning("matchmaking tick failed", error=str(exc))
            await asyncio.sleep(max(0.0, MIN_TICK_SECONDS - (time.monotonic() - started)))
            left = self.config.tick_seconds - (time.monotonic() - started)
            if left > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), left)

    async def tick(self, full: bool = True) -> int:
        """One pass: expire, recover, match. Each match is formed by its own task, so a pass
        does not wait for the previous pass's matches (their tickets are left out until
        done). A pass that is not `full` lets only tickets that arrived since the last pass
        pick (a deep queue is not walked again for every arrival; full passes, every
        `tick_seconds`, let windows widen and the oldest pick first). Returns the number of
        matches started."""
        now = self.clock()
        arrived, self._arrived = frozenset(self._arrived), set()
        anchors = None if full else arrived
        # One queue per game and time control: tickets match only with equal controls.
        waiting: dict[tuple[str, bytes], list[Viewed]] = defaultdict(list)
        expired: list[Viewed] = []
        stuck: set[str] = set()
        for v in list(self.view.values()):
            t = v.ticket
            if t.status == pb.TICKET_STATUS_WAITING:
                if t.ticket_id in self._busy:
                    continue
                if t.expires_unix_ms <= now:
                    expired.append(v)
                else:
                    waiting[(t.game, control_key(t))].append(v)
            elif t.status in FINAL and now - t.updated_unix_ms > PRUNE_AFTER_MS:
                del self.view[t.ticket_id]  # kept in KV; the view needs only recent ones
                self._candidates.pop(t.ticket_id, None)
            elif (
                t.status == pb.TICKET_STATUS_MATCHED
                and now - t.updated_unix_ms >= self.config.recover_after_ms
                and t.match_id not in self._in_flight
            ):
                stuck.add(t.match_id)
        for v in expired:
            self._spawn(self._expire(v), [v.ticket.ticket_id])
        for match_id in stuck:
            self._spawn(self._recover(match_id), [])
        depth: dict[str, int] = defaultdict(int)
        for (game, _), viewed in waiting.items():
            depth[game] += len(viewed)
        for game in REGISTRY:
            metrics.QUEUE_DEPTH.labels(game).set(depth[game])
        started = 0
        for (game, _), viewed in waiting.items():
            definition = REGISTRY.get(game)
            if definition is None:
                continue
            by_id = {v.ticket.ticket_id: v for v in viewed}
            cands = [self._candidate(v) for v in viewed]
            for p in find_matches(
                cands,
                definition.min_players,
                definition.max_players,
                now,
                self.config.window,
                anchors,
            ):
                members = [by_id[t] for t in p.ticket_ids]
                self._spawn(self._form_gated(game, p, members), p.ticket_ids)
                started += 1
        return started

    def _spawn(self, job: Coroutine[Any, Any, Any], ticket_ids: Sequence[str]) -> None:
        """Run a step as its own task; its tickets stay out of matching until it is done."""
        self._busy.update(ticket_ids)

        async def run() -> None:
            try:
                await job
            except asyncio.CancelledError:
                raise
            except Conflict:
                pass
            except Exception as exc:  # NATS trouble: the tickets come back next pass
                log.warning("matchmaking step failed", error=repr(exc))
            finally:
                self._busy.difference_update(ticket_ids)

        task = asyncio.create_task(run())
        self._jobs.add(task)
        task.add_done_callback(self._jobs.discard)

    async def _form_gated(self, game: str, p: Proposal, members: Sequence[Viewed]) -> bool:
        async with self._gate:
            return await self.form_match(game, p, members)

    def _candidate(self, v: Viewed) -> Candidate:
        """The matcher's view of a ticket, cached per revision (a deep queue is mostly the
        same tickets pass after pass)."""
        cached = self._candidates.get(v.ticket.ticket_id)
        if cached is not None and cached[0] == v.revision:
            return cached[1]
        c = _candidate(v.ticket)
        self._candidates[v.ticket.ticket_id] = (v.revision, c)
        return c

    async def _expire(self, v: Viewed) -> None:
        t = pb.Ticket()
        t.CopyFrom(v.ticket)
        t.status = pb.TICKET_STATUS_EXPIRED
        t.status_reason = f"no match within {self.config.ticket_ttl_ms / 1000:g} s"
        t.updated_unix_ms = self.clock()
        try:
            revision = await self.tickets.update(ticket_key(t.ticket_id), t, v.revision)
        except Conflict:
            return  # matched or cancelled meanwhile
        self._saw(t, revision)
        log.info("ticket expired", ticket_id=t.ticket_id)

    # ---- forming a match ----

    async def form_match(self, game: str, proposal: Proposal, members: Sequence[Viewed]) -> bool:
        """Form one match from these tickets (as last seen); False if it was abandoned."""
        match_id = new_match_id()
        self._in_flight.add(match_id)
        try:
            by_id = {v.ticket.ticket_id: v for v in members}
            seats: list[events_pb2.MatchSeat] = []
            ticket_ids: list[str] = []
            bots = 0
            for seat, tid in enumerate(seat_order(match_id, proposal)):
                if tid is None:
                    bots += 1
                    # A bot's seed is committed now, like a player's, and revealed by
                    # whoever plays the bots (the bot runner derives the same seed).
                    seats.append(
                        events_pb2.MatchSeat(
                            seat=seat,
                            player_id=bot_player_id(bots),
                            bot=True,
                            client_seed_commitment=client_seed_commitment(
                                bot_client_seed(self.config.token_key, match_id, seat)
                            ),
                            public_key=self.config.bot_public_key,
                        )
                    )
                    ticket_ids.append("")
                else:
                    t = by_id[tid].ticket
                    seats.append(
                        events_pb2.MatchSeat(
                            seat=seat,
                            player_id=t.player_id,
                            client_seed_commitment=t.client_seed_commitment,
                            public_key=t.public_key,
                        )
                    )
                    ticket_ids.append(tid)
            now = self.clock()
            record = pb.MatchRecord(
                match_id=match_id,
                game=game,
                status=pb.MATCH_STATUS_PENDING,
                seats=seats,
                ticket_ids=ticket_ids,
                created_unix_ms=now,
                updated_unix_ms=now,
            )
            first = members[0].ticket
            if first.HasField("time_control"):  # all members ask for the same one
                record.time_control.CopyFrom(first.time_control)
            # The record and the reservations go out together; a recovery that finds tickets
            # reserved for a match with no record fences the id off first (see _resolve).
            rec_rev, *reserved = await asyncio.gather(
                self.matches.create(match_key(match_id), record),
                *(self._reserve(v, match_id) for v in members),
                return_exceptions=True,
            )
            committed = None
            if isinstance(rec_rev, int) and all(isinstance(r, Viewed) for r in reserved):
                committed = await self._set_match_status(record, rec_rev, pb.MATCH_STATUS_COMMITTED)
            if committed is None:
                return await self._resolve(match_id)
            record, rec_rev = committed
            known = {r.ticket.ticket_id: r for r in reserved if isinstance(r, Viewed)}
            await self._finish(record, rec_rev, known)
            metrics.MATCHES_FORMED.labels(game).inc()
            for v in members:
                waited = max(0, self.clock() - v.ticket.created_unix_ms) / 1000
                metrics.TIME_TO_MATCH.labels(game).observe(waited)
            return True
        finally:
            self._in_flight.discard(match_id)

    async def _reserve(self, v: Viewed, match_id: str) -> Viewed | None:
        t = pb.Ticket()
        t.CopyFrom(v.ticket)
        t.status = pb.TICKET_STATUS_MATCHED
        t.match_id = match_id
        t.updated_unix_ms = self.clock()
        try:
            revision = await self.tickets.update(ticket_key(t.ticket_id), t, v.revision)
        except Conflict:
            return None
        self._saw(t, revision)
        return Viewed(t, revision)

    async def _set_match_status(
        self, record: pb.MatchRecord, revision: int, status: pb.MatchStatus.ValueType
    ) -> tuple[pb.MatchRecord, int] | None:
        """Move the record to `status` if nobody changed it since `revision`."""
        new = pb.MatchRecord()
        new.CopyFrom(record)
        new.status = status
        new.updated_unix_ms = self.clock()
        try:
            rev = await self.matches.update(match_key(record.match_id), new, revision)
        except Conflict:
            return None
        return new, rev

    async def _resolve(self, match_id: str) -> bool:
        """Drive a match to DONE or ABANDONED from whatever state it is in. True if DONE."""
        for _ in range(CAS_ATTEMPTS):
            found = await self.matches.get(match_key(match_id), pb.MatchRecord)
            if found is None:
                # No record, so never committed: fence the id off (so a slow former cannot
                # write its record now) and put the tickets back.
                tombstone = pb.MatchRecord(
                    match_id=match_id,
                    status=pb.MATCH_STATUS_ABANDONED,
                    updated_unix_ms=self.clock(),
                )
                try:
                    await self.matches.create(match_key(match_id), tombstone)
                except Conflict:
                    continue  # it was written meanwhile: look again
                await self._release(match_id, [])
                return False
            record, revision = found
            if record.status == pb.MATCH_STATUS_PENDING:
                all_reserved = True
                for tid in record.ticket_ids:
                    if not tid:
                        continue
                    got = await self.tickets.get(ticket_key(tid), pb.Ticket)
                    if got is None or not (
                        got[0].match_id == match_id
                        and got[0].status in (pb.TICKET_STATUS_MATCHED, pb.TICKET_STATUS_ASSIGNED)
                    ):
                        all_reserved = False
                        break
                target = pb.MATCH_STATUS_COMMITTED if all_reserved else pb.MATCH_STATUS_ABANDONED
                await self._set_match_status(record, revision, target)
                continue  # read it back, whoever won
            if record.status in (pb.MATCH_STATUS_COMMITTED, pb.MATCH_STATUS_DONE):
                await self._finish(record, revision)
                return True
            await self._release(match_id, [t for t in record.ticket_ids if t])
            return False
        raise Aborted(f"match {match_id} keeps changing")

    async def _release(self, match_id: str, ticket_ids: Sequence[str]) -> None:
        """Put this abandoned match's reserved tickets back in the queue."""
        ids = set(ticket_ids) | {
            v.ticket.ticket_id for v in self.view.values() if v.ticket.match_id == match_id
        }
        for tid in ids:
            for _ in range(CAS_ATTEMPTS):
                got = await self.tickets.get(ticket_key(tid), pb.Ticket)
                if got is None:
                    break
                t, revision = got
                if t.status != pb.TICKET_STATUS_MATCHED or t.match_id != match_id:
                    break
                if t.cancel_requested:
                    t.status = pb.TICKET_STATUS_CANCELLED
                    t.status_reason = "cancelled by the player while it was being matched"
                else:
                    t.status = pb.TICKET_STATUS_WAITING
                t.match_id = ""
                t.updated_unix_ms = self.clock()
                try:
                    revision = await self.tickets.update(ticket_key(tid), t, revision)
                except Conflict:
                    continue
                self._saw(t, revision)
                break
        self.matches_abandoned += 1
        log.info("match abandoned", match_id=match_id)

    async def _finish(
        self, record: pb.MatchRecord, revision: int, known: dict[str, Viewed] | None = None
    ) -> None:
        """Publish MatchFormed and assign every ticket; safe to repeat. `known`: tickets as
        this process reserved them (saves reading them back)."""
        mine = known or {}
        formed = events_pb2.MatchFormed(
            match_id=record.match_id,
            game=record.game,
            seats=record.seats,
            time_unix_ms=record.created_unix_ms,
        )
        if record.HasField("time_control"):
            formed.time_control.CopyFrom(record.time_control)
        # Publishing and assigning go out together: the record is COMMITTED, so whatever a
        # crash interrupts here is finished by recovery.
        publish = self.js.publish(
            self.config.match_formed_subject,
            formed.SerializeToString(),
            headers={MSG_ID: record.match_id},
        )
        assigns = [
            self._assign(tid, record.match_id, seat, record.seats[seat].player_id, mine.get(tid))
            for seat, tid in enumerate(record.ticket_ids)
            if tid
        ]
        await publish
        await self._await_game(record.match_id)
        await asyncio.gather(*assigns)
        if record.status != pb.MATCH_STATUS_DONE:
            await self._set_match_status(record, revision, pb.MATCH_STATUS_DONE)
        self.matches_formed += 1
        log.info(
            "match formed",
            match_id=record.match_id,
            game=record.game,
            players=[s.player_id for s in record.seats],
        )

    async def _await_game(self, match_id: str) -> None:
        """Wait until the engine has created the match's game (its log has a first event).
        On time-out the match stays COMMITTED and recovery finishes it later."""
        if not self.config.games_stream:
            return
        subject = f"{self.config.games_subject_prefix}.{match_id}"
        deadline = time.monotonic() + self.config.game_wait_seconds
        delay = 0.005
        while True:
            try:
                await self.js.get_last_msg(self.config.games_stream, subject)
                return
            except NotFoundError:
                pass
            if time.monotonic() > deadline:
                raise Unavailable(f"the engine has not created game {match_id} yet")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.2)

    async def _assign(
        self, ticket_id: str, match_id: str, seat: int, player_id: str, known: Viewed | None
    ) -> None:
        for _ in range(CAS_ATTEMPTS):
            got: tuple[pb.Ticket, int] | None
            if known is not None:
                got, known = (known.ticket, known.revision), None
            else:
                got = await self.tickets.get(ticket_key(ticket_id), pb.Ticket)
            if got is None:
                log.error("ticket of a committed match is gone", ticket_id=ticket_id)
                return
            t = pb.Ticket()
            t.CopyFrom(got[0])
            revision = got[1]
            if t.status == pb.TICKET_STATUS_ASSIGNED and t.match_id == match_id:
                return
            if t.status != pb.TICKET_STATUS_MATCHED or t.match_id != match_id:
                # Cannot happen: a reserved ticket changes only through its match.
                log.error(
                    "ticket of a committed match is not reserved for it",
                    ticket_id=ticket_id,
                    match_id=match_id,
                    status=status_name(t.status),
                )
                return
            t.status = pb.TICKET_STATUS_ASSIGNED
            t.game_id = match_id
            t.seat = seat
            # No token is stored: the owner gets a fresh one with each read (they expire).
            t.updated_unix_ms = self.clock()
            try:
                revision = await self.tickets.update(ticket_key(ticket_id), t, revision)
            except Conflict:
                continue
            self._saw(t, revision)
            return
        raise Aborted(f"could not assign ticket {ticket_id}")

    async def _recover(self, match_id: str) -> None:
        if match_id in self._in_flight:
            return
        self._in_flight.add(match_id)
        try:
            log.info("recovering match", match_id=match_id)
            await self._resolve(match_id)
        finally:
            self._in_flight.discard(match_id)


PRUNE_AFTER_MS = 120_000
SUPERSEDED = "superseded by a concurrent request for the same player and game"


def new_match_id() -> str:
    """Also the game id: a NATS subject token and an event-store stream id."""
    return f"m{secrets.token_hex(12)}"


def _candidate(t: pb.Ticket) -> Candidate:
    return Candidate(
        ticket_id=t.ticket_id,
        player_id=t.player_id,
        min_seats=t.min_seats,
        max_seats=t.max_seats,
        rating=t.rating,
        waiting_since_ms=t.created_unix_ms,
        bot_fill_after_ms=t.bot_fill_after_seconds * 1000,
    )


def _same_request(ticket: pb.Ticket, req: pb.CreateTicketRequest) -> pb.Ticket:
    if ticket.game != req.game:
        raise InvalidArgument(
            f"request id {req.request_id!r} was already used for a ticket for {ticket.game}"
        )
    if control_key(ticket) != control_key(req):
        raise InvalidArgument(
            f"request id {req.request_id!r} was already used for a ticket with another time control"
        )
    return ticket


def control_key(message: pb.Ticket | pb.CreateTicketRequest) -> bytes:
    """A ticket's time control as a queue key: equal controls, equal keys; b"" for none."""
    if not message.HasField("time_control"):
        return b""
    control = time_control_from_proto(message.time_control)
    if control is None:
        return b""
    return time_control_to_proto(control).SerializeToString(deterministic=True)


def check_player_id(player_id: str) -> None:
    if not player_id:
        raise InvalidArgument("player_id is required")
    if len(player_id) > MAX_PLAYER_ID or not player_id.isprintable():
        raise InvalidArgument(f"player_id must be 1-{MAX_PLAYER_ID} printable characters")


def check_ticket_id(ticket_id: str) -> None:
    if not ticket_id:
        raise InvalidArgument("ticket_id is required")
    if len(ticket_id) > 64 or not all(c.isascii() and (c.isalnum()) for c in ticket_id):
        raise InvalidArgument(f"malformed ticket_id {ticket_id[:70]!r}")


def validate_create(req: pb.CreateTicketRequest) -> tuple[int, int]:
    """The seat range a valid request asks for; InvalidArgument names what is wrong."""
    check_player_id(req.player_id)
    if req.player_id.startswith(BOT_PREFIX):
        raise InvalidArgument(f"player ids starting with {BOT_PREFIX!r} are reserved for bots")
    if len(req.request_id) > MAX_REQUEST_ID:
        raise InvalidArgument(f"request_id must be at most {MAX_REQUEST_ID} characters")
    if sent_unknown_field(req, 6):
        raise InvalidArgument(
            "send client_seed_commitment (SHA-256 of your seed), not client_seed: the seed is "
            "revealed to the engine once the game exists"
        )
    if req.client_seed_commitment and not is_commitment(req.client_seed_commitment):
        raise InvalidArgument(
            "client_seed_commitment must be 64 lowercase hex digits (SHA-256 of your seed)"
        )
    try:
        parse_public_key(req.public_key)
    except ValueError as err:
        # Without a key the seat could never sign a move; refuse now, not at the engine.
        raise InvalidArgument(f"public_key: {err}") from None
    if not req.game:
        raise InvalidArgument(f"game is required; known: {', '.join(sorted(REGISTRY))}")
    if req.HasField("time_control"):
        try:
            time_control_from_proto(req.time_control)
        except ValueError as err:
            raise InvalidArgument(f"time_control: {err}") from None
    game = REGISTRY.get(req.game)
    if game is None:
        raise InvalidArgument(f"unknown game {req.game!r}; known: {', '.join(sorted(REGISTRY))}")
    lo = req.min_seats or game.min_players
    hi = req.max_seats or game.max_players
    if lo > hi:
        raise InvalidArgument(f"min_seats {lo} is more than max_seats {hi}")
    if lo < game.min_players or hi > game.max_players:
        raise InvalidArgument(
            f"{game.title} seats {game.min_players}-{game.max_players} players; asked for {lo}-{hi}"
        )
    return lo, hi
