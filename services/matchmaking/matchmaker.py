"""The matchmaking service's application: the matcher loop over its collaborators — the
ticket book (tickets.py: tickets in KV and a view of them), the matching policy
(matching.py), forming a match (forming.py, its bot seats in bot_seats.py) and recovering
one (recovery.py).

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
import secrets
import time
from collections.abc import AsyncIterator, Coroutine, Sequence
from typing import Any

import structlog

from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.games import REGISTRY
from boulevard.platform import metrics
from boulevard.platform.errors import InvalidArgument
from services.matchmaking.forming import MatchFormer
from services.matchmaking.listings import Listings
from services.matchmaking.matcher import Proposal
from services.matchmaking.matching import MatchingPolicy
from services.matchmaking.ratings import DEFAULT_MU, DEFAULT_SIGMA
from services.matchmaking.recovery import MatchRecovery
from services.matchmaking.store import Conflict, Records, rating_key
from services.matchmaking.ticket_checks import check_player_id
from services.matchmaking.tickets import TicketBook, Viewed

log = structlog.get_logger(__name__)

STOP_GRACE_SECONDS = 5.0
MIN_TICK_SECONDS = 0.005


def new_match_id() -> str:
    """Also the game id: a NATS subject token and an event-store stream id."""
    return f"m{secrets.token_hex(12)}"


class Matchmaker:
    """The matchmaking application: what the servicer asks of it, and the matcher loop
    that drives its collaborators — the ticket book (`tickets`) and its listings, the
    matching policy (`matching`), forming a match (`forming`, with its bot seats) and
    recovering one (`recovery`) — each made and wired in app.py."""

    def __init__(
        self,
        book: TicketBook,
        listings: Listings,
        ratings: Records,
        policy: MatchingPolicy,
        former: MatchFormer,
        recovery: MatchRecovery,
        tick_seconds: float,
        form_concurrency: int,
    ) -> None:
        self.book = book
        self.listings = listings
        self.ratings = ratings
        self.policy = policy
        self.former = former
        self.recovery = recovery
        self.tick_seconds = tick_seconds
        self.clock = book.clock
        self._in_flight: set[str] = set()  # match ids this process is forming
        self._loop_task: asyncio.Task[None] | None = None
        self._busy: set[str] = set()  # tickets a running step is working on
        self._last_full_pass = 0.0
        self._jobs: set[asyncio.Task[None]] = set()
        self._gate = asyncio.Semaphore(form_concurrency)
        self._stopping = False

    @property
    def view(self) -> dict[str, Viewed]:
        return self.book.view

    @property
    def matches_formed(self) -> int:
        return self.former.matches_formed

    @property
    def matches_abandoned(self) -> int:
        return self.recovery.matches_abandoned

    # ---- lifecycle ----

    async def start(self) -> None:
        await self.book.start()
        self._loop_task = asyncio.create_task(self._loop(), name="mm-loop")

    async def stop(self) -> None:
        self._stopping = True
        # Let the tick in progress finish its matches (a cancelled one would leave them to
        # recovery), then stop the watch: its callback blocks while its queue is full, and a
        # blocked subscription would hold up draining the connection.
        loop = self._loop_task
        if loop is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(loop), STOP_GRACE_SECONDS)
        if self._jobs:  # the matches it started
            await asyncio.wait(set(self._jobs), timeout=STOP_GRACE_SECONDS)
        for job in set(self._jobs):
            job.cancel()
        await self.book.stop()
        if loop is not None:
            loop.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await loop
        self._loop_task = None

    # ---- what the servicer asks ----

    async def create_ticket(self, req: pb.CreateTicketRequest) -> pb.Ticket:
        return await self.book.create_ticket(req)

    async def get_ticket(self, ticket_id: str, owner: str | None = None) -> tuple[pb.Ticket, int]:
        return await self.book.get_ticket(ticket_id, owner)

    def seat_token(self, ticket: pb.Ticket) -> str:
        return self.book.seat_token(ticket)

    async def cancel_ticket(self, ticket_id: str, owner: str | None = None) -> pb.Ticket:
        return await self.book.cancel_ticket(ticket_id, owner)

    def watch_ticket(self, ticket_id: str, owner: str | None = None) -> AsyncIterator[pb.Ticket]:
        return self.book.watch_ticket(ticket_id, owner)

    def list_tickets(
        self, owner: str | None, request: pb.ListTicketsRequest
    ) -> tuple[list[pb.Ticket], str]:
        """ListTickets for `owner` (None: every player's): `Listings.tickets`."""
        return self.listings.tickets(
            self.book.view,
            owner,
            request.game,
            request.status,
            request.page_size,
            request.page_token,
        )

    def queue_stats(self, game: str) -> list[pb.QueueStats]:
        return self.listings.stats(game, self.book.view)

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
            self.book.wake.clear()
            full = started - self._last_full_pass >= self.tick_seconds
            if full:
                self._last_full_pass = started
            try:
                await self.tick(full)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # NATS reconnecting, …: the next tick tries again
                log.warning("matchmaking tick failed", error=str(exc))
            await asyncio.sleep(max(0.0, MIN_TICK_SECONDS - (time.monotonic() - started)))
            left = self.tick_seconds - (time.monotonic() - started)
            if left > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.book.wake.wait(), left)

    async def tick(self, full: bool = True) -> int:
        """One pass: expire, recover, match (`MatchingPolicy.plan` says which). Each match
        is formed by its own task, so a pass does not wait for the previous pass's matches
        (their tickets are left out until done). A pass that is not `full` lets only
        tickets that arrived since the last pass pick (a deep queue is not walked again for
        every arrival; full passes, every `tick_seconds`, let windows widen and the oldest
        pick first). Returns the number of matches started."""
        arrived = self.book.take_arrived()
        work = self.policy.plan(
            self.book.view, self.clock(), self._busy, self._in_flight, None if full else arrived
        )
        for v in work.expired:
            self._spawn(self.book.expire(v), [v.ticket.ticket_id])
        for match_id in work.stuck:
            self._spawn(self._recover(match_id), [])
        for game, depth in work.waiting.items():
            metrics.QUEUE_DEPTH.labels(game).set(depth)
        for queue, proposal, members in work.matches:
            self._spawn(self._form_gated(queue.game, proposal, members), proposal.ticket_ids)
        return len(work.matches)

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

    async def form_match(self, game: str, proposal: Proposal, members: Sequence[Viewed]) -> bool:
        """Form one match from these tickets (as last seen); False if it was abandoned."""
        match_id = new_match_id()
        self._in_flight.add(match_id)
        try:
            formed = await self.former.form(match_id, game, proposal, members)
            return formed or await self.recovery.resolve(match_id)
        finally:
            self._in_flight.discard(match_id)

    async def _recover(self, match_id: str) -> None:
        if match_id in self._in_flight:
            return
        self._in_flight.add(match_id)
        try:
            log.info("recovering match", match_id=match_id)
            await self.recovery.resolve(match_id)
        finally:
            self._in_flight.discard(match_id)
