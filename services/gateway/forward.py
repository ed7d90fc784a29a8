"""Every RPC of a proto service, answered over Connect and gRPC-Web by calling the same RPC
on the service's gRPC channel.

The routes come from the proto descriptors (the generated `*_pb2` modules), not from a list
kept here: a method added to a `.proto` is forwarded as soon as the code is regenerated.
Nothing is decided here. The caller's bearer token goes on as gRPC metadata, the service
checks it, its limits and its rules, and its status code and message come back unchanged
(`Code` has the same names as gRPC's status codes); so browsers and gRPC clients meet one
implementation of auth, limits and errors.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import grpc
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.request import RequestContext
from connectrpc.server import ConnectASGIApplication, Endpoint
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from boulevard.platform.replicas import RoutedStream, may_try_next

# What a browser's request carries on to the service: who the caller is, and the trace it
# belongs to. Everything else (content-type, connect-*, cookies, user-agent…) is HTTP's.
FORWARDED_HEADERS = ("authorization", "traceparent", "tracestate")

# grpc.StatusCode → Connect's Code: the same names, except CANCELLED, which Connect spells
# with one L.
CODES: Mapping[grpc.StatusCode, Code] = {
    status: Code.CANCELED if status is grpc.StatusCode.CANCELLED else Code[status.name]
    for status in grpc.StatusCode
    if status is not grpc.StatusCode.OK
}

# Endpoints by URL path. connectrpc types the mapping with a union of endpoint classes it
# does not export, so the values are typed loosely here.
Routes = dict[str, Any]

# The channels that may answer one request, in the order to try them: most services have
# one; the engine's replicas come ordered by the request's game id (services/gateway/app.py).
ChannelFor = Callable[[Message], Sequence[grpc.aio.Channel]]


def forwarded_metadata(ctx: RequestContext[Any, Any]) -> tuple[tuple[str, str], ...]:
    """The request headers that go on to the service as gRPC metadata.

    gRPC metadata values are printable ASCII; a browser could send other bytes, which a gRPC
    client cannot. Such a token is no bearer token a service would accept, so it is refused
    here with the service's own answer to a bad token, UNAUTHENTICATED."""
    metadata: list[tuple[str, str]] = []
    for name in FORWARDED_HEADERS:
        for value in ctx.request_headers.getall(name):
            if not value.isascii() or not value.isprintable():
                raise ConnectError(
                    Code.UNAUTHENTICATED, f"the {name} header is not printable ASCII"
                )
            metadata.append((name, value))
    return tuple(metadata)


def _timeout(ctx: RequestContext[Any, Any]) -> float | None:
    """The caller's deadline (connect-timeout-ms or grpc-timeout), passed on as gRPC's."""
    remaining = ctx.timeout_ms
    return None if remaining is None else max(remaining, 0.0) / 1000.0


def connect_error(exc: grpc.aio.AioRpcError) -> ConnectError:
    """The service's status as Connect's error: same code, same message."""
    return ConnectError(CODES.get(exc.code(), Code.UNKNOWN), exc.details() or "")


def _method_info(method: MethodDescriptor) -> MethodInfo[Message, Message]:
    side_effects = method.GetOptions().idempotency_level
    return MethodInfo(
        name=method.name,
        service_name=method.containing_service.full_name,
        input=GetMessageClass(method.input_type),
        output=GetMessageClass(method.output_type),
        # NO_SIDE_EFFECTS (proto option idempotency_level) lets Connect serve it over GET.
        idempotency_level=IdempotencyLevel.NO_SIDE_EFFECTS
        if side_effects == method.GetOptions().NO_SIDE_EFFECTS
        else IdempotencyLevel.UNKNOWN,
        stream_type=StreamType.SERVER_STREAM if method.server_streaming else StreamType.UNARY,
    )


def _unary(method: MethodDescriptor, channel_for: ChannelFor) -> Endpoint[Message, Message]:
    info = _method_info(method)
    path = f"/{method.containing_service.full_name}/{method.name}"

    async def forward(request: Message, ctx: RequestContext[Message, Message]) -> Message:
        metadata, timeout = forwarded_metadata(ctx), _timeout(ctx)
        channels = channel_for(request)
        for i, channel in enumerate(channels):
            call = channel.unary_unary(
                path,
                request_serializer=type(request).SerializeToString,
                response_deserializer=info.output.FromString,
            )
            try:
                response: Message = await call(request, metadata=metadata, timeout=timeout)
            except grpc.aio.AioRpcError as exc:
                if i + 1 < len(channels) and may_try_next(exc, channel):
                    continue
                raise connect_error(exc) from None
            return response
        raise ConnectError(Code.UNAVAILABLE, "no backend to forward to")

    return Endpoint.unary(info, forward)


def _server_stream(method: MethodDescriptor, channel_for: ChannelFor) -> Endpoint[Message, Message]:
    info = _method_info(method)
    path = f"/{method.containing_service.full_name}/{method.name}"

    async def forward(
        request: Message, ctx: RequestContext[Message, Message]
    ) -> AsyncIterator[Message]:
        metadata, timeout = forwarded_metadata(ctx), _timeout(ctx)
        channels = channel_for(request)
        if not channels:
            raise ConnectError(Code.UNAVAILABLE, "no backend to forward to")

        def opener(channel: grpc.aio.Channel) -> Callable[[], Any]:
            multicallable = channel.unary_stream(
                path,
                request_serializer=type(request).SerializeToString,
                response_deserializer=info.output.FromString,
            )
            return functools.partial(multicallable, request, metadata=metadata, timeout=timeout)

        # The replicas' fallback is RoutedStream's (a stream that delivered something ends
        # here: the client resumes it). Closing its iterator when this generator closes (the
        # browser went away) cancels the gRPC call, so the service frees its watcher at once.
        stream = RoutedStream([(c, opener(c)) for c in channels])
        async with contextlib.aclosing(aiter(stream)) as items:
            try:
                async for item in items:
                    yield item
            except grpc.aio.AioRpcError as exc:
                raise connect_error(exc) from None

    return Endpoint.server_stream(info, forward)


def endpoints(service: ServiceDescriptor, channel_for: ChannelFor) -> Routes:
    """One endpoint per method of `service`, keyed by its URL path (`/pkg.Service/Method`).

    Client- and bidi-streaming methods are left out: browsers cannot stream requests over
    HTTP/1.1, and the only one (EngineService.SubmitActions, a test says so) is for gRPC
    clients; a browser submits with the unary SubmitAction."""
    routes: Routes = {}
    for method in service.methods:
        path = f"/{service.full_name}/{method.name}"
        if method.client_streaming:
            continue
        if method.server_streaming:
            routes[path] = _server_stream(method, channel_for)
        else:
            routes[path] = _unary(method, channel_for)
    return routes


class ForwardingApplication(ConnectASGIApplication[object]):
    """The ASGI application of one proto service: Connect, gRPC-Web (and gRPC where the
    server speaks HTTP/2 with trailers), every method forwarded."""

    def __init__(
        self,
        service: ServiceDescriptor,
        routes: Routes,
        *,
        read_max_bytes: int,
    ) -> None:
        self._path = f"/{service.full_name}"
        super().__init__(
            service=object(),
            endpoints=lambda _service: routes,
            read_max_bytes=read_max_bytes,
            codecs=google_codecs(),
        )

    @property
    def path(self) -> str:
        return self._path


def google_codecs() -> list[Any]:
    """Binary and JSON codecs over google.protobuf messages (the generated `_pb2` classes).

    JSON ignores unknown fields, as binary protobuf does, so an older service and a newer
    client (or the reverse) still talk."""
    from connectrpc.compat import google_protobuf_codecs

    return list(google_protobuf_codecs())
