"""Matchmaking's gRPC servicer: requests in, `Matchmaker` calls, responses out. Errors are
raised as platform errors; the interceptor maps them to status codes.

Every call but ListQueues and GetRating needs the caller's bearer JWT. The player id is its
`sub`: CreateTicket's `player_id` must be empty or equal to it (PERMISSION_DENIED otherwise),
a ticket is read, watched and cancelled by its owner (or an operator), and only the owner
sees its player token, minted fresh on each read. ListTickets lists the caller's own tickets
(operators: anyone's), never with a player token."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, TypeAlias

import grpc

from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.api.v1 import matchmaking_pb2_grpc
from boulevard.platform.errors import (
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
)
from boulevard.platform.identity import PLAYER, Principal, TokenVerifier
from services.matchmaking.matchmaker import Matchmaker
from services.matchmaking.ticket_checks import check_match_id

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"


class MatchmakingServicer(matchmaking_pb2_grpc.MatchmakingServiceServicer):
    def __init__(
        self, matchmaker: Matchmaker, verifier: TokenVerifier, max_watches_per_caller: int = 16
    ) -> None:
        self.mm = matchmaker
        self.verifier = verifier
        self.max_watches_per_caller = max_watches_per_caller
        self._watching: dict[str, int] = {}  # caller (token subject) -> open WatchTicket streams

    def _caller(self, context: Context, what: str) -> Principal:
        caller = self.verifier.principal(context.invocation_metadata())
        if caller is None:
            raise Unauthenticated(f"{what} needs 'authorization: Bearer <token>'")
        return caller

    @staticmethod
    def _owner(caller: Principal) -> str | None:
        """Whose tickets the caller may touch: their own, or (operators) any."""
        return None if caller.is_operator else caller.subject

    def _shown(self, ticket: pb.Ticket, caller: Principal) -> pb.Ticket:
        """The ticket as the caller may see it: its player token for its owner only."""
        shown = pb.Ticket()
        shown.CopyFrom(ticket)
        shown.player_token = ""
        # The seat's token is for its owner *as a player*: a token of the same subject with
        # only other roles (an auditor's, an operator's) reads the ticket, not the seat.
        if (
            ticket.status == pb.TICKET_STATUS_ASSIGNED
            and ticket.player_id == caller.subject
            and caller.has(PLAYER)
        ):
            shown.player_token = self.mm.seat_token(ticket)
        return shown

    async def CreateTicket(
        self, request: pb.CreateTicketRequest, context: Context
    ) -> pb.CreateTicketResponse:
        caller = self.verifier.require(context.invocation_metadata(), PLAYER, "CreateTicket")
        if request.player_id and request.player_id != caller.subject:
            raise PermissionDenied(
                "player_id must be empty or your own (the token's subject); "
                "you cannot queue for someone else"
            )
        mine = pb.CreateTicketRequest()
        mine.CopyFrom(request)
        mine.player_id = caller.subject
        ticket = await self.mm.create_ticket(mine)
        return pb.CreateTicketResponse(ticket=self._shown(ticket, caller))

    async def GetTicket(
        self, request: pb.GetTicketRequest, context: Context
    ) -> pb.GetTicketResponse:
        caller = self._caller(context, "GetTicket")
        ticket, _ = await self.mm.get_ticket(request.ticket_id, self._owner(caller))
        return pb.GetTicketResponse(ticket=self._shown(ticket, caller))

    async def WatchTicket(
        self, request: pb.WatchTicketRequest, context: Context
    ) -> AsyncIterator[pb.WatchTicketResponse]:
        caller = self._caller(context, "WatchTicket")
        self._admit(caller, context)
        async for ticket in self.mm.watch_ticket(request.ticket_id, self._owner(caller)):
            yield pb.WatchTicketResponse(ticket=self._shown(ticket, caller))

    def _admit(self, caller: Principal, context: Context) -> None:
        """Count a WatchTicket stream of this caller in until the call ends (however it
        ends), or refuse it (RESOURCE_EXHAUSTED) over the bound: each stream holds memory
        and reads the ticket every second for as long as its caller keeps it open."""
        held = self._watching.get(caller.subject, 0)
        if held >= self.max_watches_per_caller:
            raise ResourceExhausted(
                f"you already have {held} WatchTicket streams open, the most one caller may; "
                "close one first"
            )
        self._watching[caller.subject] = held + 1
        context.add_done_callback(lambda _call: self._release(caller.subject))

    def _release(self, subject: str) -> None:
        left = self._watching[subject] - 1
        if left:
            self._watching[subject] = left
        else:
            del self._watching[subject]

    async def CancelTicket(
        self, request: pb.CancelTicketRequest, context: Context
    ) -> pb.CancelTicketResponse:
        caller = self._caller(context, "CancelTicket")
        ticket = await self.mm.cancel_ticket(request.ticket_id, self._owner(caller))
        return pb.CancelTicketResponse(ticket=self._shown(ticket, caller))

    async def GetMatch(self, request: pb.GetMatchRequest, context: Context) -> pb.GetMatchResponse:
        # No token: the match is as public as the GameCreated its game's log serves.
        check_match_id(request.match_id)  # before it becomes a KV key
        formed = await self.mm.former.formed(request.match_id)
        if formed is None:
            raise NotFound(f"no formed match {request.match_id!r}")
        return pb.GetMatchResponse(match=formed)

    async def ListQueues(
        self, request: pb.ListQueuesRequest, context: Context
    ) -> pb.ListQueuesResponse:
        return pb.ListQueuesResponse(queues=self.mm.queue_stats(request.game))

    async def ListTickets(
        self, request: pb.ListTicketsRequest, context: Context
    ) -> pb.ListTicketsResponse:
        caller = self._caller(context, "ListTickets")
        owner = self._owner(caller)
        if request.player_id:
            if owner is not None and request.player_id != owner:
                raise PermissionDenied("only operators may list another player's tickets")
            owner = request.player_id
        tickets, token = self.mm.list_tickets(owner, request)
        shown = []
        for ticket in tickets:
            listed = pb.Ticket()
            listed.CopyFrom(ticket)
            listed.player_token = ""  # a list never carries one; GetTicket gives it its owner
            shown.append(listed)
        return pb.ListTicketsResponse(tickets=shown, next_page_token=token)

    async def GetRating(
        self, request: pb.GetRatingRequest, context: Context
    ) -> pb.GetRatingResponse:
        rating = await self.mm.get_rating(request.player_id, request.game)
        return pb.GetRatingResponse(rating=rating)
