"""The one way every service runs: connect NATS, start the app, serve gRPC with health,
reflection and error mapping, and on SIGTERM/SIGINT drain and stop cleanly.

A service is an `App`: it starts on a NATS connection, registers its servicers, and stops.
Health says SERVING only once NATS is connected and the app has started, and flips to
NOT_SERVING first thing on shutdown so load balancers stop sending new calls.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Sequence
from typing import Protocol

import grpc
import nats
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from nats.aio.client import Client as NATS

from boulevard.platform.grpc_errors import ErrorInterceptor
from boulevard.platform.logging import configure_logging
from boulevard.platform.settings import Settings

log = structlog.get_logger(__name__)


class App(Protocol):
    name: str  # short name: "engine", "dice", …
    service_names: Sequence[str]  # full proto names, for health and reflection

    async def start(self, nc: NATS) -> None: ...
    def register(self, server: grpc.aio.Server) -> None: ...
    async def stop(self) -> None: ...


async def connect_nats(settings: Settings, name: str) -> NATS:
    nc: NATS | None = None

    async def on_disconnect() -> None:
        if nc is not None and not (nc.is_closed or nc.is_draining):
            log.warning("nats disconnected")

    async def on_reconnect() -> None:
        log.info("nats reconnected")

    async def on_error(exc: Exception) -> None:
        log.warning("nats error", error=str(exc))

    nc = await nats.connect(
        settings.nats_url,
        name=f"boulevard-{name}",
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.5,
        connect_timeout=5,
        # Bounded here, inside nats-py, which then cleans up after itself: cancelling a
        # drain from outside leaves its gathered futures unretrieved (a traceback on stop).
        drain_timeout=max(settings.shutdown_grace_seconds, 0.1),
        disconnected_cb=on_disconnect,
        reconnected_cb=on_reconnect,
        error_cb=on_error,
    )
    return nc


class RunningService:
    """A started service; `stop()` drains it. Tests start services in-process with this."""

    def __init__(
        self,
        app: App,
        settings: Settings,
        server: grpc.aio.Server,
        health_servicer: health.aio.HealthServicer,
        nc: NATS,
        port: int,
    ) -> None:
        self.app = app
        self.settings = settings
        self.server = server
        self.health = health_servicer
        self.nc = nc
        self.port = port

    @property
    def address(self) -> str:
        return f"{self.settings.grpc_host}:{self.port}"

    async def stop(self) -> None:
        for name in ("", *self.app.service_names):
            await self.health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.server.stop(self.settings.shutdown_grace_seconds)
        try:
            await asyncio.wait_for(self.app.stop(), self.settings.shutdown_grace_seconds)
        except TimeoutError:
            log.warning("the app did not stop in time", service=self.app.name)
        if not self.nc.is_closed:
            # Drain flushes what we published; nats-py bounds it (drain_timeout above), so
            # a stuck subscription cannot keep a stopping process alive.
            try:
                await self.nc.drain()
            except Exception as exc:  # a timed-out or failed drain: close all the same
                log.warning("nats drain failed; closing", service=self.app.name, error=repr(exc))
            if not self.nc.is_closed:
                await self.nc.close()
        log.info("stopped", service=self.app.name)


async def start_service(app: App, settings: Settings, port: int | None = None) -> RunningService:
    nc = await connect_nats(settings, app.name)
    try:
        await app.start(nc)
    except BaseException:
        await nc.close()
        raise
    server = grpc.aio.server(interceptors=[ErrorInterceptor()])
    app.register(server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (*app.service_names, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    wanted = settings.port_of(app.name) if port is None else port
    bound = server.add_insecure_port(f"{settings.grpc_host}:{wanted}")
    await server.start()
    for name in ("", *app.service_names):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    log.info("serving", service=app.name, address=f"{settings.grpc_host}:{bound}")
    return RunningService(app, settings, server, health_servicer, nc, bound)


async def serve(app: App, settings: Settings) -> None:
    """Run until SIGTERM or SIGINT, then drain in-flight calls and close NATS."""
    configure_logging(settings.log_level, settings.log_format)
    structlog.contextvars.bind_contextvars(service=app.name)
    running = await start_service(app, settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting down", service=app.name)
    await running.stop()
