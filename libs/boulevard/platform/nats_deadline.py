"""UNAVAILABLE within the client's deadline while NATS is away.

Without this, a call that reaches a NATS request while the connection is down waits for
that request's own timeout (5 s for a JetStream publish), so a client whose deadline is
shorter sees DEADLINE_EXCEEDED, not the UNAVAILABLE that docs/security.md promises ("NATS
away: retry later"). This interceptor answers for the handler shortly before the client's
deadline, but only when NATS is disconnected at that moment: with NATS connected a slow call
is just slow and keeps running to its natural end (DEADLINE_EXCEEDED if it misses).

Cancelling a handler in the middle of a NATS publish is what the UNAVAILABLE of a
SubmitAction already means (docs/security.md): the append may still land when NATS is back,
so the client retries with the same idempotency key and the engine applies it once.

Only unary calls are guarded; a stream's deadline is its whole life, not a wait on NATS.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import grpc

from boulevard.platform.handlers import Behavior, WrappingInterceptor

# Answer this long before the client's deadline, so the answer arrives in time; never
# earlier than half the time the client gave.
MARGIN_SECONDS = 0.25

UNAVAILABLE_DETAILS = (
    "NATS is unreachable and did not answer within your deadline; the service is "
    "reconnecting: retry later (SubmitAction: it may have been applied: retry with the "
    "same idempotency_key)"
)


def answer_by(remaining: float) -> float:
    """Seconds from now at which to answer UNAVAILABLE for a call with `remaining` seconds
    of deadline left."""
    return max(remaining - MARGIN_SECONDS, remaining / 2)


class NatsDeadlineInterceptor(WrappingInterceptor):
    """`nats_up()` says whether the service's NATS connection is connected right now."""

    def __init__(self, nats_up: Callable[[], bool]) -> None:
        super().__init__()
        self._nats_up = nats_up

    def wrap_unary(self, behavior: Behavior, method: str) -> Behavior:
        return self._guard(behavior)

    def wrap_stream(self, behavior: Behavior, method: str) -> Behavior:
        return behavior  # a stream's deadline is its whole life, not a wait on NATS

    def _guard(self, behavior: Behavior) -> Behavior:
        return deadline_guard(behavior, self._nats_up)


def deadline_guard(behavior: Behavior, nats_up: Callable[[], bool]) -> Behavior:
    """`behavior` (a unary handler) answering UNAVAILABLE at `answer_by` the client's
    deadline when NATS is disconnected at that moment; with NATS connected it runs on.

    The handler runs in the call's own task, watched by one timer (issue 28: a task and an
    `asyncio.wait` per call were a visible share of every unary call's CPU); at that moment,
    if NATS is away, the timer cancels the handler, as the task's `cancel` stops it
    anywhere, and the call is answered UNAVAILABLE. A cancellation from elsewhere (the
    client went away) passes on as it is."""

    async def guarded(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        remaining = context.time_remaining()
        if remaining is None:  # no deadline: nothing to answer within
            return await behavior(request, context)
        task = asyncio.current_task()
        assert task is not None, "grpc runs each call in a task"
        cancelling = task.cancelling()
        gave_up = False

        def at_the_deadline() -> None:
            nonlocal gave_up
            if not nats_up():
                gave_up = True
                task.cancel()

        timer = asyncio.get_running_loop().call_later(answer_by(remaining), at_the_deadline)
        try:
            result = await behavior(request, context)
        except BaseException as exc:
            if not gave_up:
                raise
            elsewhere = task.uncancel() > cancelling  # cancelled by someone else too
            if elsewhere and isinstance(exc, asyncio.CancelledError):
                raise  # that cancellation stands
            # Whatever the handler made of being stopped, the caller hears UNAVAILABLE.
        else:
            if gave_up:
                task.uncancel()  # it swallowed the cancel and finished: the cancel is spent
            return result
        finally:
            timer.cancel()
        await context.abort(grpc.StatusCode.UNAVAILABLE, UNAVAILABLE_DETAILS)

    return guarded
