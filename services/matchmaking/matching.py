"""The matching policy: on each pass, which tickets have expired, which matches are stuck
(recovery), and which waiting tickets are matched together, queue by queue (`QueueKey`:
only tickets of one queue ever share a table). How a queue's tickets are grouped into
tables is `matcher.find_matches`; this module chooses the queues and feeds them to it.

No I/O: it reads the ticket book's view and says what to do; the matchmaker does it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, MutableMapping
from dataclasses import dataclass, field

from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.games import REGISTRY
from services.matchmaking.matcher import Candidate, Proposal, WindowPolicy, find_matches
from services.matchmaking.store import FINAL
from services.matchmaking.ticket_checks import control_key
from services.matchmaking.tickets import Viewed

PRUNE_AFTER_MS = 120_000


@dataclass(frozen=True, slots=True)
class QueueKey:
    """The queue a waiting ticket is matched within: one per game and time control
    (tickets match only with equal controls). A new dimension of matching is a field here,
    set by `queue_of`."""

    game: str
    control: bytes = b""  # `ticket_checks.control_key`: b"" for no clock


def queue_of(ticket: pb.Ticket) -> QueueKey:
    return QueueKey(ticket.game, control_key(ticket))


@dataclass
class Pass:
    """One pass's work, in the order the matchmaker starts it."""

    expired: list[Viewed] = field(default_factory=list)
    stuck: set[str] = field(default_factory=set)  # ids of matches to recover
    matches: list[tuple[QueueKey, Proposal, list[Viewed]]] = field(default_factory=list)
    waiting: dict[str, int] = field(default_factory=dict)  # tickets waiting, per game


class MatchingPolicy:
    def __init__(self, window: WindowPolicy, recover_after_ms: int) -> None:
        self.window = window
        self.recover_after_ms = recover_after_ms
        self._candidates: dict[str, tuple[int, Candidate]] = {}

    def plan(
        self,
        view: MutableMapping[str, Viewed],
        now: int,
        busy: Collection[str],
        in_flight: Collection[str],
        anchors: frozenset[str] | None,
    ) -> Pass:
        """The pass over `view` at `now`: tickets in `busy` are being worked on and left
        out; matches `in_flight` are being formed here and are not stuck; with `anchors`,
        only those tickets may pick (a pass for new arrivals), else every waiting one.
        Final tickets older than PRUNE_AFTER_MS leave the view (they stay in KV)."""
        work = Pass()
        waiting: dict[QueueKey, list[Viewed]] = defaultdict(list)
        for v in list(view.values()):
            t = v.ticket
            if t.status == pb.TICKET_STATUS_WAITING:
                if t.ticket_id in busy:
                    continue
                if t.expires_unix_ms <= now:
                    work.expired.append(v)
                else:
                    waiting[queue_of(t)].append(v)
            elif t.status in FINAL and now - t.updated_unix_ms > PRUNE_AFTER_MS:
                del view[t.ticket_id]  # kept in KV; the view needs only recent ones
                self._candidates.pop(t.ticket_id, None)
            elif (
                t.status == pb.TICKET_STATUS_MATCHED
                and now - t.updated_unix_ms >= self.recover_after_ms
                and t.match_id not in in_flight
            ):
                work.stuck.add(t.match_id)
        for game in REGISTRY:
            work.waiting[game] = sum(len(vs) for q, vs in waiting.items() if q.game == game)
        for queue, viewed in waiting.items():
            definition = REGISTRY.get(queue.game)
            if definition is None:
                continue
            by_id = {v.ticket.ticket_id: v for v in viewed}
            cands = [self._candidate(v) for v in viewed]
            for p in find_matches(
                cands,
                definition.min_players,
                definition.max_players,
                now,
                self.window,
                anchors,
            ):
                work.matches.append((queue, p, [by_id[t] for t in p.ticket_ids]))
        return work

    def _candidate(self, v: Viewed) -> Candidate:
        """The matcher's view of a ticket, cached per revision (a deep queue is mostly the
        same tickets pass after pass)."""
        cached = self._candidates.get(v.ticket.ticket_id)
        if cached is not None and cached[0] == v.revision:
            return cached[1]
        c = _candidate(v.ticket)
        self._candidates[v.ticket.ticket_id] = (v.revision, c)
        return c


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
