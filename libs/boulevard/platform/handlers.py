"""What the server interceptors (metrics, errors, edge, NATS deadline) share:
`WrappingInterceptor`, an interceptor that wraps every method's behaviour, each in its own
way (`wrap_unary`, `wrap_generator`), while this module rebuilds the method handler around
it and keeps the two shapes a server-streaming behaviour comes in.

A server-streaming behaviour is either an async generator or a coroutine that writes with
`context.write` (the health service's Watch); grpc refuses mixing the two, so a wrapper
must keep the shape it was given (`is_generator`). A bidi (stream-stream) behaviour comes in
the same two shapes and is wrapped as a whole stream (`wrap_bidi`: the engine's
SubmitActions, reflection's ServerReflectionInfo); its requests are checked one by one as
they are read, by the request deserializer, since a wrapper only sees the iterator. A sync
bidi behaviour (grpc runs it in a thread) and client-streaming (stream-unary) methods, which
no service of ours has, are passed through as they are.

A wrapped handler depends only on the method and the handler it wraps, so each interceptor
builds it once per method (`Rewrapped`) rather than on every call: building the three
interceptors' wrappers cost about 55 µs a call (issue 17's profile). What happens on every
call — counting its status, mapping its error — is the wrapper's own work.
"""

from __future__ import annotations

import inspect
from abc import abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

Behavior = Callable[..., Any]


def is_generator(behavior: Behavior) -> bool:
    """True for an async-generator behaviour, False for one that is a coroutine."""
    return inspect.isasyncgenfunction(behavior)


def is_async(behavior: Behavior) -> bool:
    """True for an async-generator or coroutine behaviour: the shapes grpc's asyncio server
    hands an async request iterator to (a sync one is run in a thread, its iterator sync)."""
    return inspect.isasyncgenfunction(behavior) or inspect.iscoroutinefunction(behavior)


def rewrapped(
    handler: grpc.RpcMethodHandler,
    unary: Callable[[Behavior], Behavior],
    stream: Callable[[Behavior], Behavior],
    bidi: Callable[[Behavior], Behavior],
    request_deserializer: Callable[[bytes], Any] | None = None,
) -> grpc.RpcMethodHandler:
    """`handler` with its unary-unary behaviour wrapped by `unary`, its unary-stream one by
    `stream`, or its async stream-stream one by `bidi` (and the request deserializer
    replaced when one is given); any other handler as it is."""
    deserialize = request_deserializer or handler.request_deserializer
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(
            unary(handler.unary_unary),
            request_deserializer=deserialize,
            response_serializer=handler.response_serializer,
        )
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(
            stream(handler.unary_stream),
            request_deserializer=deserialize,
            response_serializer=handler.response_serializer,
        )
    if handler.stream_stream is not None and is_async(handler.stream_stream):
        return grpc.stream_stream_rpc_method_handler(
            bidi(handler.stream_stream),
            request_deserializer=deserialize,
            response_serializer=handler.response_serializer,
        )
    return handler


class Rewrapped:
    """One interceptor's wrapped handlers, built once per (method, inner handler). Only
    methods that have a handler are kept, so the set is bounded by the services' methods
    whatever names callers send."""

    def __init__(self) -> None:
        self._built: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    def get(
        self,
        method: str,
        handler: grpc.RpcMethodHandler,
        build: Callable[[grpc.RpcMethodHandler], grpc.RpcMethodHandler],
    ) -> grpc.RpcMethodHandler:
        built = self._built.get(method)
        if built is None or built[0] is not handler:
            built = self._built[method] = (handler, build(handler))
        return built[1]


class WrappingInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc ships no types
    """A server interceptor that wraps the behaviour of every unary-unary, unary-stream and
    async stream-stream method: a subclass says how, for a coroutine (`wrap_unary`, which
    also serves a streaming method that writes with `context.write`) and for an async
    generator (`wrap_generator`; or streams at all, `wrap_stream`; bidi streams,
    `wrap_bidi`), and may replace the request deserializer. The wrapped handler is built
    once per method and kept; what a wrapper does on each call (count its status, map its
    error) is its own."""

    def __init__(self) -> None:
        self._rewrapped = Rewrapped()

    @abstractmethod
    def wrap_unary(self, behavior: Behavior, method: str) -> Behavior:
        """`behavior` (a coroutine) wrapped, for the full method name `method`."""

    def wrap_stream(self, behavior: Behavior, method: str) -> Behavior:
        """A unary-stream `behavior` wrapped, in the shape it came in: an async generator by
        `wrap_generator`, a coroutine writing with `context.write` by `wrap_unary`. A
        subclass that leaves streams alone returns `behavior`."""
        if not is_generator(behavior):
            return self.wrap_unary(behavior, method)
        return self.wrap_generator(behavior, method)

    def wrap_generator(self, behavior: Behavior, method: str) -> Behavior:
        """`behavior` (an async generator) wrapped, for the full method name `method`:
        every subclass that keeps `wrap_stream` says how."""
        raise NotImplementedError(f"{type(self).__name__} does not wrap streaming {method}")

    def wrap_bidi(self, behavior: Behavior, method: str) -> Behavior:
        """A stream-stream `behavior` wrapped as one stream, its first argument the request
        iterator: by default as a unary-stream behaviour is (`wrap_stream`), which serves
        wrappers that leave the request alone. A subclass that looks at the request
        overrides it (each message is checked as it is read: `request_deserializer`)."""
        return self.wrap_stream(behavior, method)

    def request_deserializer(self, handler: grpc.RpcMethodHandler) -> Callable[[bytes], Any] | None:
        """The deserializer to use instead of the handler's; None keeps the handler's."""
        return None

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method = handler_call_details.method
        return self._rewrapped.get(method, handler, lambda inner: self._wrapped(inner, method))

    def _wrapped(self, handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
        return rewrapped(
            handler,
            lambda behavior: self.wrap_unary(behavior, method),
            lambda behavior: self.wrap_stream(behavior, method),
            lambda behavior: self.wrap_bidi(behavior, method),
            self.request_deserializer(handler),
        )
