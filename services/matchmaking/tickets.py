"""The ticket book: matchmaking's tickets in their KV bucket, and this process's view of
them (the bucket's watch and its own writes), with what players ask of their tickets —
create, read, cancel, watch, list — and their expiry. Every change is a write by revision
(`store.Records`), so a cancel racing the matcher, or two replicas, never both win."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import secrets
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import structlog
from nats.js.kv import KeyValue

from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.contract.clocks import time_control_to_proto
from boulevard.messaging.poison import poisoned
from boulevard.platform.auth import PlayerClaims, issue_token
from boulevard.platform.errors import (
    Aborted,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
)
from services.matchmaking.ratings import DEFAULT_MU
from services.matchmaking.store import (
    ACTIVE,
    CAS_ATTEMPTS,
    FINAL,
    Conflict,
    Records,
    index_key,
    rating_key,
    ticket_key,
)
from services.matchmaking.ticket_checks import (
    SUPERSEDED,
    check_ticket_id,
    resolved_control,
    same_request,
    validate_create,
)

log = structlog.get_logger(__name__)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def status_name(status: int) -> str:
    return pb.TicketStatus.Name(status).removeprefix("TICKET_STATUS_").lower()  # type: ignore[arg-type]


@dataclass
class Viewed:
    ticket: pb.Ticket
    revision: int


class TicketBook:
    """The tickets bucket and the view of it. `wake` is set when a ticket starts waiting
    (`take_arrived` gives those since the last call); `on_assigned` hears of each ticket
    seen ASSIGNED."""

    def __init__(
        self,
        tickets_kv: KeyValue,
        ratings: Records,
        token_key: bytes,
        ticket_ttl_ms: int,
        seat_token_ttl_seconds: float,
        on_assigned: Callable[[pb.Ticket], None],
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.tickets = Records(tickets_kv)
        self.ratings = ratings
        self._tickets_kv = tickets_kv
        self.token_key = token_key
        self.ticket_ttl_ms = ticket_ttl_ms
        self.seat_token_ttl_seconds = seat_token_ttl_seconds
        self._on_assigned = on_assigned
        self.clock = clock
        # The view: every ticket as of the latest revision we saw (KV watch + our writes).
        self.view: dict[str, Viewed] = {}
        self._watchers: dict[str, set[asyncio.Queue[Viewed]]] = defaultdict(set)
        self._ready = asyncio.Event()
        self.wake = asyncio.Event()  # set when a ticket starts waiting
        self._arrived: set[str] = set()  # tickets that started waiting since the last pass
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Watch the bucket; return once the view holds every ticket stored."""
        self._watcher = await self._tickets_kv.watch("t.>")
        self._task = asyncio.create_task(self._follow(), name="mm-follow")
        await asyncio.wait_for(self._ready.wait(), 60)

    async def stop(self) -> None:
        with contextlib.suppress(Exception):
            await self._watcher.stop()  # type: ignore[no-untyped-call]
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    def take_arrived(self) -> frozenset[str]:
        """The tickets that started waiting since the last call."""
        arrived, self._arrived = frozenset(self._arrived), set()
        return arrived

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
            self.saw(ticket, entry.revision)

    def saw(self, ticket: pb.Ticket, revision: int) -> None:
        """Take a ticket version into the view (if newer) and tell its watchers."""
        current = self.view.get(ticket.ticket_id)
        if current is not None and current.revision >= revision:
            return
        viewed = Viewed(ticket, revision)
        self.view[ticket.ticket_id] = viewed
        if ticket.status == pb.TICKET_STATUS_WAITING:
            self._arrived.add(ticket.ticket_id)
            self.wake.set()
        if ticket.status == pb.TICKET_STATUS_ASSIGNED:
            self._on_assigned(ticket)
        for q in self._watchers.get(ticket.ticket_id, ()):
            q.put_nowait(viewed)

    def ticket_id_for(self, player_id: str, request_id: str) -> str:
        """A retried request maps to the same ticket; without the key nobody can guess it.
        The player id is the caller's verified identity, so a request id is scoped to its
        player: another caller repeating it gets a ticket of their own."""
        if not request_id:
            return secrets.token_hex(16)
        msg = f"ticket\0{player_id}\0{request_id}".encode()
        return hmac.new(self.token_key, msg, hashlib.sha256).hexdigest()[:32]

    async def create_ticket(self, req: pb.CreateTicketRequest) -> pb.Ticket:
        lo, hi = validate_create(req)
        if req.bot_fill_after_seconds * 1000 >= self.ticket_ttl_ms:
            raise InvalidArgument(
                f"bot_fill_after_seconds {req.bot_fill_after_seconds} is not less than the "
                f"ticket lifetime ({self.ticket_ttl_ms / 1000:g} s)"
            )
        tid = self.ticket_id_for(req.player_id, req.request_id)
        rating_lookup = self.ratings.get(rating_key(req.game, req.player_id), pb.PlayerRating)
        if req.request_id:
            found, rating = await asyncio.gather(
                self.tickets.get(ticket_key(tid), pb.Ticket), rating_lookup
            )
            if found is not None:
                return same_request(found[0], req)
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
            expires_unix_ms=now + self.ticket_ttl_ms,
            updated_unix_ms=now,
            rating=rating[0].mu if rating else DEFAULT_MU,
        )
        control = resolved_control(req)
        if control is not None:  # the concrete control, so "default" meets its equal
            ticket.time_control.CopyFrom(time_control_to_proto(control))
        await self._claim_index(ticket)
        try:
            revision = await self.tickets.create(ticket_key(tid), ticket)
        except Conflict:
            found = await self.tickets.get(ticket_key(tid), pb.Ticket)
            if found is None or found[0].status_reason == SUPERSEDED:
                raise Aborted(
                    "another CreateTicket for this player and game won the race; retry"
                ) from None
            return same_request(found[0], req)
        self.saw(ticket, revision)
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
        return issue_token(self.token_key, claims, self.seat_token_ttl_seconds)

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
            self.saw(done, revision)
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
            self.saw(marked, revision)
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

    async def expire(self, v: Viewed) -> None:
        t = pb.Ticket()
        t.CopyFrom(v.ticket)
        t.status = pb.TICKET_STATUS_EXPIRED
        t.status_reason = f"no match within {self.ticket_ttl_ms / 1000:g} s"
        t.updated_unix_ms = self.clock()
        try:
            revision = await self.tickets.update(ticket_key(t.ticket_id), t, v.revision)
        except Conflict:
            return  # matched or cancelled meanwhile
        self.saw(t, revision)
        log.info("ticket expired", ticket_id=t.ticket_id)
