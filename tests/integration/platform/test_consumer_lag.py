"""Consumer lag and stream replicas, read from a real nats-server into the gauges."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from nats.aio.client import Client as NATS
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig
from prometheus_client import REGISTRY

from boulevard.messaging.lag import consumer_lag, sample_once

pytestmark = pytest.mark.integration


def gauge(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


async def test_pending_messages_and_a_stuck_ack_floor_show(nc: NATS) -> None:
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="LAGTEST", subjects=["lagtest.>"]))
    await js.add_consumer("LAGTEST", ConsumerConfig(durable_name="slow", ack_policy=AckPolicy.ALL))
    for i in range(5):
        await js.publish(f"lagtest.{i}", b"x")
    await sample_once(js, [("LAGTEST", "slow")], ["LAGTEST"])
    labels = {"stream": "LAGTEST", "consumer": "slow"}
    assert gauge("boulevard_consumer_pending_messages", **labels) == 5
    assert gauge("boulevard_stream_replicas_current", stream="LAGTEST") == 1
    assert gauge("boulevard_stream_has_leader", stream="LAGTEST") == 1
    # An hour later with nothing acknowledged: the floor's age says so.
    info = await js.consumer_info("LAGTEST", "slow")
    later = consumer_lag(info, datetime.now(UTC) + timedelta(hours=1))
    assert later.pending == 5 and later.ack_floor_age_seconds >= 3600
    # Fetch and acknowledge everything: no lag, no age.
    sub = await js.pull_subscribe_bind(durable="slow", stream="LAGTEST")
    msgs = await sub.fetch(5, timeout=2)
    await msgs[-1].ack_sync()
    await sample_once(js, [("LAGTEST", "slow")], [])
    assert gauge("boulevard_consumer_pending_messages", **labels) == 0
    assert gauge("boulevard_consumer_ack_floor_age_seconds", **labels) == 0
    # A consumer that does not exist keeps no made-up value and raises nothing.
    await sample_once(js, [("LAGTEST", "gone")], ["NOSUCHSTREAM"])
    assert gauge("boulevard_consumer_pending_messages", stream="LAGTEST", consumer="gone") is None
