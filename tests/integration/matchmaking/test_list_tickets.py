"""ListTickets against a real nats-server: a player sees only their own tickets and never a
player token; an operator sees everyone's (or one player's); no token, no list; paging holds;
bad input gets INVALID_ARGUMENT."""

from __future__ import annotations

import grpc
import pytest

from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.api.v1 import matchmaking_pb2_grpc
from tests.integration.matchmaking.support import GAME, mm_settings, running_mm
from tests.support.identity import mint
from tests.support.keys import TEST_PUBLIC_KEY

pytestmark = pytest.mark.integration


def md(name: str, *roles: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {mint(name, roles or ('player',))}"),)


async def code_of(call: object) -> grpc.StatusCode:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call  # type: ignore[misc]
    return err.value.code()


async def test_list_tickets_shows_each_identity_what_it_may_see(nats_server) -> None:
    settings = mm_settings(nats_server.url, matchmaking_ticket_ttl_seconds=60)
    async with (
        running_mm(settings) as svc,
        grpc.aio.insecure_channel(svc.address) as channel,
    ):
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
        mine: dict[str, list[str]] = {"ann": [], "bob": []}
        for player, game in (("ann", GAME), ("ann", "lords_of_vegas"), ("bob", GAME)):
            created = await stub.CreateTicket(
                pb.CreateTicketRequest(game=game, min_seats=4, public_key=TEST_PUBLIC_KEY),
                metadata=md(player),
            )
            mine[player].append(created.ticket.ticket_id)

        ann = (await stub.ListTickets(pb.ListTicketsRequest(), metadata=md("ann"))).tickets
        assert sorted(t.ticket_id for t in ann) == sorted(mine["ann"])
        assert all(t.player_id == "ann" and not t.player_token for t in ann)
        # Newest first.
        assert [t.created_unix_ms for t in ann] == sorted(
            (t.created_unix_ms for t in ann), reverse=True
        )
        one_game = await stub.ListTickets(pb.ListTicketsRequest(game=GAME), metadata=md("ann"))
        assert [t.ticket_id for t in one_game.tickets] == [mine["ann"][0]]

        # A player naming another player is refused; no token is refused.
        denied = stub.ListTickets(pb.ListTicketsRequest(player_id="bob"), metadata=md("ann"))
        assert await code_of(denied) == grpc.StatusCode.PERMISSION_DENIED
        assert await code_of(stub.ListTickets(pb.ListTicketsRequest())) == (
            grpc.StatusCode.UNAUTHENTICATED
        )
        # A stranger with a valid token sees nothing of anyone's.
        eve = await stub.ListTickets(pb.ListTicketsRequest(), metadata=md("eve"))
        assert list(eve.tickets) == []

        # An operator sees everyone's, or one player's; still never a player token.
        op = md("olga", "operator")
        every = (await stub.ListTickets(pb.ListTicketsRequest(), metadata=op)).tickets
        assert sorted(t.ticket_id for t in every) == sorted(mine["ann"] + mine["bob"])
        assert not any(t.player_token for t in every)
        bobs = await stub.ListTickets(pb.ListTicketsRequest(player_id="bob"), metadata=op)
        assert [t.ticket_id for t in bobs.tickets] == mine["bob"]
        waiting = pb.ListTicketsRequest(status=pb.TICKET_STATUS_WAITING)
        assert len((await stub.ListTickets(waiting, metadata=op)).tickets) == 3

        # Paging: one at a time, in the same order as one page, nothing twice.
        paged: list[str] = []
        token = ""
        while True:
            page = await stub.ListTickets(
                pb.ListTicketsRequest(page_size=1, page_token=token), metadata=op
            )
            paged.extend(t.ticket_id for t in page.tickets)
            token = page.next_page_token
            if not token:
                break
        assert paged == [t.ticket_id for t in every]

        invalid = grpc.StatusCode.INVALID_ARGUMENT
        for bad in (
            pb.ListTicketsRequest(game="chess"),
            pb.ListTicketsRequest(page_size=1001),
            pb.ListTicketsRequest(page_token="not-a-token"),
            pb.ListTicketsRequest(status=99),  # type: ignore[arg-type]
            pb.ListTicketsRequest(player_id="x" * 129),
        ):
            assert await code_of(stub.ListTickets(bad, metadata=op)) == invalid, bad
