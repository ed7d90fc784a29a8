"""Consumer lag and stream replica health, as the services read them from JetStream.

No NATS exporter installs from our registries, so the on-call view of NATS comes from the
services: each samples, every few seconds, the durable consumers it owns (pending messages
and how long the ack floor has stood still with work waiting) and the replicas of the
streams it writes (how many are current, whether there is a leader). Names and labels
are bounded: stream and consumer names from the settings, never a game or a player.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog
from nats.js import JetStreamContext
from nats.js.api import ConsumerInfo, StreamInfo

from boulevard.platform import metrics

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class ConsumerLag:
    pending: int  # messages not yet delivered plus delivered and not acknowledged
    ack_floor_age_seconds: float  # how long the ack floor has not moved with work pending


def consumer_lag(info: ConsumerInfo, now: datetime) -> ConsumerLag:
    """The lag of one consumer from its info: 0 s of age when nothing waits; otherwise the
    time since its last acknowledgement (or since it was made, if it never acked)."""
    pending = int(info.num_pending or 0) + int(info.num_ack_pending or 0)
    if not pending:
        return ConsumerLag(0, 0.0)
    last = info.ack_floor.last_active if info.ack_floor is not None else None
    since = last or info.created
    if since is None:
        return ConsumerLag(pending, 0.0)
    if since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    return ConsumerLag(pending, max(0.0, (now - since).total_seconds()))


def replicas_current(info: StreamInfo) -> tuple[int, bool]:
    """(replicas holding the stream up to date, counting the leader; whether it has one)."""
    cluster = info.cluster
    if cluster is None:  # a single server: the one copy is the current one
        return 1, True
    current = sum(1 for r in cluster.replicas or () if r.current)
    return current + (1 if cluster.leader else 0), bool(cluster.leader)


async def sample_once(
    js: JetStreamContext,
    consumers: Sequence[tuple[str, str]],
    streams: Sequence[str],
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> None:
    """Read each (stream, durable) consumer and each stream once into the gauges. One that
    does not answer (a failover) keeps its last values; the next round tries again."""
    for stream, durable in consumers:
        try:
            lag = consumer_lag(await js.consumer_info(stream, durable, timeout=2), now())
        except Exception as exc:
            log.debug("consumer lag not read", stream=stream, consumer=durable, error=repr(exc))
            continue
        metrics.CONSUMER_PENDING.labels(stream, durable).set(lag.pending)
        metrics.CONSUMER_ACK_FLOOR_AGE.labels(stream, durable).set(lag.ack_floor_age_seconds)
    for stream in streams:
        try:
            info = await js.stream_info(stream)
        except Exception as exc:
            log.debug("stream replicas not read", stream=stream, error=repr(exc))
            continue
        current, has_leader = replicas_current(info)
        metrics.STREAM_REPLICAS.labels(stream).set(info.config.num_replicas or 1)
        metrics.STREAM_REPLICAS_CURRENT.labels(stream).set(current)
        metrics.STREAM_HAS_LEADER.labels(stream).set(1 if has_leader else 0)


async def sample_forever(
    js: JetStreamContext,
    consumers: Sequence[tuple[str, str]],
    streams: Sequence[str] = (),
    interval: float = 5.0,
) -> None:
    """`sample_once` every `interval` seconds, for the life of the service."""
    while True:
        started = time.monotonic()
        with contextlib.suppress(Exception):
            await sample_once(js, consumers, streams)
        await asyncio.sleep(max(0.1, interval - (time.monotonic() - started)))
