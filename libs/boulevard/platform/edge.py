"""The gRPC edge: every request is decoded and checked against `limits.LIMITS` before any
servicer sees it.

grpc answers UNKNOWN when a unary request's deserializer raises, so the deserializer here
never does: undecodable bytes become a marker that the handler turns into INVALID_ARGUMENT.
Requests of our own package (`boulevard.v1`) are checked against the limits; health and
reflection requests only get the decoding guard.

A bidi stream's messages are decoded as the handler reads them, and grpc hands a
deserializer's exception to that read and reads nothing more: there the deserializer
raises InvalidArgument itself (`stream_deserializer`), so undecodable bytes end the stream
INVALID_ARGUMENT as they fail a unary call, at no cost per message beyond the decoding.
Limits are the handler's on a stream: a message over them may be refused alone while the
stream goes on (SubmitActions answers each message as SubmitAction would, `checked`), which
only the handler can say.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError, Message

from boulevard.platform.errors import InvalidArgument
from boulevard.platform.handlers import Behavior, WrappingInterceptor
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


def stream_deserializer(deserialize: Callable[[bytes], Any] | None) -> Callable[[bytes], Any]:
    """For a request stream: raises InvalidArgument on bytes that are no message, at the
    handler's read of them; nothing after a corrupt message can be trusted to line up."""

    def strict(data: bytes) -> Any:
        if deserialize is None:
            return data
        try:
            return deserialize(data)
        except (DecodeError, UnicodeDecodeError, ValueError, TypeError) as exc:
            raise InvalidArgument(_undecodable(type(exc).__name__)) from None

    return strict


def edge_deserializer(handler: grpc.RpcMethodHandler) -> Callable[[bytes], Any]:
    """The edge's deserializer for `handler`'s requests: one request's never raises
    (`guarded_deserializer`), a request stream's raises InvalidArgument (`stream_deserializer`)."""
    if handler.request_streaming:
        return stream_deserializer(handler.request_deserializer)
    return guarded_deserializer(handler.request_deserializer)


def _undecodable(reason: str) -> str:
    return f"the request bytes are not a valid message ({reason})"


def checked(request: Any) -> Any:
    """The request if it decoded and is within its limits, else InvalidArgument."""
    if isinstance(request, Undecodable):
        raise InvalidArgument(_undecodable(request.reason))
    if isinstance(request, Message) and request.DESCRIPTOR.full_name.startswith("boulevard."):
        check_message(request)
    return request


class EdgeInterceptor(WrappingInterceptor):
    """Install inside `ErrorInterceptor` (later in the list), which maps what this raises."""

    def request_deserializer(self, handler: grpc.RpcMethodHandler) -> Callable[[bytes], Any]:
        return edge_deserializer(handler)

    def wrap_bidi(self, behavior: Behavior, method: str) -> Behavior:
        return behavior  # its deserializer checks each message as it is read

    def wrap_unary(self, behavior: Behavior, method: str) -> Behavior:
        async def wrapped(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            return await behavior(checked(request), context)

        return wrapped

    def wrap_generator(self, behavior: Behavior, method: str) -> Behavior:
        async def wrapped(
            request: Any, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[Any]:
            async for item in behavior(checked(request), context):
                yield item

        return wrapped
