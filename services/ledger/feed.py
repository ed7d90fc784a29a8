"""The poster's reading of GAMES: a durable pull consumer with its pull requests kept open.

nats-py's `PullSubscription.fetch` makes a pull request for every batch it returns: a
no-wait request, then the status message that ends it, and, for every message it hands
over, a new task with a timeout of its own (`next_msg`). At a live trickle the poster's
batches are one or two messages, so that is paid nearly once a message
(docs/performance-ledger.md, "One pull request kept open"). `PullFeed` instead keeps a
pull request open on the server (a batch no stream reaches, an expiry, idle heartbeats)
and renews it before it expires, like the `Consume` of the Go and Java clients: the
consumer sends messages as fast as its `max_ack_pending` allows, and `take` hands over at
once whatever arrived while the poster was busy.

What the server says, and how it is told apart: every message it delivers from the stream
carries its `$JS.ACK.…` reply subject; the statuses of a pull request (`100` idle
heartbeat, `408` expired, `409` ended by the server: leadership change, consumer deleted,
too many waiting, …; `503` no consumer) carry none, and come on the reply subject of
that request (`<inbox>.<n>`: one per request, so a status names the request it ends).
Only this identity and the server can publish to its inbox (boulevard.messaging.identities:
no service may publish to another's `_INBOX.<identity>.>`), so nothing else reaches here.

Liveness, without trusting any single message to arrive: a request the server ended is
replaced; one about to expire is renewed (a second request overlaps the first for a while;
the consumer serves them in turn, in its own delivery order, so nothing is reordered); and
if nothing at all came for two heartbeats (a reconnect, a restarted server: the requests
are gone), a new one is sent. A request that was in fact alive only overlaps the new one
until it expires.
"""

from __future__ import annotations

import asyncio
import json

import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import DEFAULT_PREFIX

log = structlog.get_logger(__name__)

STATUS = "Status"
DESCRIPTION = "Description"
HEARTBEAT = "100"
EXPIRED = "408"
# More messages than any consumer will deliver to one request: the request ends by its
# expiry (or the server), never by its count, so no count has to be kept.
REQUEST_BATCH = 1_000_000_000
_V1_ACK_TOKENS = 9  # $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>


def consumer_sequence(msg: Msg) -> int:
    """The consumer's delivery sequence of a delivered message, from its ack subject (v1:
    `$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.…`; v2 adds a
    domain and an account hash before the stream). Cheaper than `msg.metadata`, which
    also builds a datetime and three objects."""
    tokens = msg.reply.split(".")
    if tokens[0] != "$JS" or tokens[1] != "ACK" or len(tokens) < _V1_ACK_TOKENS:
        raise ValueError(f"not a JetStream delivery: reply {msg.reply!r}")
    return int(tokens[6] if len(tokens) == _V1_ACK_TOKENS else tokens[8])


class PullFeed:
    """The messages of one durable pull consumer (`stream`, `consumer`), in the order it
    delivers them, with a pull request always open while the feed is.

    `expires`: how long each pull request lives (it is renewed a margin before); `heartbeat`:
    the idle heartbeat asked of the server, and so how soon a lost request is noticed (two
    heartbeats without a word). The caller calls `take` at least once a `heartbeat`: that
    is when requests are renewed and replaced."""

    def __init__(
        self,
        nc: NATS,
        stream: str,
        consumer: str,
        *,
        expires: float = 30.0,
        heartbeat: float = 1.0,
        api_prefix: str = DEFAULT_PREFIX,
    ) -> None:
        if not 0 < 2 * heartbeat < expires:
            # nats-server refuses a heartbeat over half the expiry.
            raise ValueError(f"heartbeat {heartbeat}s must be under half of expires {expires}s")
        self._nc = nc
        self._next_subject = f"{api_prefix}.CONSUMER.MSG.NEXT.{stream}.{consumer}"
        self.expires = expires
        self.heartbeat = heartbeat
        # Renew this long before a request expires: a few heartbeats, as `take` runs at
        # least once a heartbeat.
        self._renew_margin = min(expires / 3, 3 * heartbeat)
        self._request = json.dumps(
            {
                "batch": REQUEST_BATCH,
                "expires": int(expires * 1e9),
                "idle_heartbeat": int(heartbeat * 1e9),
            }
        ).encode()
        self._sub: Subscription | None = None
        self._inbox = ""
        self._buffer: list[Msg] = []
        self._waiter: asyncio.Future[None] | None = None
        self._open: dict[str, float] = {}  # reply subject of each open request -> sent at
        self._requests = 0
        self._heard = 0.0  # when the server last sent anything here (loop time)
        self._retry_at = 0.0  # after a refused request: no new one before this
        self._refusals = 0  # in a row, for the backoff
        # Counts for operators' logs and the tests.
        self.requests_sent = 0
        self.requests_lost = 0

    @property
    def is_open(self) -> bool:
        return self._sub is not None

    async def open(self) -> None:
        """Subscribe a fresh inbox (messages meant for an earlier one are never taken) and
        send the first pull request."""
        await self.close()
        inbox = self._nc.new_inbox()
        self._inbox = inbox

        async def on_message(msg: Msg) -> None:
            if self._inbox == inbox:  # not a late one of an inbox closed since
                self._receive(msg)

        self._sub = await self._nc.subscribe(f"{inbox}.*", cb=on_message)
        self._refusals = 0
        self._retry_at = 0.0
        await self._pull()

    async def close(self) -> None:
        """Stop: no request renewed, what was not taken is dropped (it was never acked:
        the consumer delivers it again to whoever reads next)."""
        sub, self._sub = self._sub, None
        self._inbox = ""
        self._open.clear()
        self._buffer = []
        self._wake()
        if sub is not None:
            try:
                await sub.unsubscribe()
            except Exception as exc:  # a closed connection took the subscription with it
                log.debug("unsubscribing the GAMES feed failed", error=repr(exc))

    async def take(self, timeout: float) -> list[Msg]:
        """Every message delivered since the last take, in delivery order; if none is
        waiting, the ones that come within `timeout` seconds (the first wakes it), else
        []. Keeps a pull request open first."""
        if self._sub is None:
            raise RuntimeError("the GAMES feed is not open")
        await self._keep_open()
        if not self._buffer:
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            timer = loop.call_later(timeout, self._wake)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
        msgs, self._buffer = self._buffer, []
        return msgs

    def _receive(self, msg: Msg) -> None:
        loop = asyncio.get_running_loop()
        self._heard = loop.time()
        if msg.reply:  # a delivery: only the stream's messages carry an ack subject
            self._buffer.append(msg)
            self._refusals = 0
            self._wake()
            return
        status = (msg.headers or {}).get(STATUS, "")
        if status == HEARTBEAT:
            self._refusals = 0
            return
        # The server ended this request: expired (408), or anything else (409, 503, 400).
        self._open.pop(msg.subject, None)
        if status != EXPIRED:
            self._refusals += 1
            self._retry_at = loop.time() + min(2.0, 0.1 * 2 ** min(self._refusals, 5))
            log.warning(
                "the GAMES consumer ended a pull request",
                status=status,
                description=(msg.headers or {}).get(DESCRIPTION, ""),
            )
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def _keep_open(self) -> None:
        if not self._nc.is_connected:
            # Reconnecting: a request now would wait in nats-py's buffer, one more each
            # time this runs; once connected, the silence tells and one request goes.
            return
        now = asyncio.get_running_loop().time()
        if self._open and now - self._heard > 2 * self.heartbeat + 0.5:
            # Not even a heartbeat: the requests died with a connection or a server.
            self.requests_lost += len(self._open)
            log.info("no heartbeat from the GAMES consumer; pulling anew", open=len(self._open))
            self._open.clear()
        newest = max(self._open.values(), default=None)
        if newest is not None and now - newest < self.expires - self._renew_margin:
            return
        if now < self._retry_at:
            return
        await self._pull()

    async def _pull(self) -> None:
        self._requests += 1
        reply = f"{self._inbox}.{self._requests}"
        await self._nc.publish(self._next_subject, self._request, reply=reply)
        now = asyncio.get_running_loop().time()
        self._open[reply] = now
        self._heard = max(self._heard, now)
        self.requests_sent += 1
