"""A server interceptor that turns domain errors into precise gRPC status codes.

Every handler of every service goes through it, so no servicer maps errors by hand and no
client ever sees UNKNOWN: unexpected exceptions are logged and become INTERNAL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import structlog

from boulevard.platform.errors import status_of
from boulevard.platform.handlers import Behavior, WrappingInterceptor

log = structlog.get_logger(__name__)


async def abort_for(
    context: grpc.aio.ServicerContext[Any, Any], exc: Exception, method: str
) -> None:
    """Abort the call with the status `exc` maps to (INTERNAL, logged, for the unexpected)."""
    mapped = status_of(exc)
    if mapped is None:
        log.exception("unexpected error", method=method)
        await context.abort(grpc.StatusCode.INTERNAL, f"internal error: {type(exc).__name__}")
    else:
        await context.abort(mapped[0], mapped[1])


class ErrorInterceptor(WrappingInterceptor):
    def wrap_unary(self, behavior: Behavior, method: str) -> Behavior:
        async def wrapped(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            try:
                return await behavior(request, context)
            except grpc.aio.AbortError:
                raise
            except Exception as exc:
                await abort_for(context, exc, method)

        return wrapped

    def wrap_generator(self, behavior: Behavior, method: str) -> Behavior:
        async def wrapped(
            request: Any, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[Any]:
            try:
                async for item in behavior(request, context):
                    yield item
            except grpc.aio.AbortError:
                raise
            except Exception as exc:
                await abort_for(context, exc, method)

        return wrapped
