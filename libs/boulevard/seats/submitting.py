"""A seat's moves on one SubmitActions stream (docs/clients.md, "Submitting on a stream"):
what `EngineServiceStub.SubmitAction` does, call for call, for a fraction of the engine's
CPU a move (issue 28: a unary call cost the engine's gRPC several times a stream message).

    moves = SubmitStream(stub)             # one per seat (the stream is bound to it)
    reply = await moves.submit(request)    # a SubmitActionResponse, or AioRpcError
    await moves.close()

`submit` answers as SubmitAction does: the same response, and a refusal raised as the
`grpc.aio.AioRpcError` with the code and message SubmitAction fails with, so code written
for the unary call (ABORTED: look again; UNAVAILABLE: retry the same request) works as it
is. The stream is opened on the first move (the engine closes one that stays silent) and
again after it ends (the engine ends it at its token's expiry). A move whose stream fails
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


def refusal(error: engine_pb2.SubmitActionError) -> grpc.aio.AioRpcError:
    """The error SubmitAction would have raised for a move the stream refused."""
    code = _CODES.get(error.code, grpc.StatusCode.UNKNOWN)
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), error.message)


class SubmitStream:
    """One seat's SubmitActions stream, opened when needed; moves are sent one at a time
    (a second `submit` waits for the first's answer), as a seat makes them."""

    def __init__(self, stub: engine_pb2_grpc.EngineServiceStub, unary: bool = False) -> None:
        self._stub = stub
        self._call: Any = None
        self._lock = asyncio.Lock()
        # SubmitAction calls instead (asked for, or the engine has no SubmitActions).
        self.unary = unary
        self.opened = 0  # streams opened so far (for tests and benches)

    async def submit(
        self, request: engine_pb2.SubmitActionRequest
    ) -> engine_pb2.SubmitActionResponse:
        if self.unary:
            return await self._unary(request)
        async with self._lock:
            call = self._call
            fresh = call is None or call.done()
            if fresh:
                call = self._call = self._stub.SubmitActions()
                self.opened += 1
            try:
                await call.write(engine_pb2.SubmitActionsRequest(submit=request))
                reply = await call.read()
                if reply is grpc.aio.EOF:  # ended without a status error: not by the engine
                    raise grpc.aio.AioRpcError(
                        grpc.StatusCode.UNAVAILABLE,
                        grpc.aio.Metadata(),
                        grpc.aio.Metadata(),
                        "the SubmitActions stream ended before answering",
                    )
            except grpc.aio.AioRpcError as err:
                # The stream itself failed (not a refused move, which is an answer): its
                # replica went away or is stopping, the engine ended it (its token, its
                # bound), or has no such method. The move's outcome is unknown, so it goes
                # once more as the unary call, whose answer is the caller's (on to the next
                # replica, if any; its idempotency key keeps it from running twice).
                self._drop()
                if fresh and err.code() in (
                    grpc.StatusCode.UNIMPLEMENTED,
                    grpc.StatusCode.INTERNAL,  # the same, when the refusal races the write
                ):
                    self.unary = True  # an engine without SubmitActions: unary from now on
                return await self._unary(request)
            except BaseException:
                # Cancelled between the move and its answer: the stream's order is lost.
                self._drop()
                raise
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
