"""Every recorded outcome accounted for, the seeds fixed blind, and the signed outcome log:
the pure checks an auditor runs (docs/fairness.md, "Verifying a game")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from boulevard.accounting.merkle import MerkleTree
from boulevard.accounting.treehead import TreeHeadSigner
from boulevard.api.v1 import dice_pb2
from boulevard.contract.dice_log import check_log, parse_log
from boulevard.fairness import (
    GameSeeds,
    RecordedOutcome,
    check_accounted,
    client_seed_commitment,
    commitment,
    verify_game,
)
from services.dice.heads import sign_head

SEED = bytes(range(32))
GAME = "g-accounted"
SEATS = ["ann", "bob", "cy"]


def outcomes() -> list[RecordedOutcome]:
    seeds = GameSeeds.of(SEED, SEATS, GAME)
    return [
        RecordedOutcome(0, "shuffle", 10, 0, seeds.shuffle(0, 10), "deck"),
        RecordedOutcome(1, "roll", 2, 6, seeds.roll(1, 2, 6), "turn"),
        RecordedOutcome(2, "roll", 1, 6, seeds.roll(2, 1, 6), "turn"),
    ]


def test_a_game_that_used_every_outcome_once_in_order_passes() -> None:
    recorded = outcomes()
    assert check_accounted(recorded, recorded) is None


def test_a_burned_outcome_is_named() -> None:
    recorded = outcomes()
    # The engine's real roll came at nonce 2 because nonce 1 was requested by someone else.
    cited = [recorded[0], recorded[2]]
    mismatch = check_accounted(recorded, cited)
    assert mismatch is not None and (mismatch.code, mismatch.nonce) == ("outcome_unused", 1)
    # An extra outcome at the end, never used.
    mismatch = check_accounted(recorded, recorded[:2])
    assert mismatch is not None and (mismatch.code, mismatch.nonce) == ("outcome_unused", 2)


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"sides": 6}, "request_mismatch"),  # a shuffle cited as sides 6
        ({"purpose": "hand"}, "request_mismatch"),
        ({"count": 9}, "request_mismatch"),
        ({"kind": "roll"}, "request_mismatch"),
        ({"values": tuple(range(10))}, "values_mismatch"),
    ],
)
def test_a_cited_outcome_must_be_used_as_it_was_drawn(change: dict[str, object], code: str) -> None:
    recorded = outcomes()
    cited = [replace(recorded[0], **change), *recorded[1:]]  # type: ignore[arg-type]
    mismatch = check_accounted(recorded, cited)
    assert mismatch is not None and (mismatch.code, mismatch.nonce) == (code, 0)


def test_twice_out_of_order_and_unrecorded_citations_fail() -> None:
    recorded = outcomes()
    twice = check_accounted(recorded, [recorded[0], recorded[0], *recorded[1:]])
    assert twice is not None and (twice.code, twice.nonce) == ("outcome_cited_twice", 0)
    swapped = check_accounted(recorded, [recorded[0], recorded[2], recorded[1]])
    assert swapped is not None and (swapped.code, swapped.nonce) == ("cited_out_of_order", 2)
    ghost = check_accounted(recorded, [*recorded, replace(recorded[2], nonce=3)])
    assert ghost is not None and (ghost.code, ghost.nonce) == ("not_recorded", 3)


def verify(client_seeds: list[str], missing: tuple[int, ...] = ()) -> tuple[bool, str, str]:
    report = verify_game(
        commitment=commitment(SEED),
        revealed_seed_hex=SEED.hex(),
        client_seeds=client_seeds,
        game_id=GAME,
        outcomes=outcomes() if not missing else [],
        client_seed_commitments=[client_seed_commitment(s) for s in SEATS],
        missing_seats=missing,
    )
    code = report.mismatch.code if report.mismatch else ""
    return report.ok, code, report.describe()


def test_each_seat_seed_must_be_the_one_it_committed_to() -> None:
    assert verify(SEATS)[0]
    assert verify(["ann", "bob", "eve"])[1] == "seed_commitment_mismatch"
    assert verify(["ann", "bob"])[1] == "seed_commitment_mismatch"


def test_a_missing_reveal_passes_with_a_note_and_an_empty_seed() -> None:
    ok, _, text = verify(["ann", "", "cy"], missing=(1,))
    assert ok and "seat 1 did not reveal" in text
    assert verify(["ann", "bob", "cy"], missing=(1,))[1] == "seed_commitment_mismatch"


# ---- the signed outcome log ----------------------------------------------------------------

SIGNER = TreeHeadSigner(bytes(32))


def signed_log() -> tuple[list[bytes], list[dice_pb2.DiceTreeHead]]:
    """Leaves and a signed head after each, as the dice service writes them."""
    opened = dice_pb2.DiceCommitment(
        game_id=GAME,
        scheme="boulevard-fairness-v1",
        commitment=commitment(SEED),
        client_seed_commitments=[client_seed_commitment(s) for s in SEATS],
    )
    records = [dice_pb2.DiceRecord(opened=opened)]
    records.append(dice_pb2.DiceRecord(seeds=dice_pb2.DiceClientSeeds(client_seeds=SEATS)))
    for o in outcomes():
        kind = dice_pb2.OUTCOME_KIND_ROLL if o.kind == "roll" else dice_pb2.OUTCOME_KIND_SHUFFLE
        records.append(
            dice_pb2.DiceRecord(
                outcome=dice_pb2.DiceOutcome(
                    game_id=GAME,
                    nonce=o.nonce,
                    kind=kind,
                    count=o.count,
                    sides=o.sides,
                    values=o.values,
                    blinding=bytes([o.nonce]) * 16,
                )
            )
        )
    records.append(
        dice_pb2.DiceRecord(revealed=dice_pb2.DiceReveal(server_seed=SEED.hex(), outcome_count=3))
    )
    tree = MerkleTree()
    leaves, heads = [], []
    for i, record in enumerate(records):
        data = record.SerializeToString()
        leaves.append(data)
        tree.append(data)
        heads.append(sign_head(SIGNER, GAME, tree, 1000 + i))
    return leaves, heads


def test_an_untouched_log_checks_and_parses() -> None:
    leaves, heads = signed_log()
    assert check_log(GAME, leaves, heads, SIGNER.public_key) is None
    game, problem = parse_log(leaves)
    assert problem is None and game.opened is not None and game.revealed is not None
    assert [o.nonce for o in game.outcomes] == [0, 1, 2]


def test_a_removed_changed_or_added_record_is_named() -> None:
    leaves, heads = signed_log()
    removed = check_log(GAME, leaves[:3] + leaves[4:], heads, SIGNER.public_key)
    assert removed is not None and (removed.code, removed.leaf_index) == ("record_changed", 3)

    edited = dice_pb2.DiceRecord.FromString(leaves[3])
    edited.outcome.values[0] = edited.outcome.values[0] % 6 + 1
    changed = check_log(
        GAME, [*leaves[:3], edited.SerializeToString(), *leaves[4:]], heads, SIGNER.public_key
    )
    assert changed is not None and (changed.code, changed.leaf_index) == ("record_changed", 3)
    assert "nonce 1" in changed.message

    added = check_log(GAME, [*leaves, leaves[3]], heads, SIGNER.public_key)
    assert added is not None and (added.code, added.leaf_index) == ("record_unsigned", 6)

    cut = check_log(GAME, leaves[:-1], heads, SIGNER.public_key)
    assert cut is not None and cut.code == "record_removed"


def test_heads_must_be_signed_by_the_key_for_this_game() -> None:
    leaves, heads = signed_log()
    other = TreeHeadSigner(bytes([1]) * 32)
    bad = check_log(GAME, leaves, heads, other.public_key)
    assert bad is not None and bad.code == "bad_signature"
    forged = dice_pb2.DiceTreeHead()
    forged.CopyFrom(heads[-1])
    forged.timestamp_unix_ms += 1
    bad = check_log(GAME, leaves, [*heads[:-1], forged], SIGNER.public_key)
    assert bad is not None and bad.code == "bad_signature"
    relabelled = dice_pb2.DiceTreeHead()
    relabelled.CopyFrom(heads[-1])
    relabelled.game_id = "g-other"
    bad = check_log(GAME, leaves, [relabelled], SIGNER.public_key)
    assert bad is not None and bad.code == "wrong_game"
    assert check_log(GAME, leaves, [], SIGNER.public_key) is not None


def test_the_opening_order_is_checked() -> None:
    leaves, _ = signed_log()
    _, problem = parse_log([leaves[1], leaves[0], *leaves[2:]])
    assert problem is not None and (problem.code, problem.leaf_index) == ("out_of_order", 0)
    _, problem = parse_log([leaves[0], leaves[2], leaves[1], *leaves[3:]])
    assert problem is not None and (problem.code, problem.leaf_index) == ("out_of_order", 1)
    _, problem = parse_log([*leaves, leaves[2]])
    assert problem is not None and problem.code == "out_of_order"


def test_the_dice_head_never_passes_for_a_ledger_head() -> None:
    _, heads = signed_log()
    ledger_style = SIGNER.sign(heads[0].tree_size, bytes(heads[0].root_hash), 1000)
    assert ledger_style.signature != heads[0].signature
    assert b'"type":"boulevard.dice.tree_head.v1"' in (
        TreeHeadSigner(bytes(32))
        .sign(1, bytes(32), 1, log_id=GAME, head_type="boulevard.dice.tree_head.v1")
        .head.signing_bytes()
    )
