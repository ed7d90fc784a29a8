"""The interceptors every service's gRPC server runs, in one wrapper per call.

Each call goes through four concerns, outermost first: metrics (count it by the status code
the client saw, time it), errors (map domain errors to status codes), the edge (refuse an
undecodable or oversized request) and the NATS deadline guard (UNAVAILABLE in time while
NATS is away; unary calls only). As four interceptors (`MetricsInterceptor`,
`ErrorInterceptor`, `EdgeInterceptor`, `NatsDeadlineInterceptor`), every unary call ran
through four nested coroutines and every stream message through three nested async
generators; `PlatformInterceptor` does the same work in one (issue 28: a move is a unary
call and a message to each seat's stream). Tracing, when on, must sit between metrics and
errors, so `server_interceptors` then returns the four apart with the tracer among them.

A bidi stream (SubmitActions, reflection) is wrapped as a whole: counted once it ends
("<method>.stream"), its errors mapped to the status it ends with, no deadline guard; each
message it reads is decoded by the edge's `stream_deserializer`, which ends the stream
INVALID_ARGUMENT on bytes that are no message. Nothing is added per message: no wrapper
around the request iterator, no task or timer.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc

from boulevard.platform import tracing
from boulevard.platform.edge import EdgeInterceptor, checked, edge_deserializer
from boulevard.platform.grpc_errors import ErrorInterceptor, abort_for
from boulevard.platform.handlers import Behavior, WrappingInterceptor, is_generator
from boulevard.platform.metrics import MetricsInterceptor, Recorder
from boulevard.platform.nats_deadline import NatsDeadlineInterceptor, deadline_guard


class PlatformInterceptor(WrappingInterceptor):
    """Metrics, errors, edge and the NATS deadline guard as one wrapper per method: what
    the four interceptors do in that order, call for call (the same status counted, the
    same errors mapped, the same requests refused). `nats_up()` says whether the service's
    NATS connection is connected now."""

    def __init__(self, service: str, nats_up: Callable[[], bool]) -> None:
        super().__init__()
        self._metrics = MetricsInterceptor(service)
        self._nats_up = nats_up

    def request_deserializer(self, handler: grpc.RpcMethodHandler) -> Callable[[bytes], Any]:
        return edge_deserializer(handler)

    def wrap_unary(self, behavior: Behavior, method: str) -> Behavior:
        return self._unary(deadline_guard(behavior, self._nats_up), method, checked)

    def wrap_stream(self, behavior: Behavior, method: str) -> Behavior:
        # A stream's deadline is its whole life, not a wait on NATS: no guard.
        if not is_generator(behavior):
            return self._unary(behavior, method, checked)  # a coroutine writing (context.write)
        return self.wrap_generator(behavior, method)

    def wrap_generator(self, behavior: Behavior, method: str) -> Behavior:
        return self._generator(behavior, method, checked)

    def wrap_bidi(self, behavior: Behavior, method: str) -> Behavior:
        # The request is an iterator whose messages the deserializer checks as they are read.
        record = self._metrics.recorder(method, bidi=True)
        if not is_generator(behavior):
            return self._unary(behavior, method, _as_is, record)  # reads and writes on context
        return self._generator(behavior, method, _as_is, record)

    def _unary(
        self,
        behavior: Behavior,
        method: str,
        check: Callable[[Any], Any],
        record: Recorder | None = None,
    ) -> Behavior:
        record = record or self._metrics.recorder(method)

        async def call(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            start, failed = time.perf_counter(), None
            try:
                try:
                    return await behavior(check(request), context)
                except grpc.aio.AbortError:
                    raise
                except Exception as exc:
                    await abort_for(context, exc, method)
            except BaseException as exc:
                failed = exc
                raise
            finally:
                record(context, start, failed)

        return call

    def _generator(
        self,
        behavior: Behavior,
        method: str,
        check: Callable[[Any], Any],
        record: Recorder | None = None,
    ) -> Behavior:
        record = record or self._metrics.recorder(method)

        async def stream(
            request: Any, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[Any]:
            start, failed = time.perf_counter(), None
            try:
                try:
                    async for item in behavior(check(request), context):
                        yield item
                except grpc.aio.AbortError:
                    raise
                except Exception as exc:
                    await abort_for(context, exc, method)
            except BaseException as exc:
                failed = exc
                raise
            finally:
                record(context, start, failed)

        return stream


def _as_is(request: Any) -> Any:
    return request


def server_interceptors(service: str, nats_up: Callable[[], bool]) -> list[Any]:
    """The interceptors of a service's gRPC server: `PlatformInterceptor` alone, or with
    tracing on the four apart with the tracer between metrics and errors (it sees the
    domain error; metrics counts what the client saw)."""
    tracer = tracing.server_interceptors()
    if not tracer:
        return [PlatformInterceptor(service, nats_up)]
    return [
        MetricsInterceptor(service),
        *tracer,
        ErrorInterceptor(),
        EdgeInterceptor(),
        NatsDeadlineInterceptor(nats_up),
    ]
