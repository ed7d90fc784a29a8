"""Matching under load and under races, with two matchmaking replicas on one NATS: only
valid matches, no ticket in two matches, never a cancelled ticket in a match."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import grpc
import pytest
from nats.aio.client import Client as NATS

from boulevard.api.v1 import events_pb2
from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.games import REGISTRY
from boulevard.platform.auth import verify_token
from services.matchmaking.store import Records, open_bucket, rating_key
from tests.integration.matchmaking.support import (
    GAME,
    TOKEN_KEY,
    app_of,
    eventually,
    formed_matches,
    mm_settings,
    read_tickets,
    running_mm,
    stub_for,
)

pytestmark = pytest.mark.integration


async def seed_ratings(nc: NATS, ratings: dict[str, float]) -> None:
    records = Records(await open_bucket(nc.jetstream(), "ratings", 1))
    for player, mu in ratings.items():
        await records.create(
            rating_key(GAME, player), pb.PlayerRating(player_id=player, game=GAME, mu=mu, sigma=4)
        )


def check_matches(
    matches: list[events_pb2.MatchFormed], tickets: dict[str, pb.Ticket]
) -> dict[str, str]:
    """Every match valid; returns player -> match id, failing if a player is in two."""
    game = REGISTRY[GAME]
    ids = Counter(m.match_id for m in matches)
    assert not [i for i, n in ids.items() if n > 1], "a match published twice"
    by_player = {t.player_id: t for t in tickets.values()}
    placed: dict[str, str] = {}
    for m in matches:
        n = len(m.seats)
        assert game.min_players <= n <= game.max_players
        assert [s.seat for s in m.seats] == list(range(n))
        for s in m.seats:
            if s.bot:
                continue
            t = by_player[s.player_id]
            assert t.min_seats <= n <= t.max_seats, (t, n)
            assert s.player_id not in placed, f"{s.player_id} in two matches"
            placed[s.player_id] = m.match_id
            assert t.status == pb.TICKET_STATUS_ASSIGNED
            assert (t.game_id, t.seat, t.match_id) == (m.match_id, s.seat, m.match_id)
            claims = verify_token(TOKEN_KEY.encode(), t.player_token)
            assert (claims.game_id, claims.seat, claims.player_id) == (
                m.match_id,
                s.seat,
                s.player_id,
            )
    for t in tickets.values():
        assert t.status != pb.TICKET_STATUS_MATCHED, "a ticket stuck in a half-made match"
        if t.status == pb.TICKET_STATUS_ASSIGNED:
            assert placed.get(t.player_id) == t.game_id
    return placed


async def fetch_all(stub, ids: list[str]) -> dict[str, pb.Ticket]:
    replies = await asyncio.gather(*(stub.GetTicket(pb.GetTicketRequest(ticket_id=i)) for i in ids))
    return {r.ticket.ticket_id: r.ticket for r in replies}


async def settled(stubs, ids: list[str]) -> dict[str, pb.Ticket]:
    """Wait until nothing is being matched and the queue no longer changes."""
    last: list[int] = []

    async def quiet() -> dict[str, pb.Ticket] | None:
        tickets = await fetch_all(stubs[0], ids)
        statuses = sorted(t.status for t in tickets.values())
        if pb.TICKET_STATUS_MATCHED in statuses or statuses != last:
            last[:] = statuses
            return None
        return tickets

    await asyncio.sleep(0.5)
    return await eventually(quiet, within=30, every=0.5)


async def test_two_hundred_tickets_form_only_valid_matches(nats_server, nc) -> None:
    rng = random.Random(200)
    players = [f"p{i:03d}" for i in range(200)]
    await seed_ratings(nc, {p: rng.uniform(5, 45) for p in players[::2]})  # half are new
    settings = mm_settings(
        nats_server.url,
        matchmaking_window_base=2.0,
        matchmaking_window_widen_per_second=10.0,
        matchmaking_tick_seconds=0.02,
    )
    async with (
        running_mm(settings) as one, running_mm(settings) as two,
        stub_for(one.address) as a, stub_for(two.address) as b,
    ):  # fmt: skip

        async def create(i: int, p: str) -> pb.Ticket:
            lo = rng.randint(2, 5)
            hi = rng.randint(lo, 5)
            stub = (a, b)[i % 2]
            r = pb.CreateTicketRequest(player_id=p, game=GAME, min_seats=lo, max_seats=hi)
            return (await stub.CreateTicket(r)).ticket

        made = await asyncio.gather(*(create(i, p) for i, p in enumerate(players)))
        await settled((a, b), [t.ticket_id for t in made])
    # Both replicas stopped (each finishes the matches it was forming): nothing changes now.
    tickets = await read_tickets(nc, [t.ticket_id for t in made])
    matches = await formed_matches(nc)
    placed = check_matches(matches, tickets)
    waiting = [t for t in tickets.values() if t.status == pb.TICKET_STATUS_WAITING]
    assert len(placed) + len(waiting) == 200
    # Leftovers are only those whose seat ranges no one else waiting can meet.
    assert len(placed) >= 180, (len(placed), [(t.min_seats, t.max_seats) for t in waiting])
    # Similar ratings met first: the typical gap inside a match is far below the spread.
    gaps = []
    for m in matches:
        r = [tickets_by_player(tickets)[s.player_id].rating for s in m.seats if not s.bot]
        gaps.append(max(r) - min(r))
    assert sorted(gaps)[len(gaps) // 2] < 10


def tickets_by_player(tickets: dict[str, pb.Ticket]) -> dict[str, pb.Ticket]:
    return {t.player_id: t for t in tickets.values()}


async def test_cancel_racing_formation_never_matches_the_cancelled_ticket(nats_server, nc) -> None:
    settings = mm_settings(nats_server.url, matchmaking_tick_seconds=0.005)
    async with (
        running_mm(settings) as one, running_mm(settings) as two,
        stub_for(one.address) as a, stub_for(two.address) as b,
    ):  # fmt: skip
        outcomes: dict[str, str] = {}

        async def create_and_cancel(i: int) -> pb.Ticket:
            stub = (a, b)[i % 2]
            r = pb.CreateTicketRequest(player_id=f"c{i:03d}", game=GAME, min_seats=2, max_seats=3)
            t = (await stub.CreateTicket(r)).ticket
            if i % 2 == 0:
                await asyncio.sleep(random.random() * 0.02)
                try:
                    got = await (b, a)[i % 2].CancelTicket(
                        pb.CancelTicketRequest(ticket_id=t.ticket_id)
                    )
                    assert got.ticket.status == pb.TICKET_STATUS_CANCELLED
                    outcomes[t.ticket_id] = "cancelled"
                except grpc.aio.AioRpcError as err:
                    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION, err
                    outcomes[t.ticket_id] = "too late"
            return t

        made = await asyncio.gather(*(create_and_cancel(i) for i in range(160)))
        await settled((a, b), [t.ticket_id for t in made])
        abandoned = (
            app_of(one).matchmaker.matches_abandoned + app_of(two).matchmaker.matches_abandoned
        )
    tickets = await read_tickets(nc, [t.ticket_id for t in made])
    placed = check_matches(await formed_matches(nc), tickets)
    counts = Counter(outcomes.values())
    print(counts, "abandoned", abandoned)
    assert counts["cancelled"] > 0 and len(placed) > 0
    for tid, outcome in outcomes.items():
        t = tickets[tid]
        if outcome == "cancelled":
            assert t.status == pb.TICKET_STATUS_CANCELLED
            assert t.player_id not in placed, "a cancelled ticket was matched"
        else:
            assert t.status == pb.TICKET_STATUS_ASSIGNED and t.player_id in placed
