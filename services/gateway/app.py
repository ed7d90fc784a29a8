"""The browser gateway as one ASGI application: the four services over Connect and gRPC-Web
(services/gateway/forward.py), the standard health check, CORS for the platform's own
origin, and the web app's static files at `/`.

Why a gateway rather than Connect inside each service: the gRPC services keep one
implementation of auth, limits and error codes, and the gateway holds no key, no NATS
identity and no state: it decides nothing (docs/architecture.md, "Browsers: a gateway").
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext
from connectrpc.server import Endpoint
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from boulevard.api.v1 import dice_pb2, engine_pb2, ledger_pb2, matchmaking_pb2
from boulevard.contract import routing
from boulevard.platform.replicas import down_last, game_id_of
from services.gateway.forward import (
    ChannelFor,
    ForwardingApplication,
    Routes,
    connect_error,
    endpoints,
    forwarded_metadata,
)
from services.gateway.metrics import instrumented
from services.gateway.settings import SERVICES, GatewaySettings

# Each service's proto, by the name `boulevard up` and the settings use.
PROTO_SERVICES: Mapping[str, ServiceDescriptor] = {
    "matchmaking": matchmaking_pb2.DESCRIPTOR.services_by_name["MatchmakingService"],
    "engine": engine_pb2.DESCRIPTOR.services_by_name["EngineService"],
    "dice": dice_pb2.DESCRIPTOR.services_by_name["DiceService"],
    "ledger": ledger_pb2.DESCRIPTOR.services_by_name["LedgerService"],
}
HEALTH = health_pb2.DESCRIPTOR.services_by_name["Health"]

# What the browser may send and read across origins (Connect's and gRPC-Web's own headers).
ALLOWED_HEADERS = (
    "authorization",
    "content-type",
    "connect-protocol-version",
    "connect-timeout-ms",
    "connect-accept-encoding",
    "connect-content-encoding",
    "grpc-timeout",
    "grpc-accept-encoding",
    "grpc-encoding",
    "x-grpc-web",
    "x-user-agent",
    "traceparent",
    "tracestate",
)
EXPOSED_HEADERS = (
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
    "grpc-encoding",
    "content-encoding",
    "connect-content-encoding",
)

PLACEHOLDER = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Boulevard</title></head>
<body><h1>Boulevard</h1>
<p>The web app is not built in this copy of Boulevard: <code>make web</code> builds it into
<code>libs/boulevard/web/static/</code>. The APIs are served here all the same, over Connect and
gRPC-Web (docs/clients.md, "From a browser").</p></body></html>
"""


class Backends:
    """One gRPC channel per backend address, made on first use and closed on shutdown."""

    def __init__(self, settings: GatewaySettings) -> None:
        self.settings = settings
        self._channels: dict[str, grpc.aio.Channel] = {}

    def channel(self, service: str) -> grpc.aio.Channel:
        """The channel of `service`'s (first) address."""
        return self._channel_to(self.settings.targets_of(service)[0])

    def engine_channels(self, request: Message) -> list[grpc.aio.Channel]:
        """The engine replicas' channels in the order to try them for `request`: by its game
        id when it has one (boulevard.contract.routing, so a game's calls reach the replica
        that holds it warm), else in the configured order; replicas whose channel is in
        TRANSIENT_FAILURE (down, as far as gRPC knows) go last, so a stopped owner costs its
        games a cold load on the next replica, not a failed call each."""
        targets = self.settings.targets_of("engine")
        game_id = game_id_of(request)
        order = routing.ranked(game_id, targets) if game_id and len(targets) > 1 else targets
        return down_last([self._channel_to(t) for t in order])

    def _channel_to(self, target: str) -> grpc.aio.Channel:
        if target not in self._channels:
            s = self.settings
            # Responses as large as the services send (a Reconcile of a long game).
            options = [("grpc.max_receive_message_length", s.grpc_max_send_bytes)]
            if s.tls_ca_file is not None:
                credentials = grpc.ssl_channel_credentials(s.tls_ca_file.read_bytes())
                self._channels[target] = grpc.aio.secure_channel(target, credentials, options)
            else:
                self._channels[target] = grpc.aio.insecure_channel(target, options)
        return self._channels[target]

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            await channel.close()


def health_endpoints(backends: Backends) -> Routes:
    """`grpc.health.v1.Health`: `Check` of a service name (`boulevard.v1.EngineService`)
    asks that service; of "" (the whole platform) asks every service and says SERVING only
    when all four do. `Watch` follows one named service."""
    by_name = {desc.full_name: name for name, desc in PROTO_SERVICES.items()}

    def backend_of(request: Message) -> str:
        assert isinstance(request, health_pb2.HealthCheckRequest)
        if request.service not in by_name:
            raise ConnectError(Code.NOT_FOUND, f"no service named {request.service!r} here")
        return by_name[request.service]

    async def one(name: str) -> int:
        stub = health_pb2_grpc.HealthStub(backends.channel(name))
        try:
            reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=2.0)
        except grpc.aio.AioRpcError:
            down: int = health_pb2.HealthCheckResponse.NOT_SERVING
            return down
        status: int = reply.status
        return status

    async def check(request: Message, ctx: RequestContext[Message, Message]) -> Message:
        assert isinstance(request, health_pb2.HealthCheckRequest)
        metadata = forwarded_metadata(ctx)
        if request.service == "":
            statuses = await asyncio.gather(*(one(name) for name in SERVICES))
            serving = all(s == health_pb2.HealthCheckResponse.SERVING for s in statuses)
            whole: Message = health_pb2.HealthCheckResponse(
                status=health_pb2.HealthCheckResponse.SERVING
                if serving
                else health_pb2.HealthCheckResponse.NOT_SERVING
            )
            return whole
        stub = health_pb2_grpc.HealthStub(backends.channel(backend_of(request)))
        try:
            reply: Message = await stub.Check(request, metadata=metadata, timeout=2.0)
        except grpc.aio.AioRpcError as exc:
            raise connect_error(exc) from None
        return reply

    async def watch(
        request: Message, ctx: RequestContext[Message, Message]
    ) -> AsyncIterator[Message]:
        assert isinstance(request, health_pb2.HealthCheckRequest)
        if request.service == "":
            raise ConnectError(
                Code.INVALID_ARGUMENT,
                "Watch follows one service: name it (e.g. boulevard.v1.EngineService)",
            )
        stub = health_pb2_grpc.HealthStub(backends.channel(backend_of(request)))
        call = stub.Watch(request, metadata=forwarded_metadata(ctx))
        try:
            async for item in call:
                yield item
        except grpc.aio.AioRpcError as exc:
            raise connect_error(exc) from None
        finally:
            call.cancel()

    routes = endpoints(HEALTH, lambda _request: [backends.channel("engine")])
    check_path, watch_path = f"/{HEALTH.full_name}/Check", f"/{HEALTH.full_name}/Watch"
    routes[check_path] = Endpoint.unary(routes[check_path].method, check)
    routes[watch_path] = Endpoint.server_stream(routes[watch_path].method, watch)
    return routes


class OriginGuard:
    """Refuses (403) a call whose `Origin` is not one of the allowed ones.

    CORS alone only tells a browser not to let a foreign page read the answer; a call that
    needs no preflight (a Connect GET) would still run. Calls from outside a browser send
    no Origin and pass: they are authenticated by their bearer token like gRPC calls."""

    def __init__(self, app: ASGIApp, allowed: tuple[str, ...]) -> None:
        self.app = app
        self.allowed = frozenset(allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            origin = dict(scope.get("headers", ())).get(b"origin")
            if origin is not None and origin.decode("latin-1") not in self.allowed:
                response = PlainTextResponse("origin not allowed", status_code=403)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _web_routes(web_dir: Path) -> list[BaseRoute]:
    if (web_dir / "index.html").is_file():
        return [Mount("/", StaticFiles(directory=web_dir, html=True), name="web")]

    async def placeholder(_request: Request) -> Response:
        return HTMLResponse(PLACEHOLDER)

    return [Route("/", placeholder)]


def _channels_for(backends: Backends, service: str) -> ChannelFor:
    """Where `service`'s requests go: the engine's by game id over its replicas, every other
    service's to its one channel."""
    if service == "engine":
        return backends.engine_channels

    def channel_for(_request: Message) -> list[grpc.aio.Channel]:
        return [backends.channel(service)]

    return channel_for


def build_app(settings: GatewaySettings, port: int | None = None) -> Starlette:
    """The gateway's ASGI application. `port` is the one it listens on, when not the
    configured one (0 there: any free port), for its own origin."""
    backends = Backends(settings)
    read_max = settings.grpc_max_receive_bytes  # the services' own request size limit
    routes: list[BaseRoute] = []
    for name, service in PROTO_SERVICES.items():
        forwarded = instrumented(endpoints(service, _channels_for(backends, name)))
        app = ForwardingApplication(service, forwarded, read_max_bytes=read_max)
        routes.append(Mount(app.path, app=app))
    health = ForwardingApplication(
        HEALTH, instrumented(health_endpoints(backends)), read_max_bytes=read_max
    )
    routes.append(Mount(health.path, app=health))
    routes += _web_routes(settings.web_dir())

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        await backends.close()

    allowed = settings.allowed_origins(port)
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[
            Middleware(
                CORSMiddleware,
                allow_origins=allowed,
                allow_methods=("GET", "POST"),
                allow_headers=ALLOWED_HEADERS,
                expose_headers=EXPOSED_HEADERS,
                max_age=7200,
            ),
            Middleware(OriginGuard, allowed=allowed),
        ],
    )
