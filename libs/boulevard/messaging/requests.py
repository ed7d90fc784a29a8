"""Request-reply on a NATS connection for the per-move paths (issue 28): the engine's appends,
its dice requests and the dice service's own appends.

nats-py's `request` (and `JetStreamContext.publish`, which is one) costs about twice the CPU
of what a request needs: a NUID and then more random bytes per request (8 random bytes serve
here), `asyncio.wait_for` around the reply (a second future, a done-callback and a timer),
and for a JetStream publish a `PubAck` dataclass built from the reply's JSON. Measured with
100 requests in flight against a local nats-server: 190-205 µs of client CPU a JetStream
publish through `js.publish`, 80-100 µs here (docs/performance.md, "Wave 8").

What the callers see is nats-py's: the same subjects and headers on the wire, the reply as a
`Msg`, `nats.errors.TimeoutError` when none comes in time, `nats.errors.NoRespondersError`
when nobody listens (a JetStream publish: `nats.js.errors.NoStreamResponseError`), and a
JetStream refusal as `nats.js.errors.APIError` with the server's codes. Replies come to one
wildcard subscription under the connection's own inbox prefix (the only inbox its NATS
identity may read), made on first use and renewed by nats-py on reconnect like any other.
"""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from dataclasses import dataclass
from typing import Any

import nats.errors
import nats.js.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

STATUS = "Status"
NO_RESPONDERS = "503"


@dataclass(frozen=True, slots=True)
class Stored:
    """What JetStream answered a publish with: the message's stream sequence, and whether
    the server had it already (a `Nats-Msg-Id` seen inside the duplicate window)."""

    seq: int
    duplicate: bool


def _expire(waiting: asyncio.Future[Msg]) -> None:
    if not waiting.done():
        waiting.set_exception(nats.errors.TimeoutError())


class Requests:
    """Requests on one connection, their replies matched by a random token ending the reply
    subject."""

    def __init__(self, nc: NATS) -> None:
        self._nc = nc
        self._prefix = ""  # "<the connection's inbox>.<nuid>." once subscribed
        self._starting: asyncio.Future[None] | None = None
        self._waiting: dict[str, asyncio.Future[Msg]] = {}

    async def _start(self) -> None:
        if self._starting is None:
            self._starting = asyncio.get_running_loop().create_future()
            try:
                prefix = self._nc.new_inbox() + "."
                await self._nc.subscribe(prefix + "*", cb=self._reply)
            except BaseException as exc:
                self._starting.set_exception(exc)
                self._starting.exception()  # retrieved: the waiters below get it
                self._starting = None
                raise
            self._prefix = prefix
            self._starting.set_result(None)
        else:
            await asyncio.shield(self._starting)

    async def _reply(self, msg: Msg) -> None:
        waiting = self._waiting.pop(msg.subject[len(self._prefix) :], None)
        if waiting is not None and not waiting.done():
            waiting.set_result(msg)

    def waiting(self) -> int:
        """Requests whose reply has not come (nor their time run out)."""
        return len(self._waiting)

    async def request(
        self,
        subject: str,
        payload: bytes,
        timeout: float,
        headers: dict[str, str] | None = None,
    ) -> Msg:
        """The reply to `payload` sent on `subject`, as `NATS.request` gives it."""
        if not self._prefix:
            await self._start()
        # Unpredictable, as nats-py's are: whoever sees one reply subject (a responder) cannot
        # name the next request's. (NATS permissions already let a responder answer only the
        # requests it received, `allow_responses`; this does not lean on that alone.)
        token = os.urandom(8).hex()
        loop = asyncio.get_running_loop()
        waiting: asyncio.Future[Msg] = loop.create_future()
        self._waiting[token] = waiting
        timer = loop.call_later(timeout, _expire, waiting)
        try:
            await self._nc.publish(subject, payload, reply=self._prefix + token, headers=headers)
            msg = await waiting
        finally:
            timer.cancel()
            self._waiting.pop(token, None)
        if msg.headers and msg.headers.get(STATUS) == NO_RESPONDERS:
            raise nats.errors.NoRespondersError
        return msg

    async def publish(
        self,
        subject: str,
        payload: bytes,
        timeout: float,
        headers: dict[str, str] | None = None,
    ) -> Stored:
        """A JetStream publish and its acknowledgement, as `JetStreamContext.publish`."""
        try:
            msg = await self.request(subject, payload, timeout, headers)
        except nats.errors.NoRespondersError:
            raise nats.js.errors.NoStreamResponseError from None
        answer: dict[str, Any] = json.loads(msg.data)
        error = answer.get("error")
        if error is not None:
            raise nats.js.errors.APIError.from_error(error)
        return Stored(int(answer["seq"]), bool(answer.get("duplicate", False)))


_PER_CONNECTION: weakref.WeakKeyDictionary[NATS, Requests] = weakref.WeakKeyDictionary()


def requests_on(nc: NATS) -> Requests:
    """The connection's `Requests` (one reply subscription a connection, shared)."""
    requests = _PER_CONNECTION.get(nc)
    if requests is None:
        requests = _PER_CONNECTION[nc] = Requests(nc)
    return requests
