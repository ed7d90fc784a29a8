"""A leaf of the outcome log is stored with its signed head in one message (`DiceSignedLeaf`,
issue 28): one fsynced write a draw, where releases before wrote two. Against a real
nats-server, counting messages, not time:

- every operation stores exactly one message, holding its leaf and the head that covers it,
  before it answers; what the service serves (heads, leaf bytes, outcomes) and audits is what
  the two-message form served;
- a log begun in the two-message form (an older release's, with a leaf whose head a crash
  lost) loads, is repaired, goes on in the one-record form and audits (`boulevard audit
  dice` too; a log the previous release wrote is checked byte for byte in
  tests/unit/fairness/test_signed_leaf.py, from tests/golden/dice/);
- a one-record message the operator forged (signed with the dice key, over a tree without its
  leaf) is skipped by the service and named by the audit.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from boulevard.accounting.merkle import MerkleTree
from boulevard.api.v1 import dice_pb2
from boulevard.client.dice import DiceReader
from boulevard.contract.dice_log import split_messages
from services.dice.app import DiceApp
from services.dice.heads import sign_head
from services.dice.store import DiceLog
from services.engine.dice_client import DiceClient
from tests.integration.dice.support import (
    channel_to,
    commitments,
    dice_settings,
    finish_and_reveal,
    forge,
    new_game_id,
    open_with_seeds,
    running_dice,
)
from tests.integration.dice.test_crash_and_audit import run_audit
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration

SEEDS = ["ann-seed", "bob-seed"]


async def stored(nc: NATS, game_id: str) -> list[dice_pb2.DiceRecord]:
    return [r.record for r in (await DiceLog(nc, "DICE", "dice").read(game_id))[0]]


def kinds(records: list[dice_pb2.DiceRecord]) -> list[str]:
    return [r.WhichOneof("record") or "" for r in records]


class Crash(Exception):
    """The dice process dying between a leaf and its head, stored apart."""


async def test_each_leaf_is_one_message_with_the_head_that_covers_it(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    async with running_dice(dice_settings(nats_server.url, tmp_path)) as service:
        client = DiceClient(nc)
        game_id = new_game_id()
        await open_with_seeds(client, game_id, SEEDS)
        assert kinds(await stored(nc, game_id)) == ["signed_leaf"] * 2
        drawn = []
        for i in range(3):
            drawn.append(await client.roll(game_id, f"r{i}", 2, 6))
            # When the draw returns, exactly one message more: its leaf and its head.
            records = await stored(nc, game_id)
            assert kinds(records) == ["signed_leaf"] * (3 + i)
            leaf = dice_pb2.DiceRecord.FromString(records[-1].signed_leaf.leaf)
            assert leaf.outcome == drawn[-1]
            assert records[-1].signed_leaf.head.tree_size == 3 + i
        assert await client.roll(game_id, "r1", 2, 6) == drawn[1]  # a retry writes nothing
        assert len(await stored(nc, game_id)) == 5
        head = await client.head(game_id)  # the stored head, no message more
        assert head == (await stored(nc, game_id))[-1].signed_leaf.head
        assert len(await stored(nc, game_id)) == 5

        await finish_and_reveal(nc, client, game_id)
        records = await stored(nc, game_id)
        leaves, heads = split_messages([(r, r.SerializeToString()) for r in records])
        async with channel_to(service.address) as channel:
            reader = DiceReader(channel)
            # Served as the two-message form served them: the leaves' exact bytes, the heads.
            assert await reader.log_records(game_id) == leaves
            served = await reader.log_heads(game_id)
            assert list(served.heads) == heads and served.tree_size == 6
            assert [h.tree_size for h in heads] == [1, 2, 3, 4, 5, 6]
            listed = [o async for o in reader.outcomes(game_id)]
            assert [o.values for o in listed] == [o.values for o in drawn]
            report = await reader.audit_game(game_id)
            assert report.ok and report.checked == 3, report.describe()


async def test_a_log_of_the_two_message_form_with_a_lost_head_loads_and_audits(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    """Written as releases before the one-record form wrote it (heads_apart), the last
    draw's head lost to a crash; then today's service: it signs that leaf on load, returns
    the same outcome for a retry, draws on in one-record messages, and the whole audits."""
    game_id = new_game_id()
    old = DiceApp(dice_settings(nats_server.url, tmp_path, dice_heads_apart=True))
    await old.start(nc)
    try:
        dealer = old.dealer
        assert dealer is not None
        client = DiceClient(nc)
        await dealer.open_game(game_id, commitments(SEEDS))
        await dealer.fix_seeds(game_id, SEEDS)
        first = await dealer.roll(game_id, "r0", 1, 6)

        async def die(table: object) -> None:
            raise Crash

        dealer._sign = die  # type: ignore[method-assign]
        with pytest.raises(Crash):
            await dealer.roll(game_id, "r1", 2, 6)
    finally:
        await old.stop()
    apart = ["opened", "head", "seeds", "head", "outcome", "head", "outcome"]
    assert kinds(await stored(nc, game_id)) == apart
    lost = (await stored(nc, game_id))[-1].outcome

    async with running_dice(dice_settings(nats_server.url, tmp_path)) as service:
        assert await client.roll(game_id, "r1", 2, 6) == lost  # the leaf, signed on load
        assert await client.roll(game_id, "r0", 1, 6) == first
        assert (await client.roll(game_id, "r2", 1, 6)).nonce == 2
        await finish_and_reveal(nc, client, game_id)
        records = await stored(nc, game_id)
        assert kinds(records) == [*apart, "head", "signed_leaf", "signed_leaf"]
        async with channel_to(service.address) as channel:
            reader = DiceReader(channel)
            served = await reader.log_heads(game_id)
            assert [h.tree_size for h in served.heads] == [1, 2, 3, 4, 5, 6]
            assert [o.nonce async for o in reader.outcomes(game_id)] == [0, 1, 2]
            report = await reader.audit_game(game_id)
            assert report.ok and report.checked == 3, report.describe()
        code, out = await run_audit(service.address, game_id)  # `boulevard audit dice`
        assert code == 0 and "PASS: 3 outcomes" in out, out


async def test_a_forged_one_record_message_is_skipped_and_named(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    """The operator, with the dice key, stores an outcome whose head is signed over the
    tree WITHOUT it (so the outcome would look stored-and-signed to a reader that trusted
    the record's form). The service draws on as if it were not there; the audit of the raw
    log names it."""
    settings = dice_settings(nats_server.url, tmp_path)
    async with running_dice(settings) as service:
        client = DiceClient(nc)
        game_id = new_game_id()
        await open_with_seeds(client, game_id, SEEDS)
        await client.roll(game_id, "r0", 1, 6)
        records = await stored(nc, game_id)
        tree = MerkleTree()
        for r in records:
            tree.append(r.signed_leaf.leaf)
        forged_outcome = dice_pb2.DiceOutcome(
            game_id=game_id,
            nonce=1,
            kind=dice_pb2.OUTCOME_KIND_ROLL,
            count=1,
            sides=6,
            values=[6],
            request_id="r1",
        )
        short_head = sign_head(settings.signer(), game_id, tree, 0)  # covers 3, not 4
        await forge(
            nc,
            game_id,
            dice_pb2.DiceRecord(
                signed_leaf=dice_pb2.DiceSignedLeaf(
                    leaf=dice_pb2.DiceRecord(outcome=forged_outcome).SerializeToString(),
                    head=short_head,
                )
            ),
        )
        drawn = await client.roll(game_id, "r1", 1, 6)  # not the forged one
        assert drawn.nonce == 1 and drawn.request_id == "r1" and drawn != forged_outcome
        await finish_and_reveal(nc, client, game_id)
        async with channel_to(service.address) as channel:
            reader = DiceReader(channel)
            assert (await reader.verify_remote(game_id)).ok  # the service's own view
            report = await reader.audit_game(game_id)
            assert report.mismatch is not None and report.mismatch.code == "record_changed"
            assert "record 3 (the outcome with nonce 1)" in report.mismatch.message
