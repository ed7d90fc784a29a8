"""The gateway's Prometheus metrics (defined with the others in boulevard.platform.metrics):
each endpoint's function wrapped so a call is counted by procedure, protocol and the code it
ended with, a server stream is counted open while it runs, and a unary call is timed.

What is counted is what reaches an endpoint: a request refused before it (a foreign origin,
a body over the size limit, an unknown path) is answered by HTTP and not counted here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.method import StreamType
from connectrpc.request import RequestContext
from connectrpc.server import Endpoint
from google.protobuf.message import Message

from boulevard.platform.metrics import (
    GATEWAY_FORWARD_SECONDS,
    GATEWAY_REQUESTS,
    GATEWAY_STREAMS_OPEN,
)
from services.gateway.forward import Routes


def protocol_of(ctx: RequestContext[Any, Any]) -> str:
    """`grpc-web`, `grpc` or `connect`, from the request's content type (a Connect GET has
    none)."""
    content_type = (ctx.request_headers.get("content-type") or "").lower()
    if content_type.startswith("application/grpc-web"):
        return "grpc-web"
    if content_type.startswith("application/grpc"):
        return "grpc"
    return "connect"


def code_of(failed: BaseException | None) -> str:
    """The code the caller sees for how the endpoint ended (connectrpc's own mapping: a
    caller that went away is CANCELED, any other exception UNKNOWN)."""
    if failed is None:
        return "OK"
    if isinstance(failed, ConnectError):
        return failed.code.name
    if isinstance(failed, asyncio.CancelledError | GeneratorExit):
        # The caller went away: a stream's generator is closed (GeneratorExit) or its task
        # cancelled.
        return Code.CANCELED.name
    return Code.UNKNOWN.name


def _unary(endpoint: Any, procedure: str) -> Endpoint[Message, Message]:
    function = endpoint.function

    async def counted(request: Message, ctx: RequestContext[Message, Message]) -> Message:
        protocol, start, failed = protocol_of(ctx), time.perf_counter(), None
        try:
            response: Message = await function(request, ctx)
            return response
        except BaseException as exc:
            failed = exc
            raise
        finally:
            GATEWAY_FORWARD_SECONDS.labels(procedure, protocol).observe(time.perf_counter() - start)
            GATEWAY_REQUESTS.labels(procedure, protocol, code_of(failed)).inc()

    return Endpoint.unary(endpoint.method, counted)


def _server_stream(endpoint: Any, procedure: str) -> Endpoint[Message, Message]:
    function = endpoint.function

    async def counted(
        request: Message, ctx: RequestContext[Message, Message]
    ) -> AsyncIterator[Message]:
        protocol, failed = protocol_of(ctx), None
        open_streams = GATEWAY_STREAMS_OPEN.labels(procedure, protocol)
        open_streams.inc()
        try:
            # aclosing: when the browser goes away, the forwarding generator is closed now
            # (ending its gRPC call and freeing the service's stream slot), not when collected.
            async with aclosing(function(request, ctx)) as items:
                async for item in items:
                    yield item
        except BaseException as exc:
            failed = exc
            raise
        finally:
            open_streams.dec()
            GATEWAY_REQUESTS.labels(procedure, protocol, code_of(failed)).inc()

    return Endpoint.server_stream(endpoint.method, counted)


def instrumented(routes: Routes) -> Routes:
    """`routes` with every unary and server-stream endpoint counted (the procedure label is
    the path without its leading slash: `boulevard.v1.EngineService/GetGame`)."""
    out: Routes = {}
    for path, endpoint in routes.items():
        procedure = path.lstrip("/")
        # connectrpc does not export its endpoint classes: the method says which kind it is.
        kind = endpoint.method.stream_type
        if kind is StreamType.UNARY:
            out[path] = _unary(endpoint, procedure)
        elif kind is StreamType.SERVER_STREAM:
            out[path] = _server_stream(endpoint, procedure)
        else:
            raise TypeError(f"{path}: the gateway forwards only unary and server streams")
    return out
