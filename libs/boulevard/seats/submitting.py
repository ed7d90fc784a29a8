"""A seat's moves on one SubmitActions stream (docs/clients.md, "Submitting on a stream"):
what `EngineServiceStub.SubmitAction` does, call for call, for a fraction of the engine's
CPU a move (issue 28: a unary call cost the engine's gRPC several times a stream message).

    moves = SubmitStream(stub)             # one per seat (the stream is bound to it)
    await moves.open(game_id, token)       # at sit-down: the stream open before any move
    reply = await moves.submit(request)    # a SubmitActionResponse, or AioRpcError
    await moves.close()

`submit` answers as SubmitAction does: the same response, and a refusal raised as the
`grpc.aio.AioRpcError` with the code and message SubmitAction fails with, so code written
for the unary call (ABORTED: look again; UNAVAILABLE: retry the same request) works as it
is. `open` opens the stream and binds it to the seat with an `open` message, before the
seat's first move: a busy engine takes on a new call slowly (issue 28: a median of 2.6 s
at saturation), and then no move waits for that. Sent again with a renewed token, it carries
an open stream on to that token's expiry. Without it (or when it could not open), the
stream is opened on the first move (the engine closes one that stays silent) and again after
it ends (the engine ends it at its token's expiry). An engine from before `open` ends such a
stream UNAUTHENTICATED (it reads a move without a token) or refuses it INVALID_ARGUMENT:
then `open` gives up for good and the first move opens the stream, as before. A move whose
stream fails
(its replica gone or stopping, its token expired, anything but an answer) is sent once more
as a unary call, whose answer or error is the caller's: it goes on to the next replica
(`boulevard.platform.replicas`), and its idempotency key keeps a move that did land from
running twice. An engine without SubmitActions (an older release: UNIMPLEMENTED, or
INTERNAL when that refusal races the first write) is called unary from then on.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc

_CODES = {code.value[0]: code for code in grpc.StatusCode}
# How an engine from before `open` ends a stream whose first message is one: it reads a move
# without a token (UNAUTHENTICATED), or one it cannot take (INVALID_ARGUMENT).
_OLD_ENGINE = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.INVALID_ARGUMENT)


def refusal(error: engine_pb2.SubmitActionError) -> grpc.aio.AioRpcError:
    """The error SubmitAction would have raised for a move the stream refused."""
    code = _CODES.get(error.code, grpc.StatusCode.UNKNOWN)
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), error.message)


class SubmitStream:
    """One seat's SubmitActions stream, opened at sit-down (`open`) or when needed; moves
    are sent one at a time (a second `submit` waits for the first's answer, and for an
    `open` under way), as a seat makes them."""

    def __init__(self, stub: engine_pb2_grpc.EngineServiceStub, unary: bool = False) -> None:
        self._stub = stub
        self._call: Any = None
        self._lock = asyncio.Lock()
        # SubmitAction calls instead (asked for, or the engine has no SubmitActions).
        self.unary = unary
        self.opened = 0  # streams opened so far (for tests and benches)
        # Whether the engine knows `open`: None until it answers one, False once it ended
        # or refused the first as an engine from before `open` would (`open` then does
        # nothing, and the first move opens the stream).
        self.opens: bool | None = None
        self._answered = False  # the current stream has answered a message (it is bound)

    @property
    def ready(self) -> bool:
        """The seat's stream is open and has answered (an `open` or a move): the next move
        goes on it at once (for benches, which time apart the moves that opened it)."""
        return self._answered and self._call is not None and not self._call.done()

    async def open(self, game_id: str, token: str) -> bool:
        """Open the seat's stream (or use the open one) and bind it with an `open` message
        for `game_id` and the seat's `token`, waiting for the engine's `opened`: True then.
        False, the stream left for the first move to open, when the engine ended or refused
        it (a token that does not verify fails the moves as it would have; an engine from
        before `open`: never tried again), has no SubmitActions (unary from then on), or
        the stream broke (its replica went away). Raises only if cancelled."""
        if self.unary or self.opens is False:
            return False
        message = engine_pb2.SubmitActionsRequest(
            open=engine_pb2.SubmitActionsOpen(game_id=game_id, player_token=token)
        )
        async with self._lock:
            call, fresh = self._current()
            reply = await self._exchange(call, message)
            if isinstance(reply, grpc.aio.AioRpcError) and not fresh:
                # The stream was open and it ended (its token's expiry, which is what a
                # renewed token is sent for): the same on a fresh one.
                call, fresh = self._current()
                reply = await self._exchange(call, message)
            if isinstance(reply, grpc.aio.AioRpcError):
                unknown = self._unary_if_unknown(reply, fresh)
                if not unknown and not self.opens and reply.code() in _OLD_ENGINE:
                    self.opens = False
                return False
            if not reply.HasField("opened"):
                # Refused alone: an engine that does not know the message, or one over the
                # limits (which a move would be refused for too). Not a stream to keep.
                self._drop()
                if not self.opens:
                    self.opens = False
                return False
            self.opens = True
            self._answered = True
            return True

    def _unary_if_unknown(self, err: grpc.aio.AioRpcError, fresh: bool) -> bool:
        """Unary from now on, True, if a fresh stream's failure says the engine has no
        SubmitActions (an older release: UNIMPLEMENTED, or INTERNAL when that refusal races
        the first write)."""
        if fresh and err.code() in (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.INTERNAL):
            self.unary = True
        return self.unary

    async def _exchange(self, call: Any, message: Any) -> Any:
        """`message` written and its answer read; the error, the stream dropped, when the
        stream fails instead (or ends without one: UNAVAILABLE)."""
        try:
            await call.write(message)
            reply = await call.read()
            if reply is grpc.aio.EOF:  # ended without a status error: not by the engine
                raise grpc.aio.AioRpcError(
                    grpc.StatusCode.UNAVAILABLE,
                    grpc.aio.Metadata(),
                    grpc.aio.Metadata(),
                    "the SubmitActions stream ended before answering",
                )
            return reply
        except grpc.aio.AioRpcError as err:
            self._drop()
            return err
        except BaseException:
            # Cancelled between the message and its answer: the stream's order is lost.
            self._drop()
            raise

    def _current(self) -> tuple[Any, bool]:
        """The seat's stream, opened now if there is none (or it ended); True: just opened."""
        call = self._call
        if call is not None and not call.done():
            return call, False
        self._call = self._stub.SubmitActions()
        self._answered = False
        self.opened += 1
        return self._call, True

    async def submit(
        self, request: engine_pb2.SubmitActionRequest
    ) -> engine_pb2.SubmitActionResponse:
        if self.unary:
            return await self._unary(request)
        async with self._lock:
            call, fresh = self._current()
            reply = await self._exchange(call, engine_pb2.SubmitActionsRequest(submit=request))
            if isinstance(reply, grpc.aio.AioRpcError):
                # The stream itself failed (not a refused move, which is an answer): its
                # replica went away or is stopping, the engine ended it (its token, its
                # bound), or has no such method. The move's outcome is unknown, so it goes
                # once more as the unary call, whose answer is the caller's (on to the next
                # replica, if any; its idempotency key keeps it from running twice).
                self._unary_if_unknown(reply, fresh)
                return await self._unary(request)
            self._answered = True
        if reply.HasField("error"):
            raise refusal(reply.error)
        accepted: engine_pb2.SubmitActionResponse = reply.accepted
        return accepted

    async def _unary(
        self, request: engine_pb2.SubmitActionRequest
    ) -> engine_pb2.SubmitActionResponse:
        response: engine_pb2.SubmitActionResponse = await self._stub.SubmitAction(request)
        return response

    def _drop(self) -> None:
        if self._call is not None:
            self._call.cancel()
            self._call = None

    async def close(self) -> None:
        """End the stream (the engine ends its side as the client's writes end)."""
        async with self._lock:
            call, self._call = self._call, None
            if call is None or call.done():
                return
            try:
                await call.done_writing()
                await call.read()  # EOF: the engine ended its side
            except grpc.aio.AioRpcError:
                pass  # it ended already (its token's expiry, its replica gone): nothing to end
            finally:
                call.cancel()
