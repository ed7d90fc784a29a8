"""Reconcile against games replayed with their rules, and the auditor's verdicts."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest
from nats.aio.client import Client as NATS

from boulevard.accounting import canonical_json
from boulevard.api.v1 import events_pb2, ledger_pb2, ledger_pb2_grpc
from boulevard.cli.audit_ledger import audit, audit_address
from boulevard.cli.main import main as boulevard_cli
from boulevard.client.ledger import LedgerClient
from boulevard.games import REGISTRY
from boulevard.games.base import GameConfig, transfers_of
from boulevard.games.codec import Codec
from boulevard.games.playout import playout
from tests.integration.ledger.support import (
    ledger_client,
    ledger_settings,
    money_events,
    publish_envelopes,
    running_ledger,
    wait_for_size,
)
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration


def played_game(name: str, game_id: str, seed: int) -> list[events_pb2.EventEnvelope]:
    """A real game played by bots, as the engine would publish it."""
    game = REGISTRY[name]
    codec = Codec(game.event_types)
    bot = game.bots["heuristic"]
    played = playout(game, GameConfig(players=3), random.Random(seed), bot)
    return [
        events_pb2.EventEnvelope(
            event_id=f"{game_id}-{v}",
            type=type(ev).__name__,
            game_id=game_id,
            game=name,
            version=v,
            time_unix_ms=1_700_000_000_000 + v,
            payload=codec.dumps(ev),
            transfers=[
                events_pb2.Transfer(
                    source=t.source, target=t.target, amount=t.amount, reason=t.reason
                )
                for t in transfers_of(ev)
            ],
        )
        for v, ev in enumerate(played.events, start=1)
    ]


def with_wrong_transfer(envs: list[events_pb2.EventEnvelope]) -> tuple[list[Any], int, int]:
    """The same game, but one bank payout in the envelope is one dollar more than the
    event says: the ledger posts what the envelope says, the rules disagree."""
    out = [events_pb2.EventEnvelope.FromString(e.SerializeToString()) for e in envs]
    for env in out[len(out) // 3 :]:
        for t in env.transfers:
            if t.source == "bank" and t.target.startswith("seat:"):
                t.amount += 1
                return out, env.version, int(t.target.split(":")[1])
    raise AssertionError("no bank payout in this game")


async def test_reconcile_a_real_game_and_find_the_first_divergence(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    honest = played_game("las_vegas", "lv-honest", seed=5)
    lords = played_game("lords_of_vegas", "lords-honest", seed=6)
    wrong, bad_version, bad_seat = with_wrong_transfer(played_game("las_vegas", "lv-wrong", 5))
    await publish_envelopes(nc, honest + lords + wrong)
    async with (
        running_ledger(ledger_settings(nats_server.url, tmp_path)) as service,
        ledger_client(service.address) as client,
    ):
        await wait_for_size(client, money_events(honest + lords + wrong))
        for game_id, envs in (("lv-honest", honest), ("lords-honest", lords)):
            ok = await client.reconcile(game_id)
            assert ok.reconciled, ok.message
            assert ok.events == len(envs) and ok.entries == money_events(envs)
        bad = await client.reconcile("lv-wrong")
        assert not bad.reconciled
        assert (bad.divergence.version, bad.divergence.seat) == (bad_version, bad_seat)
        assert bad.divergence.ledger_balance == bad.divergence.game_money + 1
        assert f"version {bad_version}: seat {bad_seat}" in bad.message

        # The auditor replays the games itself and reaches the same verdicts.
        report = await audit(client, game="lv-honest", say=lambda _: None)
        assert report.ok, report.failure
        report = await audit(client, game="lords-honest", say=lambda _: None)
        assert report.ok, report.failure
        report = await audit(client, say=lambda _: None)
        assert not report.ok
        assert f"game lv-wrong at version {bad_version}: seat {bad_seat}" in report.failure

        # The command line: a pass exits 0, a divergence exits non-zero.
        assert await _boulevard("audit", "ledger", "--address", service.address,
                                "--game", "lv-honest") == 0  # fmt: skip
        assert await _boulevard("audit", "ledger", "--address", service.address,
                                "--game", "lv-wrong") == 1  # fmt: skip


async def _boulevard(*argv: str) -> int:
    """`boulevard …`'s exit code (in a thread: the command runs its own event loop)."""
    return await asyncio.to_thread(boulevard_cli, list(argv))


class DoctoredLedger(ledger_pb2_grpc.LedgerServiceServicer):
    """A ledger operator who serves a doctored journal through the real service."""

    def __init__(self, upstream: LedgerClient, tamper: str) -> None:
        self.up = upstream.stub
        self.tamper = tamper

    async def GetTreeHead(self, request: Any, context: Any) -> Any:
        if self.tamper == "no_heads":
            await context.abort(grpc.StatusCode.NOT_FOUND, "no tree head has been signed yet")
        return await self.up.GetTreeHead(request)

    async def ListTreeHeads(self, request: Any, context: Any) -> Any:
        reply = await self.up.ListTreeHeads(request)
        if self.tamper == "head":
            reply.heads[-1].root_hash = bytes(32)
        return reply

    async def GetInclusionProof(self, request: Any, context: Any) -> Any:
        return await self.up.GetInclusionProof(request)

    async def GetConsistencyProof(self, request: Any, context: Any) -> Any:
        return await self.up.GetConsistencyProof(request)

    async def Reconcile(self, request: Any, context: Any) -> Any:
        return await self.up.Reconcile(request)

    async def ListEntries(self, request: Any, context: Any) -> Any:
        reply: ledger_pb2.ListEntriesResponse = await self.up.ListEntries(request)
        for e in reply.entries:
            if e.seq == 7 and self.tamper in ("amount", "unbalanced"):
                doc = json.loads(e.canonical)
                doc["postings"][1]["amount"] += 1  # more money into the target account
                if self.tamper == "amount":  # ... taken from the source: still balanced
                    doc["postings"][0]["amount"] -= 1
                e.canonical = canonical_json(doc)
        if self.tamper == "hide_game" and request.game_id:
            del reply.entries[:]  # a game's listing empty, the journal whole
        if self.tamper == "drop":
            kept = [e for e in reply.entries if e.seq != 7]
            del reply.entries[:]
            reply.entries.extend(kept)
        if self.tamper == "swap" and len(reply.entries) > 8:
            a = ledger_pb2.LedgerEntry()
            a.CopyFrom(reply.entries[6])
            reply.entries[6].CopyFrom(reply.entries[7])
            reply.entries[7].CopyFrom(a)
        return reply


@asynccontextmanager
async def doctored(client: LedgerClient, tamper: str) -> AsyncIterator[str]:
    """The address of a DoctoredLedger in front of the real service."""
    server = grpc.aio.server()
    ledger_pb2_grpc.add_LedgerServiceServicer_to_server(DoctoredLedger(client, tamper), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(0)


@pytest.mark.parametrize(
    ("tamper", "expected"),
    [
        ("amount", "entry 8: chain_broken"),
        ("unbalanced", "entry 7: unbalanced_entry"),
        ("drop", "entry 8: chain_broken"),
        ("swap", "entry 8: chain_broken"),
        ("head", "invalid_signature"),
    ],
)
async def test_the_auditor_names_the_entry_that_fails(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path, tamper: str, expected: str
) -> None:
    envs = played_game("las_vegas", "lv-a", seed=8)
    await publish_envelopes(nc, envs)
    async with (
        running_ledger(ledger_settings(nats_server.url, tmp_path)) as service,
        ledger_client(service.address) as client,
    ):
        await wait_for_size(client, money_events(envs))
        async with doctored(client, tamper) as address:
            report = await audit_address(address, say=lambda _: None)
        assert not report.ok
        assert expected in report.failure, report.failure


async def test_a_game_whose_listing_is_empty_is_still_reconciled(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    """`audit ledger --game G` reconciled G only when the ledger listed entries for it: a
    ledger that listed none for a game that moved money (never posted, or hid them) passed
    with "0 entries". The game's money is compared with the ledger's whatever it lists; the
    whole-journal audit names the entry the listing hides."""
    envs = played_game("las_vegas", "lv-h", seed=9)
    await publish_envelopes(nc, envs)
    async with (
        running_ledger(ledger_settings(nats_server.url, tmp_path)) as service,
        ledger_client(service.address) as client,
    ):
        await wait_for_size(client, money_events(envs))
        async with doctored(client, "hide_game") as address:
            alone = await audit_address(address, "lv-h", say=lambda _: None)
            whole = await audit_address(address, say=lambda _: None)
        assert not alone.ok and "game lv-h at version" in alone.failure, alone.failure
        assert not whole.ok and "game lv-h: the ledger's listing" in whole.failure, whole.failure


async def test_a_fresh_ledger_passes_and_entries_without_a_head_fail(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A platform's first `audit ledger` said FAIL ("no tree head has been signed yet")
    though nothing was wrong: an empty ledger has nothing to prove. A ledger that serves
    entries but no head over them still fails."""
    monkeypatch.setattr("boulevard.cli.audit_ledger.HEAD_WAIT", 1.0)
    async with running_ledger(ledger_settings(nats_server.url, tmp_path)) as service:
        said: list[str] = []
        fresh = await audit_address(service.address, say=said.append)
        assert fresh.ok and fresh.entries == 0, fresh.failure
        assert any("the ledger is empty" in line for line in said), said
        code = await asyncio.to_thread(
            boulevard_cli, ["audit", "ledger", "--address", service.address, "--quiet"]
        )
        assert code == 0
        # A game named on an empty ledger is still looked up: one GAMES never saw fails.
        alone = await audit_address(service.address, "lv-none", say=lambda _: None)
        assert not alone.ok and "no events on GAMES" in alone.failure, alone.failure

        envs = played_game("las_vegas", "lv-n", seed=10)
        await publish_envelopes(nc, envs)
        async with ledger_client(service.address) as client:
            await wait_for_size(client, money_events(envs))
            async with doctored(client, "no_heads") as address:
                hidden = await audit_address(address, say=lambda _: None)
        assert not hidden.ok and not hidden.unreachable
        assert "signed no tree head" in hidden.failure, hidden.failure
