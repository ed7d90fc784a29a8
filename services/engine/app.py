"""Wiring of the engine: NATS streams, the event store, the gRPC servicer."""

from __future__ import annotations

import grpc
from nats.aio.client import Client as NATS

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.eventlog.jetstream import JetStreamEventStore
from boulevard.messaging.streams import ensure_stream, platform_streams
from boulevard.platform.settings import Settings
from services.engine.server import EngineServicer


class EngineApp:
    name = "engine"
    service_names = (engine_pb2.DESCRIPTOR.services_by_name["EngineService"].full_name,)

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store: JetStreamEventStore | None = None

    async def start(self, nc: NATS) -> None:
        await ensure_stream(nc.jetstream(), platform_streams(self.settings)["games"])
        self.store = JetStreamEventStore(
            nc, self.settings.games_stream, self.settings.games_subject_prefix
        )

    def register(self, server: grpc.aio.Server) -> None:
        engine_pb2_grpc.add_EngineServiceServicer_to_server(EngineServicer(), server)

    async def stop(self) -> None:
        self.store = None
