"""Forming a match (docs/matchmaking.md): its record PENDING, every ticket reserved by
revision, the record COMMITTED; then `finish`: MatchFormed published (deduplicated by the
match id), the game awaited, every ticket ASSIGNED, the record DONE. A match that cannot
be committed is left to `MatchRecovery`, which also finishes a committed one whose former
died."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

import structlog
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from boulevard.api.v1 import events_pb2
from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.platform import metrics
from boulevard.platform.errors import Aborted, Unavailable
from services.matchmaking.bot_seats import BotSeats
from services.matchmaking.matcher import Proposal, seat_order
from services.matchmaking.store import CAS_ATTEMPTS, Conflict, Records, match_key, ticket_key
from services.matchmaking.tickets import TicketBook, Viewed, now_ms, status_name

log = structlog.get_logger(__name__)

MSG_ID = "Nats-Msg-Id"


class MatchFormer:
    def __init__(
        self,
        js: JetStreamContext,
        book: TicketBook,
        matches: Records,
        bots: BotSeats,
        match_formed_subject: str,
        games_stream: str = "",
        games_subject_prefix: str = "game",
        game_wait_seconds: float = 10.0,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.js = js
        self.book = book
        self.matches = matches
        self.bots = bots
        self.match_formed_subject = match_formed_subject
        # Where the engine writes games: a ticket turns ASSIGNED only once its game's first
        # event is there, so a client that calls GetGame right after ASSIGNED finds the game.
        # Empty: do not wait (no engine).
        self.games_stream = games_stream
        self.games_subject_prefix = games_subject_prefix
        self.game_wait_seconds = game_wait_seconds
        self.clock = clock
        self.matches_formed = 0

    async def form(
        self, match_id: str, game: str, proposal: Proposal, members: Sequence[Viewed]
    ) -> bool:
        """Form match `match_id` from these tickets (as last seen). True: formed; False: it
        could not be committed (the caller resolves it: `MatchRecovery.resolve`)."""
        by_id = {v.ticket.ticket_id: v for v in members}
        seats: list[events_pb2.MatchSeat] = []
        ticket_ids: list[str] = []
        bots = 0
        for seat, tid in enumerate(seat_order(match_id, proposal)):
            if tid is None:
                bots += 1
                seats.append(self.bots.seat(match_id, seat, bots))
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
        # reserved for a match with no record fences the id off first (MatchRecovery).
        rec_rev, *reserved = await asyncio.gather(
            self.matches.create(match_key(match_id), record),
            *(self._reserve(v, match_id) for v in members),
            return_exceptions=True,
        )
        committed = None
        if isinstance(rec_rev, int) and all(isinstance(r, Viewed) for r in reserved):
            committed = await self.set_status(record, rec_rev, pb.MATCH_STATUS_COMMITTED)
        if committed is None:
            return False
        record, rec_rev = committed
        # Counted at the commit, before `finish` assigns the tickets: whoever sees a ticket
        # ASSIGNED sees its match counted (the metrics e2e test waits for quiet tickets, then
        # counts; counted after `finish`, a loaded machine let it see one match too many).
        metrics.MATCHES_FORMED.labels(game).inc()
        known = {r.ticket.ticket_id: r for r in reserved if isinstance(r, Viewed)}
        await self.finish(record, rec_rev, known)
        for v in members:
            waited = max(0, self.clock() - v.ticket.created_unix_ms) / 1000
            metrics.TIME_TO_MATCH.labels(game).observe(waited)
        return True

    async def _reserve(self, v: Viewed, match_id: str) -> Viewed | None:
        t = pb.Ticket()
        t.CopyFrom(v.ticket)
        t.status = pb.TICKET_STATUS_MATCHED
        t.match_id = match_id
        t.updated_unix_ms = self.clock()
        try:
            revision = await self.book.tickets.update(ticket_key(t.ticket_id), t, v.revision)
        except Conflict:
            return None
        self.book.saw(t, revision)
        return Viewed(t, revision)

    async def set_status(
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

    async def formed(self, match_id: str) -> events_pb2.MatchFormed | None:
        """The MatchFormed of a match this matchmaker committed (GetMatch), None for one it
        never formed (unknown, still reserving its tickets, or abandoned)."""
        got = await self.matches.get(match_key(match_id), pb.MatchRecord)
        if got is None or got[0].status not in (pb.MATCH_STATUS_COMMITTED, pb.MATCH_STATUS_DONE):
            return None
        return formed_of(got[0])

    async def finish(
        self, record: pb.MatchRecord, revision: int, known: dict[str, Viewed] | None = None
    ) -> None:
        """Publish MatchFormed and assign every ticket; safe to repeat. `known`: tickets as
        this process reserved them (saves reading them back)."""
        mine = known or {}
        formed = formed_of(record)
        # Publishing and assigning go out together: the record is COMMITTED, so whatever a
        # crash interrupts here is finished by recovery.
        publish = self.js.publish(
            self.match_formed_subject,
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
            await self.set_status(record, revision, pb.MATCH_STATUS_DONE)
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
        if not self.games_stream:
            return
        subject = f"{self.games_subject_prefix}.{match_id}"
        deadline = time.monotonic() + self.game_wait_seconds
        delay = 0.005
        while True:
            try:
                await self.js.get_last_msg(self.games_stream, subject)
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
                got = await self.book.tickets.get(ticket_key(ticket_id), pb.Ticket)
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
                revision = await self.book.tickets.update(ticket_key(ticket_id), t, revision)
            except Conflict:
                continue
            self.book.saw(t, revision)
            return
        raise Aborted(f"could not assign ticket {ticket_id}")


def formed_of(record: pb.MatchRecord) -> events_pb2.MatchFormed:
    """The MatchFormed a committed match publishes: the same message from the same record
    every time (a retried publish deduplicates by the match id; GetMatch serves it)."""
    formed = events_pb2.MatchFormed(
        match_id=record.match_id,
        game=record.game,
        seats=record.seats,
        time_unix_ms=record.created_unix_ms,
    )
    if record.HasField("time_control"):
        formed.time_control.CopyFrom(record.time_control)
    return formed
