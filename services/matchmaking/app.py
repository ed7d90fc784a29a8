"""Wiring of matchmaking: its stream and the gRPC servicer."""

from __future__ import annotations

import grpc
from nats.aio.client import Client as NATS

from boulevard.api.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from boulevard.messaging.streams import ensure_stream, platform_streams
from boulevard.platform.settings import Settings
from services.matchmaking.server import MatchmakingServicer


class MatchmakingApp:
    name = "matchmaking"
    service_names = (
        matchmaking_pb2.DESCRIPTOR.services_by_name["MatchmakingService"].full_name,
    )

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    async def start(self, nc: NATS) -> None:
        await ensure_stream(nc.jetstream(), platform_streams(self.settings)["matchmaking"])

    def register(self, server: grpc.aio.Server) -> None:
        matchmaking_pb2_grpc.add_MatchmakingServiceServicer_to_server(
            MatchmakingServicer(), server
        )

    async def stop(self) -> None:
        pass
