"""Matchmaking's gRPC servicer: requests in, `Matchmaker` calls, responses out. Errors are
raised as platform errors; the interceptor maps them to status codes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, TypeAlias

import grpc

from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.api.v1 import matchmaking_pb2_grpc
from services.matchmaking.matchmaker import Matchmaker

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"


class MatchmakingServicer(matchmaking_pb2_grpc.MatchmakingServiceServicer):
    def __init__(self, matchmaker: Matchmaker) -> None:
        self.mm = matchmaker

    async def CreateTicket(
        self, request: pb.CreateTicketRequest, context: Context
    ) -> pb.CreateTicketResponse:
        return pb.CreateTicketResponse(ticket=await self.mm.create_ticket(request))

    async def GetTicket(
        self, request: pb.GetTicketRequest, context: Context
    ) -> pb.GetTicketResponse:
        ticket, _ = await self.mm.get_ticket(request.ticket_id)
        return pb.GetTicketResponse(ticket=ticket)

    async def WatchTicket(
        self, request: pb.WatchTicketRequest, context: Context
    ) -> AsyncIterator[pb.WatchTicketResponse]:
        async for ticket in self.mm.watch_ticket(request.ticket_id):
            yield pb.WatchTicketResponse(ticket=ticket)

    async def CancelTicket(
        self, request: pb.CancelTicketRequest, context: Context
    ) -> pb.CancelTicketResponse:
        return pb.CancelTicketResponse(ticket=await self.mm.cancel_ticket(request.ticket_id))

    async def ListQueues(
        self, request: pb.ListQueuesRequest, context: Context
    ) -> pb.ListQueuesResponse:
        return pb.ListQueuesResponse(queues=self.mm.queue_stats(request.game))

    async def GetRating(
        self, request: pb.GetRatingRequest, context: Context
    ) -> pb.GetRatingResponse:
        rating = await self.mm.get_rating(request.player_id, request.game)
        return pb.GetRatingResponse(rating=rating)
