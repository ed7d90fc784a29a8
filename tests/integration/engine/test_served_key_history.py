"""The platform serves its key history (issue 25), on a real nats-server of the test's own:
the engine rotates its receipt key mid-game, and the receipts a seat kept from before the
rotation verify against the served history; an auditor's pin follows the rotation (signed
by the pinned key) and catches a history the operator rewrote to swap a key of its own in,
however well chained from there on — and without a pin, the seat's old receipts catch it."""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

import grpc
import pytest

from boulevard.api.v1 import engine_pb2_grpc
from boulevard.audit.evidence import REVEAL, Accepted, receipt_from_pb
from boulevard.audit.game_log import GameAuditFailed
from boulevard.audit.keys import KeyHistory
from boulevard.audit.signing import SigningKey
from boulevard.cli import keys
from boulevard.cli.audit_game import Addresses, EvidenceFailed, audit_one
from boulevard.cli.exits import ExitCode
from boulevard.seats.player import play_game, reveal_seed
from tests.integration.engine.support import (
    create_game,
    dice_key_file,
    running_dice,
    start_engine,
)
from tests.support.keys import seat_keys
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration

OLD, NEW, OPERATORS_OWN = (SigningKey(bytes([n]) * 32) for n in (21, 22, 23))


async def test_receipts_from_before_a_rotation_verify_and_a_rewritten_history_is_caught(
    nats_server: NatsHandle, tmp_path: Path
) -> None:
    served = tmp_path / "served" / "history.json"
    pin = tmp_path / "auditor" / "keys.json"
    pin.parent.mkdir()
    async with running_dice(nats_server, tmp_path) as dice:
        dice_key = SigningKey.from_hex(dice_key_file(tmp_path).read_text())
        keys.publish(tmp_path / "none", served, current={"engine": OLD, "dice": dice_key})
        engine = await start_engine(nats_server, tmp_path, OLD, served)
        try:
            # The auditor pins the history the platform serves before the game.
            assert await asyncio.to_thread(pin_with, engine.address, pin) == ExitCode.OK
            async with grpc.aio.insecure_channel(engine.address) as channel:
                stub = engine_pb2_grpc.EngineServiceStub(channel)
                created, seeds = await create_game(stub)
                game_id = created.game_id
                revealed = [
                    await reveal_seed(stub, game_id, token, seeds[seat])
                    for seat, token in enumerate(created.player_tokens)
                ]
        finally:
            await engine.stop()
        # The rotation: the old key signs the new one into the history; the engine restarts
        # with the new key and plays the game to its end.
        history = KeyHistory.loads(served.read_text())
        rotated = history.extended("engine", NEW.public_hex, int(time.time() * 1000), OLD)
        served.write_text(rotated.dumps())
        engine = await start_engine(nats_server, tmp_path, NEW, served)
        try:
            async with grpc.aio.insecure_channel(engine.address) as channel:
                seats = await play_game(
                    channel, game_id, "las_vegas", list(created.player_tokens), seat_keys(2)
                )
            evidence = []
            for seat, player in enumerate(seats):
                kept = player.evidence()
                kept.accepted.insert(
                    0,
                    Accepted(
                        REVEAL, receipt_from_pb(revealed[seat].receipt), client_seed=seeds[seat]
                    ),
                )
                evidence.append(kept)
            assert {a.receipt.key_id for e in evidence for a in e.accepted} == {
                OLD.key_id,
                NEW.key_id,
            }
            where = Addresses(engine.address, dice.address, None)

            report = await audit_one(game_id, where, evidence=evidence, trust=pinned(pin))
            assert report.finished and report.receipts == sum(len(e.accepted) for e in evidence)
            # The auditor's pin follows the rotation.
            assert await asyncio.to_thread(pin_with, engine.address, pin) == ExitCode.OK
            assert pinned(pin).keys("engine") == [OLD.public_hex, NEW.public_hex]

            # The operator rewrites the served history: its own key where the old one was,
            # handing over to the new one properly, so the history verifies on its own.
            rewritten = (
                KeyHistory()
                .extended("engine", OPERATORS_OWN.public_hex, 1, None)
                .extended("engine", NEW.public_hex, 2, OPERATORS_OWN)
                .extended("dice", dice_key.public_hex, 2, None)
            )
            assert rewritten.problem() is None
            served.write_text(rewritten.dumps())
            with pytest.raises(EvidenceFailed, match="rewrites the pinned one at entry 0"):
                await audit_one(game_id, where, evidence=evidence, trust=pinned(pin))
            assert await asyncio.to_thread(pin_with, engine.address, pin) == ExitCode.FAILED
            assert pinned(pin).keys("engine") == [OLD.public_hex, NEW.public_hex]  # kept
            # No pin at all: the seats' receipts signed with the old key name a key the
            # rewritten history lacks.
            reveal_at = min(a.receipt.version for e in evidence for a in e.accepted)
            with pytest.raises(GameAuditFailed, match="neither the engine's key") as failed:
                await audit_one(game_id, where, evidence=evidence)
            assert failed.value.version == reveal_at
            # The old key alone, as if never rotated: the engine's key is not in it.
            served.write_text(history.dumps())
            with pytest.raises(EvidenceFailed, match="not in the pinned key history"):
                await audit_one(game_id, where, evidence=evidence)
        finally:
            await engine.stop()


def pinned(path: Path) -> KeyHistory:
    return KeyHistory.loads(path.read_text())


def pin_with(address: str, path: Path) -> int:
    """`boulevard keys pin FILE --engine ADDRESS`."""
    return keys.pin(argparse.Namespace(trust=path, engine=address, timeout=10.0))
