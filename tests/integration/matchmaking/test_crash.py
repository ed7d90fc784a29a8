"""Crashes: SIGKILL the matchmaking process while it forms matches, restart it, and every
ticket is still there, none is in two matches, and no match is left half made."""

from __future__ import annotations

import asyncio
import contextlib
import random
from pathlib import Path

import grpc
import pytest
from nats.aio.client import Client as NATS

from boulevard.api.v1 import events_pb2
from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.fairness import client_seed_commitment as C
from services.matchmaking.matchmaker import new_match_id
from services.matchmaking.store import Records, match_key, ticket_key
from tests.integration.matchmaking.support import (
    GAME,
    TOKEN_KEY,
    check_matches,
    eventually,
    formed_matches,
    mm_settings,
    read_tickets,
    running_mm,
    settled,
    stub_for,
)
from tests.support.identity import auth_env
from tests.support.keys import TEST_PUBLIC_KEY
from tests.support.processes import ServiceProcess, service_env

pytestmark = pytest.mark.integration


async def answering(address: str) -> None:
    async def up() -> bool:
        async with stub_for(address) as stub:
            try:
                await stub.ListQueues(pb.ListQueuesRequest(), timeout=1)
                return True
            except grpc.aio.AioRpcError:
                return False

    await eventually(up, within=30, every=0.1)


async def stream_count(nc: NATS) -> int:
    try:
        return (await nc.jetstream().stream_info("MATCHMAKING")).state.messages
    except Exception:
        return 0


async def test_sigkill_during_matching_loses_no_ticket_and_matches_none_twice(
    nats_server, nc, tmp_path: Path
) -> None:
    env = service_env(
        nats_server,
        tmp_path / "data",
        {
            "BOULEVARD_TOKEN_KEY": TOKEN_KEY,
            **auth_env(),
            "BOULEVARD_MATCHMAKING_TICK_SECONDS": "0.02",
            "BOULEVARD_MATCHMAKING_RECOVER_AFTER_SECONDS": "1",
            "BOULEVARD_MATCHMAKING_GAME_WAIT_SECONDS": "0",  # no engine in this test
            "BOULEVARD_MATCHMAKING_WINDOW_WIDEN_PER_SECOND": "20",
            "BOULEVARD_LOG_LEVEL": "info",
        },
    )
    rng = random.Random(9)
    requests = []
    for i in range(240):
        lo = rng.randint(2, 4)
        requests.append(
            pb.CreateTicketRequest(public_key=TEST_PUBLIC_KEY,
                request_id=f"req-{i}", player_id=f"k{i:03d}", game=GAME,
                min_seats=lo, max_seats=rng.randint(lo, 5), client_seed_commitment=C(f"s{i}"),
            )
        )  # fmt: skip
    first = ServiceProcess("matchmaking", env, tmp_path).start()
    second = ServiceProcess("matchmaking", env, tmp_path)
    try:
        await answering(first.address)
        created: dict[int, pb.Ticket] = {}

        async with stub_for(first.address) as stub:

            async def create(i: int) -> None:
                with contextlib.suppress(grpc.aio.AioRpcError):
                    created[i] = (await stub.CreateTicket(requests[i], timeout=5)).ticket

            async def kill_while_matching() -> None:
                """SIGKILL as soon as a ticket is reserved for a match (after a few matches
                went through): the process is then between forming and assigning."""
                watcher = await (await nc.jetstream().key_value("tickets")).watch("t.>")
                try:
                    async for entry in watcher:
                        if entry is None or not entry.value:
                            continue
                        t = pb.Ticket.FromString(entry.value)
                        if t.status == pb.TICKET_STATUS_MATCHED and await _ge(nc, 3):
                            first.kill()
                            return
                finally:
                    await watcher.stop()

            killer = asyncio.create_task(kill_while_matching())
            await asyncio.sleep(0.2)  # the watch is set up
            creating = [asyncio.create_task(create(i)) for i in range(len(requests))]
            await asyncio.wait_for(killer, 30)
            await asyncio.gather(*creating)
        assert first.process is not None and first.process.returncode == -9
        left = await read_tickets(nc, [t.ticket_id for t in created.values()])
        half_made = sum(1 for t in left.values() if t.status == pb.TICKET_STATUS_MATCHED)
        assert 0 < len(created) < len(requests) or len(created) == len(requests)

        second.start()
        await answering(second.address)
        async with stub_for(second.address) as stub:
            # Retries of every request (those that failed and those that did not) find or
            # make the same ticket.
            again = await asyncio.gather(*(stub.CreateTicket(r) for r in requests))
            for i, t in created.items():
                assert again[i].ticket.ticket_id == t.ticket_id, "a ticket was lost or remade"
            ids = [r.ticket.ticket_id for r in again]
            shown = await settled((stub,), ids)
        assert second.stop() == 0
        tickets = await read_tickets(nc, ids)
        matches = await formed_matches(nc)
        placed = check_matches(matches, tickets, shown)
        assert len(placed) >= 200
        print(
            f"killed after {len(created)} tickets with {half_made} in half-made matches; "
            f"matches {len(matches)}; recovered after restart: "
            f"{second.log().count('recovering match')}"
        )
    finally:
        first.kill()
        second.kill()


async def _ge(nc: NATS, n: int) -> bool:
    return await stream_count(nc) >= n


@pytest.mark.parametrize("cancel_meanwhile", [False, True])
async def test_a_half_reserved_match_left_by_a_crash_is_abandoned(
    nats_server, nc, cancel_meanwhile: bool
) -> None:
    """The state a crash leaves after reserving some of a match's tickets: the restarted
    service puts them back in the queue and matches them again — or, if the player asked to
    cancel meanwhile, cancels them."""
    settings = mm_settings(nats_server.url)
    async with running_mm(settings) as svc, stub_for(svc.address) as stub:
        a = (
            await stub.CreateTicket(
                pb.CreateTicketRequest(
                    public_key=TEST_PUBLIC_KEY, player_id="a", game=GAME, min_seats=3, max_seats=3
                )
            )
        ).ticket
        b = (
            await stub.CreateTicket(
                pb.CreateTicketRequest(
                    public_key=TEST_PUBLIC_KEY, player_id="b", game=GAME, min_seats=3, max_seats=3
                )
            )
        ).ticket
    match_id = new_match_id()
    js = nc.jetstream()
    tickets = Records(await js.key_value("tickets"))
    matches = Records(await js.key_value("matches"))
    record = pb.MatchRecord(
        match_id=match_id, game=GAME, status=pb.MATCH_STATUS_PENDING,
        seats=[
            events_pb2.MatchSeat(seat=0, player_id="a"),
            events_pb2.MatchSeat(seat=1, player_id="b"),
            events_pb2.MatchSeat(seat=2, player_id="bot-1", bot=True),
        ],
        ticket_ids=[a.ticket_id, b.ticket_id, ""],
    )  # fmt: skip
    await matches.create(match_key(match_id), record)
    found = await tickets.get(ticket_key(a.ticket_id), pb.Ticket)
    assert found is not None
    reserved, revision = found
    reserved.status = pb.TICKET_STATUS_MATCHED
    reserved.match_id = match_id
    await tickets.update(ticket_key(a.ticket_id), reserved, revision)  # b never reserved

    async with running_mm(settings) as svc, stub_for(svc.address) as stub:
        if cancel_meanwhile:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.CancelTicket(pb.CancelTicketRequest(ticket_id=a.ticket_id))
            assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            gone = await eventually(
                lambda: _with_status(stub, a.ticket_id, pb.TICKET_STATUS_CANCELLED), within=10
            )
            assert gone.cancel_requested and gone.match_id == ""
            b_now = (await stub.GetTicket(pb.GetTicketRequest(ticket_id=b.ticket_id))).ticket
            assert b_now.status == pb.TICKET_STATUS_WAITING
            return
        back = await eventually(
            lambda: _with_status(stub, a.ticket_id, pb.TICKET_STATUS_WAITING), within=10
        )
        assert back.match_id == ""
        await stub.CreateTicket(
            pb.CreateTicketRequest(
                public_key=TEST_PUBLIC_KEY, player_id="c", game=GAME, min_seats=3, max_seats=3
            )
        )
        done = await eventually(
            lambda: _with_status(stub, a.ticket_id, pb.TICKET_STATUS_ASSIGNED), within=10
        )
        assert done.game_id != match_id
    got = await matches.get(match_key(match_id), pb.MatchRecord)
    assert got is not None and got[0].status == pb.MATCH_STATUS_ABANDONED
    assert match_id not in {m.match_id for m in await formed_matches(nc)}


async def test_a_committed_match_left_unassigned_is_finished(nats_server, nc) -> None:
    """The state a crash leaves after committing a match but before publishing and assigning:
    the restarted service publishes it once and assigns every ticket."""
    settings = mm_settings(nats_server.url)
    async with running_mm(settings) as svc, stub_for(svc.address) as stub:
        a = (
            await stub.CreateTicket(
                pb.CreateTicketRequest(
                    public_key=TEST_PUBLIC_KEY, player_id="a", game=GAME, min_seats=3, max_seats=3
                )
            )
        ).ticket
        b = (
            await stub.CreateTicket(
                pb.CreateTicketRequest(
                    public_key=TEST_PUBLIC_KEY, player_id="b", game=GAME, min_seats=3, max_seats=3
                )
            )
        ).ticket
    match_id = new_match_id()
    js = nc.jetstream()
    tickets = Records(await js.key_value("tickets"))
    matches = Records(await js.key_value("matches"))
    record = pb.MatchRecord(
        match_id=match_id, game=GAME, status=pb.MATCH_STATUS_COMMITTED,
        seats=[
            events_pb2.MatchSeat(seat=0, player_id="bot-1", bot=True),
            events_pb2.MatchSeat(seat=1, player_id="b"),
            events_pb2.MatchSeat(seat=2, player_id="a"),
        ],
        ticket_ids=["", b.ticket_id, a.ticket_id],
    )  # fmt: skip
    await matches.create(match_key(match_id), record)
    for t in (a, b):
        found = await tickets.get(ticket_key(t.ticket_id), pb.Ticket)
        assert found is not None
        reserved, revision = found
        reserved.status = pb.TICKET_STATUS_MATCHED
        reserved.match_id = match_id
        await tickets.update(ticket_key(t.ticket_id), reserved, revision)

    async with running_mm(settings) as svc, stub_for(svc.address) as stub:
        done = await eventually(
            lambda: _with_status(stub, a.ticket_id, pb.TICKET_STATUS_ASSIGNED), within=10
        )
        assert (done.game_id, done.seat) == (match_id, 2)
        other = await _with_status(stub, b.ticket_id, pb.TICKET_STATUS_ASSIGNED)
        assert other is not None and (other.game_id, other.seat) == (match_id, 1)
    (published,) = await formed_matches(nc)
    assert published.match_id == match_id and published.seats[0].bot
    got = await matches.get(match_key(match_id), pb.MatchRecord)
    assert got is not None and got[0].status == pb.MATCH_STATUS_DONE


async def _with_status(stub, ticket_id: str, status: int) -> pb.Ticket | None:
    t = (await stub.GetTicket(pb.GetTicketRequest(ticket_id=ticket_id))).ticket
    return t if t.status == status else None


async def queue_for_three(stub, player: str) -> pb.Ticket:
    r = pb.CreateTicketRequest(
        public_key=TEST_PUBLIC_KEY, player_id=player, game=GAME, min_seats=3, max_seats=3
    )
    return (await stub.CreateTicket(r)).ticket


async def test_a_reservation_without_a_match_record_is_fenced_and_released(nats_server, nc) -> None:
    """A crash after a reservation landed but before the record did (they are written
    together): recovery writes an ABANDONED record first, so a slow former can no longer
    write its own, and puts the ticket back."""
    settings = mm_settings(nats_server.url)
    async with running_mm(settings) as svc, stub_for(svc.address) as stub:
        a = await queue_for_three(stub, "a")
    match_id = new_match_id()
    js = nc.jetstream()
    tickets = Records(await js.key_value("tickets"))
    matches = Records(await js.key_value("matches"))
    found = await tickets.get(ticket_key(a.ticket_id), pb.Ticket)
    assert found is not None
    reserved, revision = found
    reserved.status = pb.TICKET_STATUS_MATCHED
    reserved.match_id = match_id
    await tickets.update(ticket_key(a.ticket_id), reserved, revision)
    async with running_mm(settings) as svc, stub_for(svc.address) as stub:
        await eventually(
            lambda: _with_status(stub, a.ticket_id, pb.TICKET_STATUS_WAITING), within=10
        )
    got = await matches.get(match_key(match_id), pb.MatchRecord)
    assert got is not None and got[0].status == pb.MATCH_STATUS_ABANDONED
    with pytest.raises(Exception, match=match_id):
        await matches.create(match_key(match_id), pb.MatchRecord(match_id=match_id))
