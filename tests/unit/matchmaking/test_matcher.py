"""The pure matcher: valid tables, similar ratings first, windows that widen, bot fill."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from services.matchmaking.matcher import (
    Candidate,
    Proposal,
    WindowPolicy,
    find_matches,
    seat_order,
)

POLICY = WindowPolicy(base=3.0, widen_per_second=0.5, maximum=100.0)


def cand(
    tid: str, rating: float = 25.0, lo: int = 2, hi: int = 4, since: int = 0, bots_after: int = 0,
    player: str | None = None,
) -> Candidate:  # fmt: skip
    return Candidate(tid, player or f"p-{tid}", lo, hi, rating, since, bots_after)


def tables(proposals: list[Proposal]) -> list[set[str]]:
    return [set(p.ticket_ids) for p in proposals]


def test_two_compatible_tickets_make_a_table() -> None:
    got = find_matches([cand("a"), cand("b")], 2, 5, now_ms=0, policy=POLICY)
    assert got == [Proposal(("a", "b"))]


def test_a_lone_ticket_waits() -> None:
    assert find_matches([cand("a")], 2, 5, now_ms=10_000, policy=POLICY) == []


def test_the_largest_table_every_member_accepts() -> None:
    cands = [cand("a", lo=2, hi=4), cand("b", lo=3, hi=4), cand("c"), cand("d"), cand("e")]
    (table,) = find_matches(cands, 2, 5, now_ms=0, policy=POLICY)
    assert table.size == 4 and table.ticket_ids[0] == "a"


def test_seat_ranges_that_do_not_overlap_never_meet() -> None:
    cands = [cand("a", lo=2, hi=2), cand("b", lo=3, hi=4), cand("c", lo=5, hi=5)]
    assert find_matches(cands, 2, 5, now_ms=0, policy=POLICY) == []


def test_similar_ratings_are_preferred() -> None:
    cands = [
        cand("a", rating=25, hi=2, since=0),
        cand("far", rating=27.5, hi=2, since=1),
        cand("near", rating=25.5, hi=2, since=2),
    ]
    assert tables(find_matches(cands, 2, 5, now_ms=10, policy=POLICY)) == [{"a", "near"}]


def test_ratings_too_far_apart_wait_until_the_window_widens() -> None:
    cands = [cand("low", rating=10, hi=2), cand("high", rating=30, hi=2)]
    # window 3 + 0.5/s: a gap of 20 needs 34 s of waiting
    assert find_matches(cands, 2, 5, now_ms=30_000, policy=POLICY) == []
    assert tables(find_matches(cands, 2, 5, now_ms=34_000, policy=POLICY)) == [{"low", "high"}]


def test_the_longest_waiting_ticket_chooses_first() -> None:
    cands = [
        cand("new", rating=25, hi=2, since=9_000),
        cand("old", rating=24, hi=2, since=0),
        cand("mid", rating=25.2, hi=2, since=5_000),
    ]
    (table,) = find_matches(cands, 2, 5, now_ms=10_000, policy=POLICY)
    assert table.ticket_ids[0] == "old"


def test_one_player_is_never_twice_at_a_table() -> None:
    cands = [cand("a", player="x", hi=2), cand("b", player="x", hi=2)]
    assert find_matches(cands, 2, 5, now_ms=0, policy=POLICY) == []


def test_bots_fill_once_the_ticket_allows_it_and_time_is_up() -> None:
    lone = [cand("a", lo=3, hi=4, bots_after=5_000)]
    assert find_matches(lone, 2, 5, now_ms=4_999, policy=POLICY) == []
    assert find_matches(lone, 2, 5, now_ms=5_000, policy=POLICY) == [Proposal(("a",), bots=2)]


def test_no_bots_for_a_ticket_that_does_not_want_them() -> None:
    assert find_matches([cand("a")], 2, 5, now_ms=10**9, policy=POLICY) == []


def test_bot_fill_takes_humans_who_also_accept_bots_now() -> None:
    cands = [
        cand("a", lo=4, hi=5, bots_after=1_000),
        cand("b", lo=2, hi=4, bots_after=1_000),
        cand("c", lo=2, hi=3, bots_after=1_000),  # cannot sit at 4
        cand("d", lo=2, hi=5, bots_after=0),  # never with bots
    ]
    with_bots, humans_only = find_matches(cands, 2, 5, now_ms=2_000, policy=POLICY)
    assert set(with_bots.ticket_ids) == {"a", "b"} and with_bots.bots == 2
    assert set(humans_only.ticket_ids) == {"c", "d"} and humans_only.bots == 0


def test_bots_do_not_fill_when_humans_can() -> None:
    cands = [cand("a", hi=2, bots_after=1), cand("b", hi=2)]
    assert find_matches(cands, 2, 5, now_ms=5_000, policy=POLICY) == [Proposal(("a", "b"))]


def test_seat_order_is_a_reproducible_shuffle_of_the_table() -> None:
    p = Proposal(("a", "b", "c"), bots=2)
    seats = seat_order("m1", p)
    assert sorted(s or "" for s in seats) == ["", "", "a", "b", "c"]
    assert seat_order("m1", p) == seats
    orders = {tuple(seat_order(f"m{i}", p)) for i in range(50)}
    assert len(orders) > 10


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.integers(0, 120), st.integers(0, 60_000))
def test_every_table_is_valid_and_no_ticket_sits_twice(seed: int, n: int, now: int) -> None:
    rng = random.Random(seed)
    game_min, game_max = 2, 5
    cands = []
    for i in range(n):
        lo = rng.randint(game_min, game_max)
        hi = rng.randint(lo, game_max)
        cands.append(
            cand(
                f"t{i}", rating=rng.uniform(0, 50), lo=lo, hi=hi, since=rng.randint(0, now),
                bots_after=rng.choice([0, 0, 1_000, 30_000]), player=f"p{rng.randint(0, n)}",
            )
        )  # fmt: skip
    by_id = {c.ticket_id: c for c in cands}
    proposals = find_matches(cands, game_min, game_max, now, POLICY)
    seen: set[str] = set()
    for p in proposals:
        members = [by_id[t] for t in p.ticket_ids]
        assert not seen & set(p.ticket_ids)
        seen |= set(p.ticket_ids)
        assert len({m.player_id for m in members}) == len(members)
        assert game_min <= p.size <= game_max
        assert all(m.min_seats <= p.size <= m.max_seats for m in members)
        if p.bots:
            assert all(m.bot_fill_due(now) for m in members)
        anchor = members[0]
        window = POLICY.width(now - anchor.waiting_since_ms)
        assert all(abs(m.rating - anchor.rating) <= window for m in members)


def test_a_thousand_tickets_are_matched_quickly() -> None:
    rng = random.Random(7)
    cands = [
        cand(f"t{i}", rating=rng.gauss(25, 8), lo=rng.choice([2, 3]), hi=rng.choice([3, 4, 5]))
        for i in range(1000)
    ]
    proposals = find_matches(cands, 2, 5, now_ms=0, policy=POLICY)
    assert sum(len(p.ticket_ids) for p in proposals) > 900


def test_only_the_named_anchors_pick_but_anyone_can_be_picked() -> None:
    cands = [cand("old", hi=2, since=0), cand("other", hi=2, since=1), cand("new", hi=2, since=9)]
    (table,) = find_matches(cands, 2, 5, now_ms=10, policy=POLICY, anchors=frozenset({"new"}))
    assert table.ticket_ids[0] == "new" and len(table.ticket_ids) == 2
    assert find_matches(cands, 2, 5, now_ms=10, policy=POLICY, anchors=frozenset()) == []
