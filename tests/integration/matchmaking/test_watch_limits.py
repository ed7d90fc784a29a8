"""WatchTicket streams are bounded per caller.

Each WatchTicket stream holds a queue and, while its ticket waits, reads the ticket from
the KV bucket every second, for as long as its caller keeps it open; one token could open
them without end (memory, and a KV read per second per stream). A caller (a token's
subject) now has at most BOULEVARD_MATCHMAKING_MAX_WATCHES_PER_CALLER open at once; one
more is RESOURCE_EXHAUSTED, and a closed stream frees its place."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from boulevard.api.v1 import matchmaking_pb2 as pb
from tests.integration.matchmaking.support import mm_settings, running_mm, stub_for
from tests.integration.matchmaking.test_api import req
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration

CAP = 3


async def opened(stub: Any, ticket_id: str) -> Any:
    """A stream that has delivered the ticket once (so the service holds it)."""
    call = stub.WatchTicket(pb.WatchTicketRequest(ticket_id=ticket_id))
    await call.read()
    return call


async def test_one_caller_holds_a_bounded_number_of_watches(nats_server: NatsHandle) -> None:
    settings = mm_settings(nats_server.url, matchmaking_max_watches_per_caller=CAP)
    async with running_mm(settings) as svc, stub_for(svc.address) as stub:
        mine = (await stub.CreateTicket(req("wes", min_seats=5))).ticket
        other = (await stub.CreateTicket(req("zoe", min_seats=5))).ticket
        calls = [await opened(stub, mine.ticket_id) for _ in range(CAP)]
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await opened(stub, mine.ticket_id)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "close one first" in (err.value.details() or "")
        # Another player is not held back by wes's streams.
        theirs = await opened(stub, other.ticket_id)
        # A closed stream gives its place back.
        calls.pop().cancel()
        await asyncio.sleep(0.3)
        calls.append(await opened(stub, mine.ticket_id))
        for call in [*calls, theirs]:
            call.cancel()
