"""The gRPC edge: every request is decoded and checked against `limits.LIMITS` before any
servicer sees it.

grpc answers UNKNOWN when a request deserializer raises, so the deserializer here never
does: undecodable bytes become a marker that the handler turns into INVALID_ARGUMENT.
Requests of our own package (`boulevard.v1`) are checked against the limits; health and
reflection requests only get the decoding guard.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError, Message

from boulevard.platform.errors import InvalidArgument
from boulevard.platform.limits import check_message


class Undecodable:
    """What the deserializer hands on instead of raising."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def guarded_deserializer(deserialize: Callable[[bytes], Any] | None) -> Callable[[bytes], Any]:
    def wrapped(data: bytes) -> Any:
        if deserialize is None:
            return data
        try:
            return deserialize(data)
        except (DecodeError, UnicodeDecodeError, ValueError, TypeError) as exc:
            return Undecodable(type(exc).__name__)

    return wrapped


def checked(request: Any) -> Any:
    """The request if it decoded and is within its limits, else InvalidArgument."""
    if isinstance(request, Undecodable):
        raise InvalidArgument(f"the request bytes are not a valid message ({request.reason})")
    if isinstance(request, Message) and request.DESCRIPTOR.full_name.startswith("boulevard."):
        check_message(request)
    return request


def _unary(behavior: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def wrapped(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        return await behavior(checked(request), context)

    return wrapped


def _stream(behavior: Callable[..., Any]) -> Callable[..., Any]:
    if not inspect.isasyncgenfunction(behavior):
        # A streaming handler may also be a coroutine that writes with `context.write`
        # (the health service's Watch): keep that shape, grpc refuses mixing the two.
        return _unary(behavior)

    async def wrapped(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        async for item in behavior(checked(request), context):
            yield item

    return wrapped


class EdgeInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc ships no types
    """Install inside `ErrorInterceptor` (later in the list), which maps what this raises."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        deserialize = guarded_deserializer(handler.request_deserializer)
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                _unary(handler.unary_unary),
                request_deserializer=deserialize,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                _stream(handler.unary_stream),
                request_deserializer=deserialize,
                response_serializer=handler.response_serializer,
            )
        return handler
