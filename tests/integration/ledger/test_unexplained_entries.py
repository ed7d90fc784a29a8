"""The ledger never signs a head over an entry that no game event explains (issue 25): an
entry written onto LEDGER by someone holding the ledger's identity (chained and balanced,
so the rebuild takes it) used to be signed over by the next head the restarted ledger
made. It now raises a LEDGER ALARM and the ledger signs no more heads; honest entries read
back after a restart are still signed over."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS
from prometheus_client import REGISTRY

from boulevard.accounting import EntrySource
from boulevard.accounting.journal import postings_from_transfers
from boulevard.api.v1 import events_pb2
from services.ledger.book import LedgerBook
from services.ledger.journal_log import LedgerLog
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


def unexplained() -> float:
    return REGISTRY.get_sample_value("boulevard_ledger_unexplained_entries_total") or 0.0


async def forge_entry(nc: NATS, game_id: str) -> int:
    """Append to LEDGER the next entry, well formed and chained, paying seat 0 of `game_id`
    money no game event moved. Returns its seq."""
    journal = LedgerLog(nc, "LEDGER", "ledger")
    book = LedgerBook()
    await journal.replay(
        lambda subject, data, seq: book.load(journal.kind_of(subject), data, seq, subject),
        from_seq=1,
    )
    gift = events_pb2.Transfer(source="bank", target="seat:0", amount=1_000, reason="gift")
    entry = book.ledger.post(
        EntrySource(game_id=game_id, version=9_999, event_id="forged", event_type="Payout"),
        postings_from_transfers(game_id, [gift]),
    )
    await nc.jetstream().publish(journal.entry_subject(game_id), entry.canonical)
    return entry.seq


async def test_a_forged_entry_read_back_is_never_signed_over(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    envelopes, _ = synthetic_games(games=3, events_per_game=20, seed=25)
    await publish_envelopes(nc, envelopes)
    size = money_events(envelopes)
    settings = ledger_settings(nats_server.url, tmp_path)
    async with running_ledger(settings) as service, ledger_client(service.address) as client:
        await wait_for_size(client, size)
    # Restarted over honest entries with no head after them: they are checked and signed.
    more, _ = synthetic_games(games=1, events_per_game=10, seed=26)
    await publish_envelopes(nc, more)
    async with running_ledger(settings) as service, ledger_client(service.address) as client:
        await wait_for_size(client, size + money_events(more))
    total = size + money_events(more)
    seq = await forge_entry(nc, envelopes[0].game_id)
    assert seq == total + 1
    before = unexplained()
    async with running_ledger(settings) as service, ledger_client(service.address) as client:
        await asyncio.sleep(2.0)  # ten signing intervals
        head, _, served = await client.tree_head()
        assert served == total + 1  # the forged entry is served, for auditors to see
        assert head.head.tree_size == total, "the ledger signed a head over the forged entry"
        assert unexplained() == before + 1
        # New honest money still posts, but no head goes over the forged entry.
        later, _ = synthetic_games(games=1, events_per_game=5, seed=27)
        await publish_envelopes(nc, later)
        await asyncio.sleep(1.5)
        head, _, served = await client.tree_head()
        assert served > total + 1 and head.head.tree_size == total
