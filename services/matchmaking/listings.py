"""The listings read from the ticket book's view: ListTickets (a caller's tickets, newest
first, paged) and ListQueues (per game: tickets waiting and matched, and the matches
assigned in the last minute, each counted once)."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Mapping

from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.games import REGISTRY
from boulevard.platform.errors import InvalidArgument
from services.matchmaking.tickets import Viewed, now_ms

LIST_PAGE_DEFAULT = 100  # ListTickets
LIST_PAGE_MAX = 1000


class Listings:
    def __init__(self, clock: Callable[[], int] = now_ms) -> None:
        self.clock = clock
        self._formed: dict[str, deque[tuple[int, str]]] = defaultdict(deque)  # game -> (ms, id)
        self._seen_matches: set[str] = set()

    def count_match(self, ticket: pb.Ticket) -> None:
        """Remember matches assigned in the last minute (for ListQueues), once each."""
        since = self.clock() - 60_000
        if ticket.match_id in self._seen_matches or ticket.updated_unix_ms < since:
            return
        formed = self._formed[ticket.game]
        formed.append((ticket.updated_unix_ms, ticket.match_id))
        self._seen_matches.add(ticket.match_id)
        while formed and formed[0][0] < since:
            self._seen_matches.discard(formed.popleft()[1])

    def stats(self, game: str, view: Mapping[str, Viewed]) -> list[pb.QueueStats]:
        """ListQueues: per game, the tickets of `view` waiting and matched, and the matches
        assigned in the last minute."""
        if game and game not in REGISTRY:
            raise InvalidArgument(f"unknown game {game!r}; known: {', '.join(sorted(REGISTRY))}")
        games = [game] if game else sorted(REGISTRY)
        now = self.clock()
        stats = {g: pb.QueueStats(game=g) for g in games}
        for v in view.values():
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

    def tickets(
        self,
        view: Mapping[str, Viewed],
        owner: str | None,
        game: str = "",
        status: int = pb.TICKET_STATUS_UNSPECIFIED,
        page_size: int = 0,
        page_token: str = "",
    ) -> tuple[list[pb.Ticket], str]:
        """Tickets from `view`, newest first: only `owner`'s (None: an operator's call, every
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
                for v in view.values()
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
