"""Matching under load and under races, with two matchmaking replicas on one NATS: only
valid matches, no ticket in two matches, never a cancelled ticket in a match."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import grpc
import pytest
from nats.aio.client import Client as NATS

from boulevard.api.v1 import matchmaking_pb2 as pb
from services.matchmaking.store import Records, open_bucket, rating_key
from tests.integration.matchmaking.support import (
    GAME,
    app_of,
    check_matches,
    formed_matches,
    mm_settings,
    read_tickets,
    running_mm,
    settled,
    stub_for,
)
from tests.support.keys import TEST_PUBLIC_KEY

pytestmark = pytest.mark.integration


async def seed_ratings(nc: NATS, ratings: dict[str, float]) -> None:
    records = Records(await open_bucket(nc.jetstream(), "ratings", 1))
    for player, mu in ratings.items():
        await records.create(
            rating_key(GAME, player), pb.PlayerRating(player_id=player, game=GAME, mu=mu, sigma=4)
        )


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
            r = pb.CreateTicketRequest(
                public_key=TEST_PUBLIC_KEY, player_id=p, game=GAME, min_seats=lo, max_seats=hi
            )
            return (await stub.CreateTicket(r)).ticket

        made = await asyncio.gather(*(create(i, p) for i, p in enumerate(players)))
        shown = await settled((a, b), [t.ticket_id for t in made])
    # Both replicas stopped (each finishes the matches it was forming): nothing changes now.
    tickets = await read_tickets(nc, [t.ticket_id for t in made])
    matches = await formed_matches(nc)
    placed = check_matches(matches, tickets, shown)
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
            r = pb.CreateTicketRequest(
                public_key=TEST_PUBLIC_KEY,
                player_id=f"c{i:03d}",
                game=GAME,
                min_seats=2,
                max_seats=3,
            )
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
    # Which side wins each race depends on timing; every outcome is checked below.
    assert len(outcomes) == 80 and len(placed) > 0
    for tid, outcome in outcomes.items():
        t = tickets[tid]
        if outcome == "cancelled":
            assert t.status == pb.TICKET_STATUS_CANCELLED
            assert t.player_id not in placed, "a cancelled ticket was matched"
        elif t.status == pb.TICKET_STATUS_ASSIGNED:
            assert t.player_id in placed  # the cancel lost to a match that went through
        else:
            # The cancel met the ticket MATCHED; that match then fell through (another of
            # its tickets was cancelled first), so the ticket was cancelled, not requeued.
            assert t.status == pb.TICKET_STATUS_CANCELLED and t.player_id not in placed
            assert t.cancel_requested


async def test_tickets_match_only_with_the_same_time_control(nats_server, nc) -> None:
    """The time control is a queue dimension like the game: two players asking for 10 min +
    20 s and two asking for a day per move make two tables, never a mixed one, and each
    match (and so the game the engine creates from it) carries its control."""
    from boulevard.api.v1 import events_pb2
    from boulevard.contract.clocks import parse_time_control, time_control_to_proto

    fast = time_control_to_proto(parse_time_control("10m+20s"))  # type: ignore[arg-type]
    slow = time_control_to_proto(parse_time_control("1d/move"))  # type: ignore[arg-type]
    settings = mm_settings(nats_server.url, matchmaking_tick_seconds=0.02)
    async with running_mm(settings) as svc, stub_for(svc.address) as stub:
        made = []
        for player, control in (("f1", fast), ("s1", slow), ("f2", fast), ("s2", slow)):
            r = pb.CreateTicketRequest(
                public_key=TEST_PUBLIC_KEY,
                player_id=player,
                game=GAME,
                min_seats=2,
                max_seats=2,
                time_control=control,
            )
            made.append((await stub.CreateTicket(r)).ticket)
        await settled((stub,), [t.ticket_id for t in made])
        bad = pb.CreateTicketRequest(
            public_key=TEST_PUBLIC_KEY,
            player_id="x",
            game=GAME,
            time_control=events_pb2.TimeControl(kind=events_pb2.CLOCK_KIND_REAL_TIME),
        )
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.CreateTicket(bad)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "needs a base" in (err.value.details() or "")
    matches = await formed_matches(nc)
    tables = sorted(
        (sorted(s.player_id for s in m.seats), m.time_control.SerializeToString()) for m in matches
    )
    assert tables == sorted(
        [(["f1", "f2"], fast.SerializeToString()), (["s1", "s2"], slow.SerializeToString())]
    )


async def test_a_ticket_asking_for_the_game_default_meets_one_asking_for_that_control(
    nats_server, nc
) -> None:
    """Matchmaking resolves "the game's default" before matching: a ticket asking for it and
    one asking for the same concrete control make one table, whose match (and so the game)
    records the concrete control; a ticket asking for the turn-based default stays apart."""
    from boulevard.api.v1 import events_pb2
    from boulevard.contract.clocks import time_control_to_proto
    from boulevard.games.clock import ClockKind, default_control

    concrete = time_control_to_proto(default_control(GAME, ClockKind.REAL_TIME))
    default = time_control_to_proto(ClockKind.REAL_TIME)
    turn_based = events_pb2.TimeControl(kind=events_pb2.CLOCK_KIND_TURN_BASED, game_default=True)
    settings = mm_settings(nats_server.url, matchmaking_tick_seconds=0.02)
    async with running_mm(settings) as svc, stub_for(svc.address) as stub:
        made = []
        for player, control in (("d1", default), ("t1", turn_based), ("c1", concrete)):
            r = pb.CreateTicketRequest(
                public_key=TEST_PUBLIC_KEY,
                player_id=player,
                game=GAME,
                min_seats=2,
                max_seats=2,
                time_control=control,
            )
            ticket = (await stub.CreateTicket(r)).ticket
            assert not ticket.time_control.game_default  # stored resolved
            made.append(ticket)
        await settled((stub,), [t.ticket_id for t in made])
        waiting = await stub.GetTicket(pb.GetTicketRequest(ticket_id=made[1].ticket_id))
        assert waiting.ticket.status == pb.TICKET_STATUS_WAITING
    matches = await formed_matches(nc)
    assert [(sorted(s.player_id for s in m.seats), m.time_control) for m in matches] == [
        (["c1", "d1"], concrete)
    ]
