"""The matcher: which waiting tickets of one game make a table. Pure: no I/O, no clock.

Rules, in order:

- The longest-waiting ticket is the *anchor* and picks first, so no one waits forever.
- The anchor's rating window (`WindowPolicy`) grows with its wait; it takes the tickets
  closest to its rating inside that window.
- A table of n seats is valid when n is in every member's seat range and in the game's.
  The anchor takes the largest n it can fill now with humans.
- If it cannot, and its bot fill time is up, it takes the closest humans whose bot fill time
  is up too (as many as their ranges allow) and bots fill the table to the smallest valid
  size.
- A ticket is in at most one proposal; one player is never twice at one table.

Seats are then shuffled deterministically from the match id (`seat_order`), so the seat
order is reproducible and not decided by who queued first.
"""

from __future__ import annotations

import bisect
import hashlib
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from boulevard.contract.players import BOT_PREFIX


@dataclass(frozen=True, slots=True)
class Candidate:
    """A waiting ticket as the matcher sees it."""

    ticket_id: str
    player_id: str
    min_seats: int
    max_seats: int
    rating: float
    waiting_since_ms: int
    bot_fill_after_ms: int = 0  # 0 = never fill with bots

    def bot_fill_due(self, now_ms: int) -> bool:
        waited = now_ms - self.waiting_since_ms
        return self.bot_fill_after_ms > 0 and waited >= self.bot_fill_after_ms


@dataclass(frozen=True, slots=True)
class WindowPolicy:
    """How far (in rating points, openskill mu) a ticket looks: `base` at once, growing by
    `widen_per_second` of waiting, at most `maximum`."""

    base: float = 3.0
    widen_per_second: float = 0.5
    maximum: float = 100.0

    def width(self, waited_ms: int) -> float:
        return min(self.maximum, self.base + self.widen_per_second * max(0, waited_ms) / 1000)


@dataclass(frozen=True, slots=True)
class Proposal:
    """A table: the human tickets (anchor first) and how many bots fill the rest."""

    ticket_ids: tuple[str, ...]
    bots: int = 0

    @property
    def size(self) -> int:
        return len(self.ticket_ids) + self.bots


def find_matches(
    candidates: Iterable[Candidate],
    game_min: int,
    game_max: int,
    now_ms: int,
    policy: WindowPolicy = WindowPolicy(),
    anchors: frozenset[str] | None = None,
) -> list[Proposal]:
    """Tables to form now from one game's waiting tickets; each ticket in at most one.
    `anchors` limits who picks to those tickets (new arrivals, between full passes); any
    waiting ticket can still be picked."""
    by_id = {c.ticket_id: c for c in candidates}
    # Sorted by rating; a ticket leaves the list when it is taken.
    ranked = sorted(by_id.values(), key=_rating_key)
    keys = [_rating_key(c) for c in ranked]
    taken: set[str] = set()
    out: list[Proposal] = []
    pickers = by_id.values() if anchors is None else [by_id[a] for a in anchors if a in by_id]
    for anchor in sorted(pickers, key=lambda c: (c.waiting_since_ms, c.ticket_id)):
        if anchor.ticket_id in taken:
            continue
        lo, hi = max(anchor.min_seats, game_min), min(anchor.max_seats, game_max)
        if lo > hi:
            continue
        proposal = _table_for(anchor, ranked, keys, lo, hi, now_ms, policy)
        if proposal is None:
            continue
        out.append(proposal)
        for tid in proposal.ticket_ids:
            taken.add(tid)
            i = bisect.bisect_left(keys, _rating_key(by_id[tid]))
            del keys[i], ranked[i]
    return out


def _rating_key(c: Candidate) -> tuple[float, int, str]:
    return (c.rating, c.waiting_since_ms, c.ticket_id)


def _by_distance(
    anchor: Candidate, ranked: Sequence[Candidate], keys: Sequence[tuple[float, int, str]],
    window: float,
) -> Iterable[Candidate]:  # fmt: skip
    """The other tickets inside the window, closest rating first."""
    i = bisect.bisect_left(keys, _rating_key(anchor))
    left, right = i - 1, i + 1
    while True:
        dl = anchor.rating - ranked[left].rating if left >= 0 else None
        dr = ranked[right].rating - anchor.rating if right < len(ranked) else None
        if dl is not None and (dr is None or dl <= dr):
            if dl > window:
                return
            yield ranked[left]
            left -= 1
        elif dr is not None:
            if dr > window:
                return
            yield ranked[right]
            right += 1
        else:
            return


def _table_for(
    anchor: Candidate,
    ranked: Sequence[Candidate],
    keys: Sequence[tuple[float, int, str]],
    lo: int,
    hi: int,
    now_ms: int,
    policy: WindowPolicy,
) -> Proposal | None:
    window = policy.width(now_ms - anchor.waiting_since_ms)
    if not anchor.bot_fill_due(now_ms):
        # Fast path for a deep queue: no neighbour inside the window, no table.
        i = bisect.bisect_left(keys, _rating_key(anchor))
        near = [
            abs(ranked[j].rating - anchor.rating) for j in (i - 1, i + 1) if 0 <= j < len(ranked)
        ]
        if not near or min(near) > window:
            return None
    picks: dict[int, list[Candidate]] = {n: [] for n in range(lo, hi + 1)}
    players: dict[int, set[str]] = {n: {anchor.player_id} for n in range(lo, hi + 1)}
    seen: list[Candidate] = []
    for c in _by_distance(anchor, ranked, keys, window):
        if c.player_id == anchor.player_id:
            continue
        seen.append(c)
        for n in range(lo, hi + 1):
            if (
                c.min_seats <= n <= c.max_seats
                and len(picks[n]) < n - 1
                and c.player_id not in players[n]
            ):
                picks[n].append(c)
                players[n].add(c.player_id)
        if len(picks[hi]) == hi - 1:
            break
    for n in range(hi, lo - 1, -1):
        if len(picks[n]) == n - 1:
            return Proposal((anchor.ticket_id, *(c.ticket_id for c in picks[n])))
    if not anchor.bot_fill_due(now_ms):
        return None
    # Bot fill: humans who also accept bots now, as many as all their ranges allow.
    members = [anchor.ticket_id]
    seated = {anchor.player_id}
    for c in seen:
        if len(members) >= hi:
            break
        if not c.bot_fill_due(now_ms) or c.player_id in seated:
            continue
        new_lo, new_hi = max(lo, c.min_seats), min(hi, c.max_seats)
        if new_lo > new_hi or len(members) + 1 > new_hi:
            continue
        lo, hi = new_lo, new_hi
        members.append(c.ticket_id)
        seated.add(c.player_id)
    size = max(lo, len(members))
    return Proposal(tuple(members), bots=size - len(members))


def seat_order(match_id: str, proposal: Proposal) -> list[str | None]:
    """Who sits where: ticket ids by seat, None for a bot; a shuffle seeded by the match id
    (reproducible, and not in queue order)."""
    seats: list[str | None] = [*proposal.ticket_ids, *([None] * proposal.bots)]
    seed = int.from_bytes(hashlib.sha256(match_id.encode()).digest()[:8], "big")
    random.Random(seed).shuffle(seats)
    return seats


def bot_player_id(n: int) -> str:
    """The player id of the n-th bot of a table (1-based); "bot-" is reserved for bots."""
    return f"{BOT_PREFIX}{n}"
