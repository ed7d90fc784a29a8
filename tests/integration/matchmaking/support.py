"""Helpers for the matchmaking integration tests: the service in-process, a stub to call
it, and what a test needs to check matches against the stream they were published on."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import grpc
from nats.aio.client import Client as NATS
from nats.js.api import DeliverPolicy

from boulevard.api.v1 import events_pb2, matchmaking_pb2_grpc
from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.games import REGISTRY
from boulevard.platform.auth import verify_token
from boulevard.platform.logging import configure_logging
from boulevard.platform.server import RunningService, start_service
from services.matchmaking.app import MatchmakingApp
from services.matchmaking.settings import MatchmakingSettings
from services.matchmaking.store import Records, ticket_key

TOKEN_KEY = "test-token-key"
GAME = "las_vegas"  # 2-5 players


def mm_settings(nats_url: str, **overrides: Any) -> MatchmakingSettings:
    values: dict[str, Any] = {
        "NATS_URL": nats_url,
        "token_key": TOKEN_KEY,
        "bot_signing_key": "42" * 32,  # the operator's bot key (else a file in data_dir)
        "log_format": "console",
        "log_level": "warning",
        "shutdown_grace_seconds": 0.5,
        "matchmaking_tick_seconds": 0.05,
        "matchmaking_recover_after_seconds": 1.0,
        "matchmaking_game_wait_seconds": 0,  # no engine here: assign without waiting
        **overrides,
    }
    return MatchmakingSettings(**values)


@asynccontextmanager
async def running_mm(settings: MatchmakingSettings) -> AsyncIterator[RunningService]:
    configure_logging(settings.log_level, settings.log_format)
    service = await start_service(MatchmakingApp(settings), settings, port=0)
    try:
        yield service
    finally:
        await service.stop()


@asynccontextmanager
async def stub_for(address: str) -> AsyncIterator[matchmaking_pb2_grpc.MatchmakingServiceStub]:
    async with grpc.aio.insecure_channel(address) as channel:
        yield matchmaking_pb2_grpc.MatchmakingServiceStub(channel)


def app_of(service: RunningService) -> MatchmakingApp:
    app = service.app
    assert isinstance(app, MatchmakingApp)
    return app


async def formed_matches(
    nc: NATS, subject: str = "mm.match_formed"
) -> list[events_pb2.MatchFormed]:
    """Every MatchFormed on the MATCHMAKING stream, in order."""
    js = nc.jetstream()
    info = await js.stream_info("MATCHMAKING")
    total = info.state.messages
    out: list[events_pb2.MatchFormed] = []
    if total == 0:
        return out
    done = asyncio.get_running_loop().create_future()

    async def on_msg(msg: Any) -> None:
        if msg.subject == subject:
            out.append(events_pb2.MatchFormed.FromString(msg.data))
        if msg.metadata.sequence.stream >= info.state.last_seq and not done.done():
            done.set_result(None)

    sub = await js.subscribe(
        "mm.>", stream="MATCHMAKING", cb=on_msg, ordered_consumer=True,
        deliver_policy=DeliverPolicy.ALL,
    )  # fmt: skip
    try:
        await asyncio.wait_for(done, 20)
    finally:
        await sub.unsubscribe()
    return out


async def eventually(check: Callable[[], Any], within: float = 20.0, every: float = 0.05) -> Any:
    """Poll an (async) check until it returns something truthy."""
    deadline = time.monotonic() + within
    while True:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {within}s")
        await asyncio.sleep(every)


async def all_tickets(
    stub: matchmaking_pb2_grpc.MatchmakingServiceStub, ids: list[str]
) -> list[pb.Ticket]:
    replies = await asyncio.gather(*(stub.GetTicket(pb.GetTicketRequest(ticket_id=t)) for t in ids))
    return [r.ticket for r in replies]


async def read_tickets(nc: NATS, ids: list[str]) -> dict[str, pb.Ticket]:
    """The tickets as stored in KV (read straight from the bucket)."""
    records = Records(await nc.jetstream().key_value("tickets"))
    out: dict[str, pb.Ticket] = {}
    for tid in ids:
        found = await records.get(ticket_key(tid), pb.Ticket)
        assert found is not None, f"ticket {tid} lost"
        out[tid] = found[0]
    return out


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
