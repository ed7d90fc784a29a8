"""The one way every service runs: connect NATS, start the app, serve gRPC with health,
reflection and error mapping, and on SIGTERM/SIGINT drain and stop cleanly.

A service is an `App`: it starts on a NATS connection, registers its servicers, and stops.
Health says SERVING only once NATS is connected and the app has started, and flips to
NOT_SERVING first thing on shutdown so load balancers stop sending new calls.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

import grpc
import nats
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from nats.aio.client import Client as NATS

from boulevard.messaging.identities import inbox_prefix
from boulevard.platform import metrics, tracing
from boulevard.platform.interceptor import server_interceptors
from boulevard.platform.logging import configure_logging
from boulevard.platform.settings import Settings
from boulevard.platform.tls import client_ssl_context, nats_tls_url, server_credentials

log = structlog.get_logger(__name__)


class App(Protocol):
    name: str  # short name: "engine", "dice", …
    service_names: Sequence[str]  # full proto names, for health and reflection

    async def start(self, nc: NATS) -> None: ...
    def register(self, server: grpc.aio.Server) -> None: ...
    async def stop(self) -> None: ...


async def connect_nats(
    settings: Settings,
    name: str,
    on_state: Callable[[bool], Awaitable[None]] | None = None,
) -> NATS:
    """Connect to NATS as the identity `name` (a service's name; docs/security.md), and
    reconnect forever; `on_state(False)` when the connection is lost and `on_state(True)`
    when it is back. Every service connects through here; NATS has no anonymous user."""
    seed = settings.nats_seed(name)
    nc: NATS | None = None
    # Exported from the start (as 0), so a dashboard shows "none yet", not "no data".
    metrics.NATS_RECONNECTS.labels(name)
    metrics.NATS_DISCONNECTS.labels(name)

    async def on_disconnect() -> None:
        metrics.NATS_DISCONNECTS.labels(name).inc()
        if nc is not None and not (nc.is_closed or nc.is_draining):
            log.warning("nats disconnected")
            if on_state is not None:
                await on_state(False)

    async def on_reconnect() -> None:
        metrics.NATS_RECONNECTS.labels(name).inc()
        log.info("nats reconnected")
        if on_state is not None:
            await on_state(True)

    async def on_error(exc: Exception) -> None:
        log.warning("nats error", error=str(exc))

    url, tls = settings.nats_url, None
    if settings.tls_ca_file is not None:
        # With a CA configured, NATS is TLS or nothing: no silent plaintext fallback.
        url, tls = nats_tls_url(url), client_ssl_context(settings.tls_ca_file)
    nc = await nats.connect(
        # A cluster: every server, comma-separated; the client fails over between them.
        url.split(",") if "," in url else url,
        tls=tls,
        name=f"boulevard-{name}",
        nkeys_seed_str=seed,
        inbox_prefix=inbox_prefix(name),  # the only inbox this identity may subscribe to
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.5,
        connect_timeout=5,
        # A server that vanished without a TCP reset (its link down, its host frozen) is
        # noticed after 3 unanswered pings: 30 s, not nats-py's 2 x 120 s, during which
        # every request of the service times out (docs/operations.md, "Network faults").
        ping_interval=10,
        max_outstanding_pings=3,
        # Bounded here, inside nats-py, which then cleans up after itself: cancelling a
        # drain from outside leaves its gathered futures unretrieved (a traceback on stop).
        drain_timeout=max(settings.shutdown_grace_seconds, 0.1),
        disconnected_cb=on_disconnect,
        reconnected_cb=on_reconnect,
        error_cb=on_error,
    )
    return nc


class MeteredHealth(health.aio.HealthServicer):  # type: ignore[misc]  # grpc ships no types
    """The library health servicer; what it says for the whole server ("") is also the
    `boulevard_health_serving` gauge, whoever sets it."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self._gauge = metrics.HEALTH_SERVING.labels(service)
        self._gauge.set(0)

    async def set(self, service: str, status: health_pb2.HealthCheckResponse.ServingStatus) -> None:
        await super().set(service, status)
        if service == "":
            self._gauge.set(1 if status == health_pb2.HealthCheckResponse.SERVING else 0)


class NatsHealth:
    """Health follows NATS: NOT_SERVING while the connection is lost (every call that needs
    NATS would fail), SERVING again on reconnect — but only between start and stop."""

    def __init__(self, servicer: health.aio.HealthServicer, names: Sequence[str]) -> None:
        self.servicer = servicer
        self.names = ("", *names)
        self.nats_up = True
        self.serving = False  # set once the service has started, cleared on stop

    async def _publish(self) -> None:
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if self.serving and self.nats_up
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        for name in self.names:
            await self.servicer.set(name, status)

    async def nats_state(self, up: bool) -> None:
        self.nats_up = up
        if self.serving:
            await self._publish()

    async def set_serving(self, serving: bool) -> None:
        self.serving = serving
        await self._publish()


class RunningService:
    """A started service; `stop()` drains it. Tests start services in-process with this."""

    def __init__(
        self,
        app: App,
        settings: Settings,
        server: grpc.aio.Server,
        health_servicer: MeteredHealth,
        nc: NATS,
        port: int,
        nats_health: NatsHealth | None = None,
    ) -> None:
        self.app = app
        self.settings = settings
        self.server = server
        self.health = health_servicer
        self.nats_health = nats_health
        self.nc = nc
        self.port = port

    @property
    def address(self) -> str:
        return f"{self.settings.grpc_host}:{self.port}"

    async def stop(self) -> None:
        if self.nats_health is not None:
            self.nats_health.serving = False  # a reconnect while draining must not revive it
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
    metrics.current_service = app.name
    health_servicer = MeteredHealth(app.name)
    nats_health = NatsHealth(health_servicer, app.service_names)
    nc = await connect_nats(settings, app.name, nats_health.nats_state)
    try:
        await app.start(nc)
    except BaseException:
        await nc.close()
        raise
    server = grpc.aio.server(
        # Metrics outermost: it counts the status code the client finally sees. Then the
        # traces (none unless an OTLP endpoint is set), then the errors mapped (what the
        # edge checks raise among them), the edge, and UNAVAILABLE in time while NATS is
        # away: one wrapper per call without tracing (boulevard/platform/interceptor.py).
        interceptors=server_interceptors(app.name, lambda: nc.is_connected),
        options=[
            ("grpc.max_receive_message_length", settings.grpc_max_receive_bytes),
            ("grpc.max_send_message_length", settings.grpc_max_send_bytes),
            # Soft and hard limit equal: a header block is refused always or never, not at
            # random between the two (gRPC's behaviour when they differ).
            ("grpc.max_metadata_size", settings.grpc_max_metadata_bytes),
            ("grpc.absolute_max_metadata_size", settings.grpc_max_metadata_bytes),
        ],
    )
    app.register(server)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (*app.service_names, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    wanted = settings.port_of(app.name) if port is None else port
    listen = f"{settings.grpc_host}:{wanted}"
    if settings.tls_cert_file is not None and settings.tls_key_file is not None:
        credentials = server_credentials(settings.tls_cert_file, settings.tls_key_file)
        bound = server.add_secure_port(listen, credentials)
    else:
        bound = server.add_insecure_port(listen)
    await server.start()
    await nats_health.set_serving(True)
    tls = settings.tls_cert_file is not None
    log.info("serving", service=app.name, address=f"{settings.grpc_host}:{bound}", tls=tls)
    return RunningService(app, settings, server, health_servicer, nc, bound, nats_health)


async def serve(app: App, settings: Settings) -> None:
    """Run until SIGTERM or SIGINT, then drain in-flight calls and close NATS."""
    configure_logging(settings.log_level, settings.log_format)
    structlog.contextvars.bind_contextvars(service=app.name)
    metrics.HEALTH_SERVING.labels(app.name).set(0)
    tracer_provider = tracing.configure_tracing(app.name, settings.otlp_endpoint)
    wanted = settings.metrics_port_of(app.name)
    try:
        metrics_port = metrics.serve_metrics(settings.metrics_host, wanted)
    except OSError as exc:  # fail loudly: a service nobody can scrape is not observable
        raise SystemExit(
            f"{app.name}: cannot serve /metrics on {settings.metrics_host}:{wanted} ({exc}); "
            f"set BOULEVARD_{app.name.upper()}_METRICS_PORT to a free port"
        ) from exc
    log.info("metrics", address=f"http://{settings.metrics_host}:{metrics_port}/metrics")
    running = await start_service(app, settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting down", service=app.name)
    await running.stop()
    if tracer_provider is not None:
        tracer_provider.shutdown()  # flushes the spans still batched
