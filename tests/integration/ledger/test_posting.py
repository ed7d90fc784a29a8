"""The ledger service on a real nats-server, fed synthetic GAMES envelopes."""

from __future__ import annotations

from pathlib import Path

import pytest
from boulevard.cli.audit_ledger import audit
from nats.aio.client import Client as NATS

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


async def test_posts_every_money_event_once_and_balances_are_the_sums(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    envelopes, expected = synthetic_games(games=6, events_per_game=40)
    await publish_envelopes(nc, envelopes)
    async with (
        running_ledger(ledger_settings(nats_server.url, tmp_path)) as service,
        ledger_client(service.address) as client,
    ):
        await wait_for_size(client, money_events(envelopes))
        for game_id in {e.game_id for e in envelopes}:
            balances = await client.balances(game_id)
            want = {acct: v for (g, acct), v in expected.items() if g == game_id}
            assert balances == want
            assert sum(balances.values()) == 0
        entries = [e async for e in client.entries()]
        assert len(entries) == money_events(envelopes)
        assert len({(e.game_id, e.version) for e in entries}) == len(entries)
        report = await audit(client, reconcile_games=False, say=lambda _: None)
        assert report.ok, report.failure
