"""The dice anchor on real nats-servers of the test's own (issue 25, "one head over
everything"): an honest game's GameFinished carries the dice service's signed head over its
dice log before the reveal, and `audit game` checks it. Then a dishonest operator — it holds
the dice key — rewrites that finished game's dice log (one outcome's record changed where no
other check looks, every head re-signed with the dice key), restores it with the game's
own log left alone into a fresh store, and serves it: the dice audit passes the rewrite,
and `audit game` fails at GameFinished on the anchored dice head."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest

from boulevard.accounting.merkle import MerkleTree
from boulevard.accounting.treehead import TreeHeadSigner
from boulevard.api.v1 import dice_pb2, engine_pb2_grpc, events_pb2
from boulevard.audit.game_log import GameAuditFailed
from boulevard.audit.signing import SigningKey
from boulevard.cli.audit_game import Addresses, audit_one
from boulevard.client.dice import DiceReader
from boulevard.seats.player import play_game
from services.dice.heads import sign_head
from tests.integration.dice.support import expand
from tests.integration.engine.support import (
    create_game,
    dice_key_file,
    restore,
    running_dice,
    start_engine,
    stored_log,
)
from tests.support.keys import seat_keys
from tests.support.nats import NatsHandle, start_test_nats

pytestmark = pytest.mark.integration

ENGINE = SigningKey(bytes([43]) * 32)


async def rewrite_dice(
    source: NatsHandle, target: NatsHandle, game_id: str, signer: TreeHeadSigner
) -> None:
    """The game's DICE records from `source`, into `target` with the dice identity, as an
    operator with the dice key would forge them: the second outcome's draw time moved (a
    field nothing but the signed log covers), and every head after it re-signed so the log
    is consistent again."""
    reader, writer = await source.connect(), await target.connect("dice")
    try:
        js = reader.jetstream()
        last = (await js.stream_info("DICE")).state.last_seq
        tree = MerkleTree()
        for seq in range(1, last + 1):
            msg = await js.get_msg("DICE", seq)
            if msg.subject != f"dice.{game_id}":
                continue
            # Written back in the two-message form (either form audits alike).
            for record in expand([dice_pb2.DiceRecord.FromString(msg.data or b"")]):
                if record.HasField("head"):
                    head = record.head
                    record = dice_pb2.DiceRecord(
                        head=sign_head(signer, game_id, tree, head.timestamp_unix_ms)
                    )
                elif record.HasField("outcome") and record.outcome.nonce == 1:
                    record.outcome.time_unix_ms += 1
                data = record.SerializeToString()
                if not record.HasField("head"):
                    tree.append(data)
                await writer.jetstream().publish(msg.subject, data)
    finally:
        await reader.close()
        await writer.close()


async def test_a_dice_log_rewritten_after_the_end_fails_on_the_anchored_head(
    nats_server: NatsHandle, tmp_path: Path
) -> None:
    honest = tmp_path / "honest"
    async with running_dice(nats_server, honest) as dice:
        engine = await start_engine(nats_server, honest, ENGINE)
        try:
            async with grpc.aio.insecure_channel(engine.address) as channel:
                stub = engine_pb2_grpc.EngineServiceStub(channel)
                created, seeds = await create_game(stub)
                game_id = created.game_id
                await play_game(
                    channel, game_id, "las_vegas", list(created.player_tokens), seat_keys(2),
                    client_seeds=seeds,
                )  # fmt: skip
                log = await stored_log(stub, game_id)
            report = await audit_one(game_id, Addresses(engine.address, dice.address, None))
        finally:
            await engine.stop()
    first = json.loads(events_pb2.EventEnvelope.FromString(log[0]).payload)
    finished = events_pb2.EventEnvelope.FromString(log[-1])
    assert first["dice_anchored"] is True and finished.type == "GameFinished"
    anchored = json.loads(finished.payload)["dice_head"]
    assert f"dice head anchors the dice log's {anchored['tree_size']} records" in report.summary()

    # The operator's rewrite, restored into a fresh store and served with the same keys.
    server = start_test_nats(tmp_path / "forged" / "nats")
    try:
        async with running_dice(server, honest) as dice:  # the same data dir: the same key
            signer = TreeHeadSigner(bytes.fromhex(dice_key_file(honest).read_text().strip()))
            await rewrite_dice(nats_server, server, game_id, signer)
            engine = await start_engine(server, tmp_path / "forged", ENGINE)
            try:
                await restore(server, game_id, log)
                async with grpc.aio.insecure_channel(dice.address) as channel:
                    # The rewrite holds together: every head verifies, every outcome
                    # re-derives from the revealed seed and is the one the game used.
                    alone = await DiceReader(channel).audit_game(game_id)
                assert alone.ok, alone.describe()
                with pytest.raises(GameAuditFailed) as failed:
                    await audit_one(game_id, Addresses(engine.address, dice.address, None))
            finally:
                await engine.stop()
    finally:
        server.stop()
    assert failed.value.version == len(log), failed.value
    assert "the dice log was rewritten after the game ended" in failed.value.message
    assert anchored["root_hash"] in failed.value.message
