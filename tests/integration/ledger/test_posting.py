"""The ledger service on a real nats-server, fed synthetic GAMES envelopes."""

from __future__ import annotations

from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from boulevard.cli.audit_ledger import audit
from tests.integration.ledger.support import (
    ledger_client,
    ledger_settings,
    money_events,
    publish_commit,
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


async def test_an_append_of_many_events_posts_each_of_them_in_order(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    # One game whose 1,200 events arrive as two appends (two GAMES messages): each seat
    # spends money it received earlier in the same append, so order matters; and one
    # append is larger than a LEDGER atomic batch may be.
    envelopes, expected = synthetic_games(games=1, events_per_game=1200, seed=9)
    await publish_commit(nc, envelopes[:900])
    await publish_commit(nc, envelopes[900:])
    async with (
        running_ledger(ledger_settings(nats_server.url, tmp_path)) as service,
        ledger_client(service.address) as client,
    ):
        await wait_for_size(client, money_events(envelopes))
        game_id = envelopes[0].game_id
        want = {acct: v for (g, acct), v in expected.items() if g == game_id}
        assert await client.balances(game_id) == want
        versions = [e.version async for e in client.entries(game_id=game_id)]
        assert versions == sorted(versions) and len(versions) == money_events(envelopes)
        report = await audit(client, reconcile_games=False, say=lambda _: None)
        assert report.ok, report.failure
