"""A typed async client of the matchmaking service (what client apps and bots import).

    async with MatchmakingClient("127.0.0.1:50051", token=alices_jwt) as mm:
        ticket = await mm.create_ticket("lords_of_vegas", 2, 4)
        assigned = await mm.wait_for_assignment(ticket.ticket_id)
        # assigned.game_id, assigned.seat, assigned.player_token -> the engine;
        # sign each move with mm.key (boulevard.seats.signing.signed_submit)

`token` is the player's bearer JWT (`boulevard login alice` prints one for development); the
player id is its subject. Player tokens expire: `get_ticket` returns a fresh one.

gRPC errors come back as `grpc.aio.AioRpcError` with the precise status the service chose
(see docs/matchmaking.md).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from types import TracebackType

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, matchmaking_pb2_grpc
from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.audit.signing import SigningKey
from boulevard.contract.clocks import ClockRequest, time_control_to_proto
from boulevard.fairness import client_seed_commitment
from boulevard.games import get_game
from boulevard.platform import tls
from boulevard.platform.identity import bearer
from boulevard.seats.player import Chooser, SeatPlayer, new_client_seed, reveal_seed

FINAL = (pb.TICKET_STATUS_ASSIGNED, pb.TICKET_STATUS_CANCELLED, pb.TICKET_STATUS_EXPIRED)


class TicketNotAssigned(Exception):
    """The ticket ended cancelled or expired instead of assigned."""

    def __init__(self, ticket: pb.Ticket) -> None:
        super().__init__(
            f"ticket {ticket.ticket_id} ended {pb.TicketStatus.Name(ticket.status)}"
            + (f": {ticket.status_reason}" if ticket.status_reason else "")
        )
        self.ticket = ticket


class MatchmakingClient:
    def __init__(
        self,
        address: str,
        timeout: float = 10.0,
        key: SigningKey | None = None,
        tls_ca_file: Path | str | None = None,
        *,
        token: str = "",
    ) -> None:
        """`tls_ca_file`: verify the server's TLS certificate with this CA (default:
        BOULEVARD_TLS_CA_FILE; plaintext when neither is set). `token`: the player's bearer
        JWT, sent with every call."""
        self.address = address
        self.timeout = timeout
        self.metadata = bearer(token) if token else ()
        # The player's move-signing key: its public half goes on every ticket, so the seat
        # it gets is bound to it; keep it (key.seed) to play the game. Made when not given.
        self.key = key or SigningKey.generate()
        self._channel = tls.channel(address, tls_ca_file)
        self._stub = matchmaking_pb2_grpc.MatchmakingServiceStub(self._channel)
        self._seeds: dict[str, str] = {}  # ticket id -> the client seed committed to

    async def __aenter__(self) -> MatchmakingClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._channel.close()

    async def create_ticket(
        self,
        game: str,
        min_seats: int = 0,
        max_seats: int = 0,
        *,
        client_seed: str | None = None,
        bot_fill_after_seconds: int = 0,
        request_id: str | None = None,
        public_key: str = "",
        time_control: ClockRequest = None,
    ) -> pb.Ticket:
        """Queue for a game. Without a request id one is made, so retrying this call (not
        the whole function) is safe; pass your own to retry across restarts. The ticket is
        for the player the client's token names.

        Only the SHA-256 commitment of `client_seed` is sent (a fresh seed is made when
        none is given); the client keeps the seed (`seed_for(ticket_id)`) and reveals it to
        the engine once the game exists (`reveal_seed`). A ticket matches only tickets
        with the same `time_control` (None: no clock; a ClockKind: the game's default
        of that kind, resolved by matchmaking)."""
        seed = client_seed if client_seed is not None else new_client_seed()
        request = pb.CreateTicketRequest(
            request_id=request_id if request_id is not None else uuid.uuid4().hex,
            game=game,
            min_seats=min_seats,
            max_seats=max_seats,
            client_seed_commitment=client_seed_commitment(seed),
            bot_fill_after_seconds=bot_fill_after_seconds,
            public_key=public_key or self.key.public_hex,
        )
        if time_control is not None:
            request.time_control.CopyFrom(time_control_to_proto(time_control))
        reply: pb.CreateTicketResponse = await self._stub.CreateTicket(
            request, timeout=self.timeout, metadata=self.metadata
        )
        self._seeds[reply.ticket.ticket_id] = seed
        return reply.ticket

    def seed_for(self, ticket_id: str) -> str:
        """The client seed this client committed to for one of its tickets."""
        return self._seeds[ticket_id]

    async def reveal_seed(
        self, engine: engine_pb2_grpc.EngineServiceStub, ticket: pb.Ticket
    ) -> engine_pb2.RevealSeedResponse:
        """Reveal the seed of an assigned ticket to the engine (its game waits for it)."""
        return await reveal_seed(
            engine, ticket.game_id, ticket.player_token, self.seed_for(ticket.ticket_id)
        )

    async def get_ticket(self, ticket_id: str) -> pb.Ticket:
        reply: pb.GetTicketResponse = await self._stub.GetTicket(
            pb.GetTicketRequest(ticket_id=ticket_id), timeout=self.timeout, metadata=self.metadata
        )
        return reply.ticket

    async def cancel_ticket(self, ticket_id: str) -> pb.Ticket:
        reply: pb.CancelTicketResponse = await self._stub.CancelTicket(
            pb.CancelTicketRequest(ticket_id=ticket_id),
            timeout=self.timeout,
            metadata=self.metadata,
        )
        return reply.ticket

    async def watch_ticket(self, ticket_id: str) -> AsyncIterator[pb.Ticket]:
        """The ticket now, then each status change, until it is final."""
        call = self._stub.WatchTicket(
            pb.WatchTicketRequest(ticket_id=ticket_id), metadata=self.metadata
        )
        async for update in call:
            yield update.ticket

    async def wait_for_assignment(self, ticket_id: str) -> pb.Ticket:
        """The assigned ticket (game id, seat, player token); TicketNotAssigned if it ends
        cancelled or expired."""
        last: pb.Ticket | None = None
        async for ticket in self.watch_ticket(ticket_id):
            last = ticket
            if ticket.status in FINAL:
                break
        if last is None or last.status not in FINAL:
            last = await self.get_ticket(ticket_id)
        if last.status != pb.TICKET_STATUS_ASSIGNED:
            raise TicketNotAssigned(last)
        return last

    async def join(
        self,
        game: str,
        seats: int,
        *,
        bot_fill_after_seconds: int = 0,
        time_control: ClockRequest = None,
    ) -> pb.Ticket:
        """Queue (as the player the client's token names) for a table of `seats` and wait
        for the seat: the assigned ticket. With `bot_fill_after_seconds`, bots take the
        seats nobody took by then."""
        ticket = await self.create_ticket(
            game,
            seats,
            seats,
            bot_fill_after_seconds=bot_fill_after_seconds,
            time_control=time_control,
        )
        return await self.wait_for_assignment(ticket.ticket_id)

    def seat_player(
        self,
        engine: engine_pb2_grpc.EngineServiceStub,
        ticket: pb.Ticket,
        *,
        choose: Chooser | None = None,
        bot: str = "heuristic",
    ) -> SeatPlayer:
        """The player of an assigned ticket's seat: everything this client made for the
        ticket goes with it, so an app plays the seat without knowing what a seat needs.
        `choose` lets a person pick the moves; without it the game's `bot` plays."""
        game = get_game(ticket.game)
        return SeatPlayer(
            engine,
            ticket.game_id,
            game.name,
            ticket.seat,
            ticket.player_token,
            game.bots[bot],
            random.Random(f"{ticket.game_id}:{ticket.seat}"),
            self.key,  # the key whose public half this client put on its tickets
            choose=choose,
            renew=lambda: self.fresh_player_token(ticket.ticket_id),
            client_seed=self._seeds.get(ticket.ticket_id),  # revealed before the first move
        )

    async def fresh_player_token(self, ticket_id: str) -> str:
        """A new player token for an assigned ticket (what to do when the engine says the
        old one expired)."""
        ticket = await self.get_ticket(ticket_id)
        if ticket.status != pb.TICKET_STATUS_ASSIGNED:
            raise TicketNotAssigned(ticket)
        return ticket.player_token

    async def list_queues(self, game: str = "") -> list[pb.QueueStats]:
        reply: pb.ListQueuesResponse = await self._stub.ListQueues(
            pb.ListQueuesRequest(game=game), timeout=self.timeout
        )
        return list(reply.queues)

    async def get_rating(self, player_id: str, game: str) -> pb.PlayerRating:
        reply: pb.GetRatingResponse = await self._stub.GetRating(
            pb.GetRatingRequest(player_id=player_id, game=game), timeout=self.timeout
        )
        return reply.rating
