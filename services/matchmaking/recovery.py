"""Recovery: a match left half-formed (its former crashed, or lost a race) is driven to
an end from whatever its record says. PENDING is committed if every ticket is reserved,
else abandoned; COMMITTED or DONE is finished (publish again: deduplicated; assign:
idempotent); ABANDONED, or no record at all (the id is fenced off first), puts the
reserved tickets back. The record changes by revision, so a recovery racing a slow former
cannot both commit and abandon one match."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import structlog

from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.platform.errors import Aborted
from services.matchmaking.forming import MatchFormer
from services.matchmaking.store import CAS_ATTEMPTS, Conflict, Records, match_key, ticket_key
from services.matchmaking.tickets import TicketBook, now_ms

log = structlog.get_logger(__name__)


class MatchRecovery:
    def __init__(
        self,
        book: TicketBook,
        matches: Records,
        former: MatchFormer,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.book = book
        self.matches = matches
        self.former = former
        self.clock = clock
        self.matches_abandoned = 0

    async def resolve(self, match_id: str) -> bool:
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
                    got = await self.book.tickets.get(ticket_key(tid), pb.Ticket)
                    if got is None or not (
                        got[0].match_id == match_id
                        and got[0].status in (pb.TICKET_STATUS_MATCHED, pb.TICKET_STATUS_ASSIGNED)
                    ):
                        all_reserved = False
                        break
                target = pb.MATCH_STATUS_COMMITTED if all_reserved else pb.MATCH_STATUS_ABANDONED
                await self.former.set_status(record, revision, target)
                continue  # read it back, whoever won
            if record.status in (pb.MATCH_STATUS_COMMITTED, pb.MATCH_STATUS_DONE):
                await self.former.finish(record, revision)
                return True
            await self._release(match_id, [t for t in record.ticket_ids if t])
            return False
        raise Aborted(f"match {match_id} keeps changing")

    async def _release(self, match_id: str, ticket_ids: Sequence[str]) -> None:
        """Put this abandoned match's reserved tickets back in the queue."""
        ids = set(ticket_ids) | {
            v.ticket.ticket_id for v in self.book.view.values() if v.ticket.match_id == match_id
        }
        for tid in ids:
            for _ in range(CAS_ATTEMPTS):
                got = await self.book.tickets.get(ticket_key(tid), pb.Ticket)
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
                    revision = await self.book.tickets.update(ticket_key(tid), t, revision)
                except Conflict:
                    continue
                self.book.saw(t, revision)
                break
        self.matches_abandoned += 1
        log.info("match abandoned", match_id=match_id)
