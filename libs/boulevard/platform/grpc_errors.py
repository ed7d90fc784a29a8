"""A server interceptor that turns domain errors into precise gRPC status codes.

Every handler of every service goes through it, so no servicer maps errors by hand and no
client ever sees UNKNOWN: unexpected exceptions are logged and become INTERNAL.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import structlog

from boulevard.platform.errors import status_of
from boulevard.platform.handlers import Rewrapped, is_generator, rewrapped

log = structlog.get_logger(__name__)


async def _abort(context: grpc.aio.ServicerContext[Any, Any], exc: Exception, method: str) -> None:
    mapped = status_of(exc)
    if mapped is None:
        log.exception("unexpected error", method=method)
        await context.abort(grpc.StatusCode.INTERNAL, f"internal error: {type(exc).__name__}")
    else:
        await context.abort(mapped[0], mapped[1])


def _wrap_unary(behavior: Callable[..., Awaitable[Any]], method: str) -> Callable[..., Any]:
    async def wrapped(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        try:
            return await behavior(request, context)
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            await _abort(context, exc, method)

    return wrapped


def _wrap_stream(behavior: Callable[..., Any], method: str) -> Callable[..., Any]:
    if not is_generator(behavior):  # a coroutine writing with context.write: keep its shape
        return _wrap_unary(behavior, method)

    async def wrapped(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        try:
            async for item in behavior(request, context):
                yield item
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            await _abort(context, exc, method)

    return wrapped


class ErrorInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc ships no types
    def __init__(self) -> None:
        self._rewrapped = Rewrapped()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method = handler_call_details.method
        return self._rewrapped.get(
            method,
            handler,
            lambda inner: rewrapped(
                inner,
                lambda behavior: _wrap_unary(behavior, method),
                lambda behavior: _wrap_stream(behavior, method),
            ),
        )
