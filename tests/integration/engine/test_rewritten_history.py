"""A history the operator rewrote, restored from a doctored backup into a fresh store and
served by an engine with the platform's own key, against the evidence the seats kept
(issue 25), on real nats-servers of the test's own: the doctored log passes every audit
alone — it is consistently chained, its receipts re-signable with the engine's key — and
fails on the seats' receipts: a changed move time re-chained from there ("history was
rewritten"), and a tail cut off after a seat's move ("history was deleted")."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest

from boulevard.api.v1 import engine_pb2_grpc, events_pb2
from boulevard.audit.evidence import Evidence
from boulevard.audit.game_log import GameAuditFailed
from boulevard.audit.signing import SigningKey
from boulevard.cli.audit_game import Addresses, audit_one
from boulevard.seats.player import play_game
from tests.integration.engine.support import (
    copy_stream,
    create_game,
    restore,
    running_dice,
    start_engine,
    stored_log,
)
from tests.support.keys import seat_keys
from tests.support.nats import NatsHandle, start_test_nats
from tests.unit.audit.test_game_log import rechain

pytestmark = pytest.mark.integration

ENGINE = SigningKey(bytes([41]) * 32)  # the operator holds it: it signs what it restores too


async def played(server: NatsHandle, data: Path) -> tuple[str, list[bytes], list[Evidence]]:
    """An honest game on `server`, played to its end: its log and each seat's evidence."""
    async with running_dice(server, data):
        engine = await start_engine(server, data, ENGINE)
        try:
            async with grpc.aio.insecure_channel(engine.address) as channel:
                stub = engine_pb2_grpc.EngineServiceStub(channel)
                created, seeds = await create_game(stub)
                seats = await play_game(
                    channel, created.game_id, "las_vegas", list(created.player_tokens),
                    seat_keys(2), client_seeds=seeds,
                )  # fmt: skip
                log = await stored_log(stub, created.game_id)
        finally:
            await engine.stop()
    return created.game_id, log, [s.evidence() for s in seats]


async def audited_elsewhere(
    honest: NatsHandle,
    tmp_path: Path,
    name: str,
    game_id: str,
    log: list[bytes],
    evidence: list[Evidence],
) -> tuple[int, GameAuditFailed]:
    """Restore `log` (and `honest`'s dice records) into a fresh nats-server, serve it with
    the engine's key, and audit it alone (it must pass: the operator's rewrite holds
    together) and with the evidence (it must fail). Returns what the audit alone counted
    and how the evidence failed it."""
    server = start_test_nats(tmp_path / name / "nats")
    try:
        # The dice records restored as they were (the engine asks dice to reveal a
        # finished game's seed as it loads it), by the dice service with its own key.
        async with running_dice(server, tmp_path / "honest"):
            await copy_stream(honest, server, "DICE", "dice")
            engine = await start_engine(server, tmp_path / name, ENGINE)
            try:
                await restore(server, game_id, log)
                where = Addresses(engine.address, None, None)
                alone = await audit_one(game_id, where)
                with pytest.raises(GameAuditFailed) as failed:
                    await audit_one(game_id, where, evidence=evidence)
            finally:
                await engine.stop()
    finally:
        server.stop()
    return alone.versions, failed.value


async def test_a_rewritten_restored_history_passes_alone_and_fails_on_the_seats_receipts(
    nats_server: NatsHandle, tmp_path: Path
) -> None:
    game_id, log, evidence = await played(nats_server, tmp_path / "honest")
    envs = [events_pb2.EventEnvelope.FromString(d) for d in log]
    moves = [e for e in envs if e.type == "CommandAccepted"]
    assert len(moves) > 4

    # Rewritten: a move recorded a millisecond later, the chain made whole again after it.
    changed = moves[len(moves) // 2].version
    envs[changed - 1].time_unix_ms += 1
    rewritten = rechain(envs)
    versions, failed = await audited_elsewhere(
        nats_server, tmp_path, "rewritten", game_id, rewritten, evidence
    )
    assert versions == len(log)
    kept = sorted(a.receipt.version for e in evidence for a in e.accepted)
    assert failed.version == min(v for v in kept if v >= changed), failed
    assert "history was rewritten" in failed.message, failed

    # Deleted: the log cut off just before seat 1's last move, so the game looks running
    # (its audit alone stops at the first hidden shuffle, as any running game's does).
    last = next(e for e in reversed(moves) if json.loads(e.payload)["seat"] == 1)
    cut = log[: last.version - 1]
    versions, failed = await audited_elsewhere(nats_server, tmp_path, "cut", game_id, cut, evidence)
    assert 0 < versions <= len(cut)
    assert failed.version > len(cut) and "history was deleted" in failed.message, failed
