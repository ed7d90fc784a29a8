"""A seat token goes to its owner as a player, not to any token of the same subject.

Reading one's own assigned ticket hands out the seat's token (it moves for the seat). The
service checked only the token's subject, so a bearer token of that subject with only the
auditor role (meant for audit reads) or only the operator role received the seat token too,
while CreateTicket and RenewPlayerToken demand the player role. Now it takes the player
role as well; without it the ticket is read without its token."""

from __future__ import annotations

import grpc
import pytest

from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.api.v1 import matchmaking_pb2_grpc
from boulevard.platform.identity import AUDITOR, OPERATOR, PLAYER, bearer
from tests.integration.matchmaking.support import eventually, mm_settings, running_mm, stub_for
from tests.integration.matchmaking.test_api import req
from tests.support.identity import mint
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration


async def test_only_a_player_token_of_the_owner_gets_the_seat_token(
    nats_server: NatsHandle,
) -> None:
    async with running_mm(mm_settings(nats_server.url)) as svc, stub_for(svc.address) as stub:
        mine = (await stub.CreateTicket(req("uma", min_seats=2, max_seats=2))).ticket
        await stub.CreateTicket(req("vic", min_seats=2, max_seats=2))

        async def as_(roles: tuple[str, ...]) -> pb.Ticket:
            reply = await stub.GetTicket(
                pb.GetTicketRequest(ticket_id=mine.ticket_id),
                metadata=bearer(mint("uma", roles)),
            )
            return reply.ticket

        async def assigned() -> bool:
            return (await as_((PLAYER,))).status == pb.TICKET_STATUS_ASSIGNED

        await eventually(assigned, within=10)
        assert (await as_((PLAYER,))).player_token
        assert (await as_((PLAYER, AUDITOR))).player_token
        for roles in ((AUDITOR,), (OPERATOR,), ()):
            shown = await as_(roles)
            assert shown.status == pb.TICKET_STATUS_ASSIGNED and shown.player_token == "", roles
        async with grpc.aio.insecure_channel(svc.address) as plain:
            watch = matchmaking_pb2_grpc.MatchmakingServiceStub(plain).WatchTicket(
                pb.WatchTicketRequest(ticket_id=mine.ticket_id),
                metadata=bearer(mint("uma", (AUDITOR,))),
            )
            first = await watch.read()
            assert first.ticket.status == pb.TICKET_STATUS_ASSIGNED
            assert first.ticket.player_token == ""
            watch.cancel()
