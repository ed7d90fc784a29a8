"""One message must not brick the ledger (issue 11): garbage on `ledger.head` used to wedge
the running ledger and then stop it from ever starting again. Garbage on any LEDGER subject
and on GAMES is now quarantined (logged, counted) and the ledger keeps posting."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from nats.aio.client import Client as NATS

from boulevard.cli.audit_ledger import audit
from boulevard.messaging.poison import POISONED
from tests.integration.ledger.support import (
    ledger_client,
    ledger_settings,
    money_events,
    publish_envelopes,
    running_ledger,
    synthetic_games,
    wait_for_size,
)
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration

GARBAGE = b"\xff\x00 not a protobuf, not json \x9c"


async def serving(address: str) -> bool:
    async with grpc.aio.insecure_channel(address) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=5
        )
    return reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_garbage_on_ledger_and_games_is_skipped_and_the_ledger_restarts(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    settings = ledger_settings(nats_server.url, tmp_path)
    first, _ = synthetic_games(3, 20, seed=1)
    second, _ = synthetic_games(3, 20, seed=2)
    js = nc.jetstream()
    before = sum(POISONED.values())
    async with running_ledger(settings) as service, ledger_client(service.address) as client:
        await publish_envelopes(nc, first)
        await wait_for_size(client, money_events(first))
        # Anyone who can publish there (before NATS permissions, anyone at all).
        await js.publish("ledger.head", GARBAGE)
        await js.publish("ledger.entry.g1-0", GARBAGE)
        await js.publish("ledger.rejected.g1-0", GARBAGE)
        await js.publish("game.g1-0", GARBAGE)  # not an EventCommit
        await js.publish("game.zz", b"\x12\x03abc")  # a commit whose event is not an envelope
        # The next good messages are posted: the ledger neither wedged nor stopped.
        await publish_envelopes(nc, second)
        total = money_events(first) + money_events(second)
        await wait_for_size(client, total)
        assert await serving(service.address)
        report = await audit(client, reconcile_games=False, say=lambda _: None)
        assert report.ok, report.failure
    assert sum(POISONED.values()) - before >= 4
    assert POISONED[("ledger.games", "undecodable")] >= 1
    assert POISONED[("ledger.rebuild", "bad_head")] >= 1

    # And it starts again on the same streams, garbage and all.
    async with running_ledger(settings) as service, ledger_client(service.address) as client:
        assert await serving(service.address)
        await wait_for_size(client, total)
        keys = [(e.game_id, e.version) async for e in client.entries()]
        assert len(keys) == len(set(keys)) == total
        report = await audit(client, reconcile_games=False, say=lambda _: None)
        assert report.ok, report.failure
