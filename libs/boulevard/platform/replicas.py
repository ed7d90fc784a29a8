"""Several replicas of the engine as one gRPC channel: each call goes to the replica that owns
its request's game id (`boulevard.contract.routing`), and on to the next when that one cannot
be reached. What the CLI, the Python SDK, matchmaking's bots and the gateway share, so they
all send a game's calls to the same replica (docs/operations.md, "Scaling the engine").

    replicas = "engine-0.engine-headless:50052,engine-1.engine-headless:50052"
    async with engine_channel(replicas) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)  # the generated stub, unchanged
        await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id))  # -> its owner

`engine_channel` with one address is `boulevard.platform.tls.channel`: a plain channel, the
behaviour a single engine always had. With several, `Replicas` stands in for the channel the
generated stub is made with: it makes one channel per replica on first use and picks, per
call, the order to try them in. The game is known per call, not per channel, so a client may
open it before it knows its game (`boulevard play` opens it before matchmaking seats it).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc

from boulevard.contract import routing
from boulevard.platform import tls


def may_try_next(exc: grpc.aio.AioRpcError, channel: grpc.aio.Channel) -> bool:
    """Whether a failed call goes on to the next replica: only when its replica could not be
    reached (UNAVAILABLE, and its channel no longer connected), not when a reachable replica
    answered UNAVAILABLE itself (e.g. its NATS is down: another replica shares that NATS).

    Repeating a call elsewhere is safe only because every engine call may run twice:
    SubmitAction carries the version it expects and an idempotency key, ReclaimSeat the
    version it signed, CreateGame a request id, RevealSeed the one seed committed to; so a
    command the lost replica did apply is never applied again."""
    if exc.code() is not grpc.StatusCode.UNAVAILABLE:
        return False
    return channel.get_state() is not grpc.ChannelConnectivity.READY


def game_id_of(request: Any) -> str:
    """The `game_id` a request message carries ("" when its type has no such field); for a
    SubmitActions message, its `open`'s or its move's (`submit.game_id`)."""
    descriptor = getattr(request, "DESCRIPTOR", None)
    if descriptor is None:
        return ""
    if "game_id" not in descriptor.fields_by_name:
        if "open" in descriptor.fields_by_name and request.HasField("open"):
            return game_id_of(request.open)
        return game_id_of(request.submit) if "submit" in descriptor.fields_by_name else ""
    return str(request.game_id)


def down_last(channels: Sequence[grpc.aio.Channel]) -> list[grpc.aio.Channel]:
    """`channels` in the same order, except those in TRANSIENT_FAILURE (down, as far as gRPC
    knows) moved to the end: a stopped owner then costs its games a cold load on the next
    replica, not a failed attempt on every call."""
    down = grpc.ChannelConnectivity.TRANSIENT_FAILURE
    return sorted(channels, key=lambda c: c.get_state(try_to_connect=False) is down)


class Replicas:
    """A stand-in for one `grpc.aio.Channel` over the replicas at `targets`, for generated
    stubs: unary and server-streaming calls go to the request's game's owner, then its
    next-ranked replicas, and a bidi stream (SubmitActions) to its first message's game's
    owner (`RoutedBidi`); a call without a game id (CreateGame, ListGames,
    WatchPlayer, GetEngineKey) goes to the replicas in the order given. Channels verify TLS
    against `ca_file` (default: BOULEVARD_TLS_CA_FILE) as `tls.channel` does.

    A call moves on only as `may_try_next` allows, and a stream only before its first
    message: one that broke after delivering is the caller's to open again from where it
    was (`boulevard.seats.watching.each_event`'s `retries`, `SeatPlayer`), which then goes
    to the next replica the same way."""

    def __init__(self, targets: Sequence[str], ca_file: Path | str | None = None) -> None:
        self.targets = tuple(dict.fromkeys(targets))
        if not self.targets:
            raise ValueError("no replicas to call")
        self._ca_file = ca_file
        self._channels: dict[str, grpc.aio.Channel] = {}

    def order(self, request: Any) -> list[str]:
        """The replicas `request` tries, in order, before `down_last`."""
        game_id = game_id_of(request)
        if game_id and len(self.targets) > 1:
            return list(routing.ranked(game_id, self.targets))
        return list(self.targets)

    def channels_for(self, request: Any) -> list[grpc.aio.Channel]:
        return down_last([self.channel_to(t) for t in self.order(request)])

    def channel_to(self, target: str) -> grpc.aio.Channel:
        """The channel of one replica, made on first use."""
        if target not in self._channels:
            self._channels[target] = tls.channel(target, self._ca_file)
        return self._channels[target]

    def unary_unary(
        self,
        method: str,
        request_serializer: Callable[[Any], bytes] | None = None,
        response_deserializer: Callable[[bytes], Any] | None = None,
        **options: Any,
    ) -> Callable[..., Any]:
        def callable_on(channel: grpc.aio.Channel) -> Any:
            return channel.unary_unary(method, request_serializer, response_deserializer, **options)

        async def call(request: Any, **kwargs: Any) -> Any:
            channels = self.channels_for(request)
            for i, channel in enumerate(channels):
                try:
                    return await callable_on(channel)(request, **kwargs)
                except grpc.aio.AioRpcError as exc:
                    if i + 1 < len(channels) and may_try_next(exc, channel):
                        continue
                    raise
            raise AssertionError("unreachable: the last replica's error is raised")

        return call

    def unary_stream(
        self,
        method: str,
        request_serializer: Callable[[Any], bytes] | None = None,
        response_deserializer: Callable[[bytes], Any] | None = None,
        **options: Any,
    ) -> Callable[..., RoutedStream]:
        def call(request: Any, **kwargs: Any) -> RoutedStream:
            def opener(channel: grpc.aio.Channel) -> Callable[[], Any]:
                multicallable = channel.unary_stream(
                    method, request_serializer, response_deserializer, **options
                )
                return functools.partial(multicallable, request, **kwargs)

            return RoutedStream([(c, opener(c)) for c in self.channels_for(request)])

        return call

    def stream_stream(
        self,
        method: str,
        request_serializer: Callable[[Any], bytes] | None = None,
        response_deserializer: Callable[[bytes], Any] | None = None,
        **options: Any,
    ) -> Callable[..., RoutedBidi]:
        def call(**kwargs: Any) -> RoutedBidi:
            def open_on(first: Any) -> Any:
                channel = self.channels_for(first)[0]
                multicallable = channel.stream_stream(
                    method, request_serializer, response_deserializer, **options
                )
                return multicallable(**kwargs)

            return RoutedBidi(open_on)

        return call

    async def close(self, grace: float | None = None) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            await channel.close(grace)

    async def __aenter__(self) -> Replicas:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


class RoutedStream:
    """A server stream over the first replica that answers: iterate it (`async for`) and
    `cancel()` it as a gRPC stream call. The call on a replica is made when iteration starts,
    and ends when iteration does: an iteration left mid-stream (the consumer's `break`, its
    task cancelled, the iterator closed) cancels its call, so the server frees its watcher at
    once rather than when the channel closes.

    `attempts` are the replicas to try in order, each as its channel (for `may_try_next`) and
    a function opening the call on it. A failed call moves on as `Replicas` says; the last
    one's error (a `grpc.aio.AioRpcError`) is the iterator's."""

    def __init__(self, attempts: list[tuple[grpc.aio.Channel, Callable[[], Any]]]) -> None:
        self._attempts = attempts
        self._current: Any = None
        self._cancelled = False

    def cancel(self) -> bool:
        self._cancelled = True
        return bool(self._current.cancel()) if self._current is not None else False

    def __aiter__(self) -> AsyncGenerator[Any, None]:
        return self._items()

    async def _items(self) -> AsyncGenerator[Any, None]:
        for i, (channel, open_call) in enumerate(self._attempts):
            if self._cancelled:
                return
            self._current = call = open_call()
            started = False
            try:
                async for item in call:
                    started = True
                    yield item
                return
            except grpc.aio.AioRpcError as exc:
                if not started and i + 1 < len(self._attempts) and may_try_next(exc, channel):
                    continue
                raise
            finally:
                # Ended, failed or abandoned: a call still open here is one nobody reads.
                call.cancel()


class RoutedBidi:
    """A bidi stream call (`write`, `read`, `done_writing`, `cancel`, `done`, `code`) made on
    the replica that owns its first message's game (a SubmitActions `open`'s or move's),
    when that message is written (the game is known per message, not when the stub is
    called). It stays on that replica:
    one that breaks is the caller's to open again, which routes anew
    (`boulevard.seats.submitting.SubmitStream`)."""

    def __init__(self, open_on: Callable[[Any], Any]) -> None:
        self._open_on = open_on
        self._call: Any = None
        self._cancelled = False

    async def write(self, request: Any) -> None:
        if self._call is None:
            if self._cancelled:
                raise grpc.aio.UsageError("the stream was cancelled")
            self._call = self._open_on(request)
        await self._call.write(request)

    async def read(self) -> Any:
        if self._call is None:
            raise grpc.aio.UsageError("nothing was written on the stream yet")
        return await self._call.read()

    async def done_writing(self) -> None:
        if self._call is not None:
            await self._call.done_writing()

    def cancel(self) -> bool:
        self._cancelled = True
        return bool(self._call.cancel()) if self._call is not None else False

    def done(self) -> bool:
        return self._cancelled if self._call is None else bool(self._call.done())

    async def code(self) -> grpc.StatusCode:
        if self._call is None:
            return grpc.StatusCode.CANCELLED
        code: grpc.StatusCode = await self._call.code()
        return code


def engine_channel(target: str, ca_file: Path | str | None = None) -> Any:
    """The channel to give `EngineServiceStub` for `target`: one address (`host:port`), or
    the engine's replicas comma-separated (`host:port,host:port`, the format of
    `BOULEVARD_GATEWAY_ENGINE_TARGET` and `BOULEVARD_ENGINE_TARGET`). One address: a plain
    `tls.channel`. Several: `Replicas`, which routes each call by its game id. Raises
    ValueError when `target` names no address."""
    targets = routing.replica_list(target)
    if not targets:
        raise ValueError(f"no engine address in {target!r}")
    if len(targets) == 1:
        return tls.channel(targets[0], ca_file)
    return Replicas(targets, ca_file)
