"""Reading a WatchGame stream in bursts mode (docs/clients.md, "The WatchGame stream").

A bursts-mode response carries every event of a burst in `events` and the view after the
last; `each_event` hands a caller that thinks in events (the CLI's screens, the audits) the
same updates one event at a time, as the one-event-per-message mode would, while the server
sends one message per burst (a catch-up of a finished game: a few messages of 128 events
instead of one per event).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2


def last_event(update: engine_pb2.WatchGameResponse) -> events_pb2.EventEnvelope:
    """The newest event a WatchGame update carries, whether the stream sends one event per
    message or one burst (`bursts`) per message."""
    return update.events[-1] if update.events else update.event


def split(update: engine_pb2.WatchGameResponse) -> list[engine_pb2.WatchGameResponse]:
    """One update per event: the burst's view, `to_act` and legal actions on its last."""
    if not update.events:  # one event per message already (an engine without bursts)
        return [update]
    out = [engine_pb2.WatchGameResponse(event=e) for e in update.events]
    if update.HasField("view"):
        out[-1].view.CopyFrom(update.view)
        out[-1].to_act.extend(update.to_act)
        out[-1].legal_actions.extend(update.legal_actions)
    return out


async def each_event(
    stub: engine_pb2_grpc.EngineServiceStub,
    request: engine_pb2.WatchGameRequest,
    *,
    retries: int = 0,
    **call: Any,
) -> AsyncIterator[engine_pb2.WatchGameResponse]:
    """WatchGame in bursts mode, one update per event (`call`: the stub's keywords, such as
    `timeout`). The stream is cancelled when the caller stops iterating.

    `retries`: how many times in a row a stream that broke with UNAVAILABLE (its engine
    replica stopped or restarts) is opened again, after a pause, from the event after the
    last one yielded; through `boulevard.platform.replicas` that reaches the game's next
    replica. No event is yielded twice or skipped. 0: the error is the caller's."""
    bursts = engine_pb2.WatchGameRequest()
    bursts.CopyFrom(request)
    bursts.bursts = True
    failures = 0
    while True:
        stream = stub.WatchGame(bursts, **call)
        try:
            async for update in stream:
                failures = 0
                for one in split(update):
                    bursts.from_version = one.event.version + 1
                    yield one
            return
        except grpc.aio.AioRpcError as err:
            if err.code() != grpc.StatusCode.UNAVAILABLE or failures >= retries:
                raise
        finally:
            stream.cancel()
        await asyncio.sleep(reopen_pause(failures))
        failures += 1


def reopen_pause(failures: int) -> float:
    """Seconds to wait before opening a broken stream again, after `failures` failed
    openings in a row: 0.2 s, doubling, at most 2 s (a restarting replica, or its next
    replica taking its games, answers within that)."""
    return float(min(0.2 * 2**failures, 2.0))


# A stream's reopenings in a row before its error is the caller's: about 30 s of pauses.
WATCH_RETRIES = 18
