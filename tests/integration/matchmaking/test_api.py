"""The matchmaking API against a real nats-server: tickets, idempotent retries, one waiting
ticket per player and game, watching, expiry, and precise status codes for bad input."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.audit.signing import SigningKey
from boulevard.client.matchmaking import MatchmakingClient, TicketNotAssigned
from boulevard.fairness import client_seed_commitment as C
from boulevard.platform.auth import verify_token
from boulevard.platform.errors import Unauthenticated
from services.matchmaking.bot_seats import bot_client_seed
from tests.integration.matchmaking.support import (
    GAME,
    TOKEN_KEY,
    eventually,
    formed_matches,
    mm_settings,
    running_mm,
    stub_for,
)
from tests.support.identity import mint
from tests.support.keys import TEST_PUBLIC_KEY


def player_md_with(name: str, *roles: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {mint(name, roles)}"),)


pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


def req(player: str, **kw: object) -> pb.CreateTicketRequest:
    kw.setdefault("public_key", TEST_PUBLIC_KEY)
    return pb.CreateTicketRequest(player_id=player, game=kw.pop("game", GAME), **kw)  # type: ignore[arg-type]


async def code_of(call: object) -> grpc.StatusCode:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call  # type: ignore[misc]
    return err.value.code()


async def test_bad_input_gets_precise_status_codes(nats_server) -> None:
    settings = mm_settings(nats_server.url, matchmaking_ticket_ttl_seconds=60)
    async with running_mm(settings) as svc, stub_for(svc.address) as stub:
        invalid = grpc.StatusCode.INVALID_ARGUMENT
        assert await code_of(stub.CreateTicket(req("a", game="chess"))) == invalid
        assert await code_of(stub.CreateTicket(req("a", game=""))) == invalid
        # The player id is the token's subject: one no person may hold is refused.
        assert await code_of(stub.CreateTicket(req("bot-7"))) == grpc.StatusCode.UNAUTHENTICATED
        auditor = player_md_with("ann", "auditor")
        assert await code_of(stub.CreateTicket(req("ann"), metadata=auditor)) == (
            grpc.StatusCode.PERMISSION_DENIED
        )
        assert await code_of(stub.CreateTicket(req("a", min_seats=4, max_seats=3))) == invalid
        assert await code_of(stub.CreateTicket(req("a", min_seats=1))) == invalid
        assert await code_of(stub.CreateTicket(req("a", max_seats=9))) == invalid
        assert (
            await code_of(stub.CreateTicket(req("a", client_seed_commitment="s" * 64))) == invalid
        )
        assert await code_of(stub.CreateTicket(req("a", bot_fill_after_seconds=60))) == invalid
        # Every seat signs its moves: no key, or not an Ed25519 key, no ticket.
        assert await code_of(stub.CreateTicket(req("a", public_key=""))) == invalid
        assert await code_of(stub.CreateTicket(req("a", public_key="ab" * 31))) == invalid
        assert await code_of(stub.CreateTicket(req("a", public_key="AB" * 32))) == invalid
        assert await code_of(stub.GetTicket(pb.GetTicketRequest(ticket_id=""))) == invalid
        assert await code_of(stub.GetTicket(pb.GetTicketRequest(ticket_id="../x"))) == invalid
        assert await code_of(stub.ListQueues(pb.ListQueuesRequest(game="chess"))) == invalid
        assert await code_of(stub.GetRating(pb.GetRatingRequest(player_id="a"))) == invalid
        not_found = grpc.StatusCode.NOT_FOUND
        assert await code_of(stub.GetTicket(pb.GetTicketRequest(ticket_id="f" * 32))) == not_found
        assert await code_of(stub.CancelTicket(pb.CancelTicketRequest(ticket_id="f" * 32))) == (
            not_found
        )

        # One waiting ticket per player and game; another game is fine.
        first = (await stub.CreateTicket(req("ann", max_seats=4, min_seats=4))).ticket
        assert await code_of(stub.CreateTicket(req("ann"))) == grpc.StatusCode.FAILED_PRECONDITION
        other = await stub.CreateTicket(req("ann", game="lords_of_vegas", min_seats=4))
        assert other.ticket.status == pb.TICKET_STATUS_WAITING
        # Once cancelled, the player may queue again.
        cancelled = await stub.CancelTicket(pb.CancelTicketRequest(ticket_id=first.ticket_id))
        assert cancelled.ticket.status == pb.TICKET_STATUS_CANCELLED
        again = await stub.CancelTicket(pb.CancelTicketRequest(ticket_id=first.ticket_id))
        assert again.ticket.status == pb.TICKET_STATUS_CANCELLED
        second = (await stub.CreateTicket(req("ann", max_seats=2))).ticket
        assert second.ticket_id != first.ticket_id

        # An assigned ticket cannot be cancelled.
        await stub.CreateTicket(req("ben", max_seats=2))
        assigned = await eventually(
            lambda: _status(stub, second.ticket_id, pb.TICKET_STATUS_ASSIGNED)
        )
        code = await code_of(
            stub.CancelTicket(pb.CancelTicketRequest(ticket_id=assigned.ticket_id))
        )
        assert code == grpc.StatusCode.FAILED_PRECONDITION


async def _status(stub, ticket_id: str, status: int) -> pb.Ticket | None:
    t = (await stub.GetTicket(pb.GetTicketRequest(ticket_id=ticket_id))).ticket
    return t if t.status == status else None


async def test_a_retried_create_returns_the_same_ticket(nats_server) -> None:
    async with running_mm(mm_settings(nats_server.url)) as svc, stub_for(svc.address) as stub:
        r = req("cat", request_id="req-1", min_seats=5, client_seed_commitment=C("c4t"))
        replies = await asyncio.gather(*(stub.CreateTicket(r) for _ in range(8)))
        assert len({x.ticket.ticket_id for x in replies}) == 1
        assert replies[0].ticket.client_seed_commitment == C("c4t")
        # The same request id from another player is another ticket (and no look at cat's).
        dog = (await stub.CreateTicket(req("dog", request_id="req-1", min_seats=5))).ticket
        assert dog.ticket_id != replies[0].ticket.ticket_id
        # Reused for another game: refused.
        code = await code_of(
            stub.CreateTicket(req("cat", request_id="req-1", game="lords_of_vegas"))
        )
        assert code == grpc.StatusCode.INVALID_ARGUMENT
    # After a restart too (the key is durable).
    async with running_mm(mm_settings(nats_server.url)) as svc, stub_for(svc.address) as stub:
        again = await stub.CreateTicket(r)
        assert again.ticket.ticket_id == replies[0].ticket.ticket_id


async def test_watch_sees_matching_and_assignment_then_ends(nats_server, nc) -> None:
    async with running_mm(mm_settings(nats_server.url)) as svc, stub_for(svc.address) as stub:
        mine = (
            await stub.CreateTicket(
                req("eve", max_seats=3, min_seats=3, client_seed_commitment=C("e"))
            )
        ).ticket
        seen: list[pb.Ticket] = []

        async def watch() -> None:
            async for update in stub.WatchTicket(pb.WatchTicketRequest(ticket_id=mine.ticket_id)):
                seen.append(update.ticket)

        watcher = asyncio.create_task(watch())
        await eventually(lambda: seen)
        await stub.CreateTicket(req("fay", min_seats=2, max_seats=3))
        await stub.CreateTicket(req("gus", min_seats=3, max_seats=5))
        await asyncio.wait_for(watcher, 10)  # the stream ends by itself
        statuses = [t.status for t in seen]
        assert statuses[0] == pb.TICKET_STATUS_WAITING
        assert statuses[-1] == pb.TICKET_STATUS_ASSIGNED
        final = seen[-1]
        claims = verify_token(TOKEN_KEY.encode(), final.player_token)
        assert (claims.game_id, claims.seat, claims.player_id) == (final.game_id, final.seat, "eve")
        (match,) = await formed_matches(nc)
        assert match.match_id == final.game_id and match.game == GAME
        assert [s.seat for s in match.seats] == [0, 1, 2]
        assert {s.player_id for s in match.seats} == {"eve", "fay", "gus"}
        assert match.seats[final.seat].player_id == "eve"
        assert match.seats[final.seat].client_seed_commitment == C("e")
        queues = (await stub.ListQueues(pb.ListQueuesRequest(game=GAME))).queues
        assert queues[0].matches_last_minute == 1 and queues[0].waiting == 0


async def test_watch_sees_expiry(nats_server) -> None:
    settings = mm_settings(nats_server.url, matchmaking_ticket_ttl_seconds=1.0)
    async with running_mm(settings) as svc, stub_for(svc.address) as stub:
        lonely = (await stub.CreateTicket(req("hal", min_seats=5))).ticket
        queues = (await stub.ListQueues(pb.ListQueuesRequest())).queues
        assert {q.game: q.waiting for q in queues}[GAME] == 1
        updates = [
            u.ticket
            async for u in stub.WatchTicket(pb.WatchTicketRequest(ticket_id=lonely.ticket_id))
        ]
        assert [t.status for t in updates] == [pb.TICKET_STATUS_WAITING, pb.TICKET_STATUS_EXPIRED]
        assert "1 s" in updates[-1].status_reason
        # An expired ticket frees the player to queue again.
        await stub.CreateTicket(req("hal", min_seats=5))


async def test_bot_fill_gives_bot_seats_and_a_token_for_the_human(nats_server, nc) -> None:
    async with running_mm(mm_settings(nats_server.url)) as svc, stub_for(svc.address) as stub:
        t = (
            await stub.CreateTicket(req("ivy", min_seats=3, max_seats=4, bot_fill_after_seconds=1))
        ).ticket
        done = await eventually(lambda: _status(stub, t.ticket_id, pb.TICKET_STATUS_ASSIGNED), 10)
        (match,) = await formed_matches(nc)
        assert len(match.seats) == 3
        bots = [s for s in match.seats if s.bot]
        assert sorted(s.player_id for s in bots) == ["bot-1", "bot-2"]
        assert match.seats[done.seat].player_id == "ivy" and not match.seats[done.seat].bot
        # Each seat is bound to the key that will sign its moves: the player's own, and for
        # the bots the operator's bot key, so an auditor sees which seats the operator played.
        assert match.seats[done.seat].public_key == TEST_PUBLIC_KEY
        bot_key = SigningKey(bytes.fromhex("42" * 32)).public_hex
        assert [s.public_key for s in bots] == [bot_key, bot_key]
        claims = verify_token(TOKEN_KEY.encode(), done.player_token)
        assert (claims.game_id, claims.seat) == (match.match_id, done.seat)
        # Each bot seat is committed blind, like a player's: to the seed the bot runner will
        # reveal (derived from a key the dice service never sees), distinct per seat.
        for bot in bots:
            seed = bot_client_seed(TOKEN_KEY.encode(), match.match_id, bot.seat)
            assert bot.client_seed_commitment == C(seed)
        assert len({b.client_seed_commitment for b in bots}) == len(bots)


@pytest.mark.parametrize(
    ("given", "missing"),
    [({}, "BOULEVARD_TOKEN_KEY"), ({"BOULEVARD_TOKEN_KEY": "k"}, "BOULEVARD_AUTH_JWKS")],
)
def test_refuses_to_start_without_its_keys(given: dict[str, str], missing: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOULEVARD_")}
    env["NATS_URL"] = "nats://127.0.0.1:1"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "libs")])
    env.update(given)
    proc = subprocess.run(
        [sys.executable, "-m", "services.matchmaking"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert proc.returncode != 0
    assert missing in proc.stderr


async def test_the_typed_client_waits_for_assignment(nats_server) -> None:
    settings = mm_settings(
        nats_server.url, matchmaking_ticket_ttl_seconds=2, seat_token_ttl_seconds=1
    )
    async with running_mm(settings) as svc:
        jo, kim, lee = (
            MatchmakingClient(svc.address, token=mint(name)) for name in ("jo", "kim", "lee")
        )
        a = await jo.create_ticket(GAME, 2, 2, client_seed="j")
        b = await kim.create_ticket(GAME, 2, 3)
        assert (a.player_id, b.player_id) == ("jo", "kim")  # from the tokens
        got = await asyncio.gather(
            jo.wait_for_assignment(a.ticket_id), kim.wait_for_assignment(b.ticket_id)
        )
        assert got[0].game_id == got[1].game_id and {g.seat for g in got} == {0, 1}
        # Seat tokens expire (1 s here); the owner's next read brings a fresh one.
        token = got[0].player_token
        assert verify_token(TOKEN_KEY.encode(), token).player_id == "jo"
        await asyncio.sleep(1.1)
        with pytest.raises(Unauthenticated, match="expired"):
            verify_token(TOKEN_KEY.encode(), token)
        fresh = await jo.fresh_player_token(a.ticket_id)
        assert verify_token(TOKEN_KEY.encode(), fresh).player_id == "jo"
        with pytest.raises(grpc.aio.AioRpcError) as denied:
            await kim.fresh_player_token(a.ticket_id)  # not kim's ticket
        assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
        lone = await lee.create_ticket(GAME, 5, 5)
        with pytest.raises(TicketNotAssigned):
            await lee.wait_for_assignment(lone.ticket_id)
        assert (await lee.get_rating("lee", GAME)).games == 0
        assert [q.game for q in await lee.list_queues(GAME)] == [GAME]
        for client in (jo, kim, lee):
            await client.close()
