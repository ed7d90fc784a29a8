"""The gRPC edge: every request is decoded and checked against `limits.LIMITS` before any
servicer sees it.

grpc answers UNKNOWN when a request deserializer raises, so the deserializer here never
does: undecodable bytes become a marker that the handler turns into INVALID_ARGUMENT.
Requests of our own package (`boulevard.v1`) are checked against the limits; health and
reflection requests only get the decoding guard.
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


def checked(request: Any) -> Any:
    """The request if it decoded and is within its limits, else InvalidArgument."""
    if isinstance(request, Undecodable):
        raise InvalidArgument(f"the request bytes are not a valid message ({request.reason})")
    if isinstance(request, Message) and request.DESCRIPTOR.full_name.startswith("boulevard."):
        check_message(request)
    return request


class EdgeInterceptor(WrappingInterceptor):
    """Install inside `ErrorInterceptor` (later in the list), which maps what this raises."""

    def request_deserializer(self, handler: grpc.RpcMethodHandler) -> Callable[[bytes], Any]:
        return guarded_deserializer(handler.request_deserializer)

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
