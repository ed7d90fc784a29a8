"""A small real gRPC server on loopback standing in for one engine replica, for the tests of
routing over replicas (the SDK's and CLI's channel, the gateway, matchmaking's bots): each
answer names the replica that gave it, so a test sees which one each call reached.

    async with running(Replica(), Replica()) as replicas:
        ...  # replicas[0].address, replicas[1].asked, replicas[0].stop()
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import grpc

from boulevard.api.v1 import engine_pb2, events_pb2
from boulevard.messaging.server import free_port

SERVICE = "boulevard.v1.EngineService"
REFUSED = "refused-game"  # GetGame of this id: the replica answers UNAVAILABLE itself


class Replica:
    """A gRPC server of three EngineService methods, each answering with its own address:

    - GetGame: the game, `game` set to the address and finished (so matchmaking's bots have
      nothing more to do for it); of the game `REFUSED`, UNAVAILABLE from the replica itself
      (its NATS is down, say). Every game id asked for is kept in `asked`.
    - ListGames: `next_page_token` set to the address.
    - WatchGame: events from the requested version on, `game_id` set to the address; `hold`
      of them, then the stream stays open with nothing more to say. The `from_version` of
      each watch is kept in `watches`, and `watching` counts the streams open now (a stream
      the client cancelled is no longer counted)."""

    def __init__(self, hold: int = 1_000) -> None:
        self.address = f"127.0.0.1:{free_port()}"
        self.hold = hold
        self.asked: list[str] = []
        self.watches: list[int] = []
        self.watching = 0
        self._watching_changed = asyncio.Event()
        self.server: grpc.aio.Server | None = None

    async def start(self) -> None:
        name = self.address

        async def get_game(
            request: engine_pb2.GetGameRequest, ctx: grpc.aio.ServicerContext
        ) -> engine_pb2.GetGameResponse:
            self.asked.append(request.game_id)
            if request.game_id == REFUSED:
                await ctx.abort(grpc.StatusCode.UNAVAILABLE, f"{name}: the event store is down")
            return engine_pb2.GetGameResponse(
                game_id=request.game_id, game=name, status=engine_pb2.GAME_STATUS_FINISHED
            )

        async def list_games(
            _request: engine_pb2.ListGamesRequest, _ctx: grpc.aio.ServicerContext
        ) -> engine_pb2.ListGamesResponse:
            return engine_pb2.ListGamesResponse(next_page_token=name)

        async def watch_game(
            request: engine_pb2.WatchGameRequest, _ctx: grpc.aio.ServicerContext
        ) -> AsyncIterator[engine_pb2.WatchGameResponse]:
            self.watches.append(request.from_version)
            self._count_watch(+1)
            try:
                first = max(request.from_version, 1)
                for version in range(first, first + self.hold):
                    event = events_pb2.EventEnvelope(version=version, type="Tick", game_id=name)
                    yield engine_pb2.WatchGameResponse(events=[event])
                await asyncio.Event().wait()  # open, with nothing more to say
            finally:
                self._count_watch(-1)  # the client cancelled, or the server stopped

        unary = grpc.unary_unary_rpc_method_handler
        handler = grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "GetGame": unary(
                    get_game,
                    request_deserializer=engine_pb2.GetGameRequest.FromString,
                    response_serializer=engine_pb2.GetGameResponse.SerializeToString,
                ),
                "ListGames": unary(
                    list_games,
                    request_deserializer=engine_pb2.ListGamesRequest.FromString,
                    response_serializer=engine_pb2.ListGamesResponse.SerializeToString,
                ),
                "WatchGame": grpc.unary_stream_rpc_method_handler(
                    watch_game,
                    request_deserializer=engine_pb2.WatchGameRequest.FromString,
                    response_serializer=engine_pb2.WatchGameResponse.SerializeToString,
                ),
            },
        )
        self.server = grpc.aio.server()
        self.server.add_generic_rpc_handlers((handler,))
        self.server.add_insecure_port(self.address)
        await self.server.start()

    def _count_watch(self, change: int) -> None:
        self.watching += change
        self._watching_changed.set()
        self._watching_changed = asyncio.Event()

    async def until_watching(self, count: int, within: float = 5.0) -> None:
        """Wait until `count` WatchGame streams are open; TimeoutError after `within` s."""
        async with asyncio.timeout(within):
            while self.watching != count:
                await self._watching_changed.wait()

    async def stop(self) -> None:
        """Stop at once, cutting open streams (as a replica that is killed)."""
        if self.server is not None:
            await self.server.stop(grace=None)
            self.server = None


@contextlib.asynccontextmanager
async def running(*replicas: Replica) -> AsyncIterator[list[Replica]]:
    """`replicas` started, and stopped on the way out (those still running)."""
    try:
        for r in replicas:
            await r.start()
        yield list(replicas)
    finally:
        for r in replicas:
            await r.stop()
