"""The one-record form of the outcome log (`DiceSignedLeaf`: a leaf and the head over the tree
that ends with it, in one message) read beside the two-message form of older releases: the
leaves and heads an auditor is served are the same bytes either way, and a dishonest operator
(who holds the dice key and can write the subject) cannot make a head that does not cover its
own leaf, or a leaf stored without a head, pass — neither for the dice service reading its own
log (`signed_view`) nor for an auditor of the raw log (`split_messages` + `check_log`). And a
log the previous release wrote (tests/golden/dice/) reads and audits with today's code."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from boulevard.accounting.merkle import MerkleTree
from boulevard.accounting.treehead import TreeHeadSigner
from boulevard.api.v1 import dice_pb2
from boulevard.contract.dice import to_recorded
from boulevard.contract.dice_log import check_log, parse_log, signed_view, split_messages
from boulevard.fairness import verify_game
from services.dice.heads import sign_head
from tests.unit.fairness.test_accounted import GAME, SIGNER, signed_log

Message = tuple[dice_pb2.DiceRecord, bytes]


def message(record: dice_pb2.DiceRecord) -> Message:
    return record, record.SerializeToString()


def one_record_form(leaves: list[bytes], heads: list[dice_pb2.DiceTreeHead]) -> list[Message]:
    return [
        message(dice_pb2.DiceRecord(signed_leaf=dice_pb2.DiceSignedLeaf(leaf=leaf, head=head)))
        for leaf, head in zip(leaves, heads, strict=True)
    ]


def two_message_form(leaves: list[bytes], heads: list[dice_pb2.DiceTreeHead]) -> list[Message]:
    out = []
    for leaf, head in zip(leaves, heads, strict=True):
        out.append((dice_pb2.DiceRecord.FromString(leaf), leaf))
        out.append(message(dice_pb2.DiceRecord(head=head)))
    return out


def audit(messages: list[Message], signer: TreeHeadSigner = SIGNER) -> str | None:
    """What an auditor of the raw log finds: None, or the problem's code."""
    leaves, heads = split_messages(messages)
    problem = check_log(GAME, leaves, heads, signer.public_key)
    if problem is None:
        _, problem = parse_log(leaves)
    return None if problem is None else problem.code


def signed_leaf(leaf: bytes, head: dice_pb2.DiceTreeHead | None) -> Message:
    inner = dice_pb2.DiceSignedLeaf(leaf=leaf)
    if head is not None:
        inner.head.CopyFrom(head)
    return message(dice_pb2.DiceRecord(signed_leaf=inner))


def tree_of(leaves: list[bytes]) -> MerkleTree:
    tree = MerkleTree()
    for leaf in leaves:
        tree.append(leaf)
    return tree


def test_both_forms_serve_the_same_leaves_and_heads_and_read_alike() -> None:
    leaves, heads = signed_log()
    for messages in (one_record_form(leaves, heads), two_message_form(leaves, heads)):
        assert split_messages(messages) == (leaves, heads)
        view = signed_view(GAME, messages, SIGNER.public_key)
        assert view.trusted == leaves and not view.skipped and not view.tail
        assert view.signed_size == len(leaves) and view.head == heads[-1]
        assert audit(messages) is None


def test_a_log_begun_in_the_old_form_goes_on_in_the_new() -> None:
    """A rolling upgrade: the first leaves written apart, a crash's lone leaf signed by a
    head alone on the next load, then the one-record form."""
    leaves, heads = signed_log()
    old = two_message_form(leaves[:3], heads[:3])
    lone = [(dice_pb2.DiceRecord.FromString(leaves[3]), leaves[3])]
    view = signed_view(GAME, old + lone, SIGNER.public_key)
    assert view.tail == [len(old)] and view.signed_size == 3  # the leaf the load signs
    repaired = [*old, *lone, message(dice_pb2.DiceRecord(head=heads[3]))]
    mixed = repaired + one_record_form(leaves[4:], heads[4:])
    view = signed_view(GAME, mixed, SIGNER.public_key)
    assert view.trusted == leaves and not view.skipped and not view.tail
    assert split_messages(mixed) == (leaves, heads)
    assert audit(mixed) is None


def test_a_head_that_does_not_cover_its_own_leaf_is_not_the_services() -> None:
    """The operator stores a leaf with a good signature over the tree WITHOUT that leaf
    (its size one short), or over the tree with another leaf in its place: the service
    skips the whole message (never drawing on from its leaf), and the audit fails."""
    leaves, heads = signed_log()
    honest = one_record_form(leaves[:3], heads[:3])
    short = signed_leaf(leaves[3], sign_head(SIGNER, GAME, tree_of(leaves[:3]), 9))
    other = signed_leaf(leaves[3], sign_head(SIGNER, GAME, tree_of([*leaves[:3], b"x"]), 9))
    ahead = signed_leaf(leaves[3], sign_head(SIGNER, GAME, tree_of(leaves[:5]), 9))
    for forged, code in ((short, "record_unsigned"), (other, "record_changed"), (ahead, None)):
        messages = [*honest, forged]
        view = signed_view(GAME, messages, SIGNER.public_key)
        assert view.skipped == [3] and view.trusted == leaves[:3] and not view.tail
        if code is not None:
            assert audit(messages) == code
    # A head covering the leaf after its own is not a head of this record either: with the
    # next leaf stored alone after it, the raw log may audit (both leaves signed, in order)
    # but the service reads only what it wrote, one leaf per head, and skips both.
    messages = [*honest, ahead, (dice_pb2.DiceRecord.FromString(leaves[4]), leaves[4])]
    view = signed_view(GAME, messages, SIGNER.public_key)
    assert view.skipped == [3] and view.tail == [4]


def test_a_leaf_stored_without_its_head_passes_for_nobody() -> None:
    leaves, heads = signed_log()
    honest = one_record_form(leaves[:3], heads[:3])
    bare = [*honest, signed_leaf(leaves[3], None)]
    view = signed_view(GAME, bare, SIGNER.public_key)
    assert view.skipped == [3] and not view.tail  # never vouched for and signed on load
    assert audit(bare) == "record_unsigned"


def test_a_head_of_another_game_or_key_or_a_copied_record_is_skipped() -> None:
    leaves, heads = signed_log()
    honest = one_record_form(leaves[:3], heads[:3])
    tree = tree_of(leaves[:4])
    elsewhere = signed_leaf(leaves[3], sign_head(SIGNER, "g-other", tree, 9))
    stranger = TreeHeadSigner(bytes([7]) * 32)
    foreign = signed_leaf(leaves[3], sign_head(stranger, GAME, tree, 9))
    replayed = one_record_form(leaves, heads)[2]  # an honest record stored twice
    for forged, code in (
        (elsewhere, "wrong_game"),
        (foreign, "bad_signature"),
        (replayed, "record_unsigned"),
    ):
        messages = [*honest, forged]
        view = signed_view(GAME, messages, SIGNER.public_key)
        assert view.skipped == [3] and view.trusted == leaves[:3], code
        assert audit(messages) == code


def test_a_signed_leaf_inside_a_signed_leaf_is_no_leaf() -> None:
    """Signed by the key's holder, so its head checks, but the leaf is not a leaf record:
    the audit's parse names it (the service refuses to extend such a log)."""
    leaves, heads = signed_log()
    honest = one_record_form(leaves[:3], heads[:3])
    nested = honest[0][1]
    forged = signed_leaf(nested, sign_head(SIGNER, GAME, tree_of([*leaves[:3], nested]), 9))
    messages = [*honest, forged]
    view = signed_view(GAME, messages, SIGNER.public_key)
    assert view.trusted[-1] == nested
    _, problem = parse_log(view.trusted)
    assert problem is not None and problem.code == "malformed_record" and problem.leaf_index == 3
    assert audit(messages) == "malformed_record"


# ---- a log as the release before the one-record form wrote it ------------------------------

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "dice" / "two-message-form.json"


def golden() -> tuple[dict[str, Any], list[Message]]:
    """A finished game's DICE messages, recorded from the dice service of main 7ba1924."""
    kept = json.loads(GOLDEN.read_text())
    messages = []
    for encoded in kept["messages"]:
        data = base64.b64decode(encoded)
        messages.append((dice_pb2.DiceRecord.FromString(data), data))
    return kept, messages


def test_a_two_message_log_of_the_previous_release_reads_and_audits_today() -> None:
    kept, messages = golden()
    game_id, key = kept["game_id"], bytes.fromhex(kept["public_key"])
    assert [r.WhichOneof("record") for r, _ in messages] == [
        *("opened", "head", "seeds", "head"),
        *("outcome", "head") * 3,
        *("revealed", "head"),
    ]
    leaves, heads = split_messages(messages)
    assert len(leaves) == len(heads) == 6
    assert check_log(game_id, leaves, heads, key) is None
    game, problem = parse_log(leaves)
    assert problem is None and game.opened is not None and game.revealed is not None
    report = verify_game(
        commitment=game.opened.commitment,
        revealed_seed_hex=game.revealed.server_seed,
        client_seeds=kept["client_seeds"],
        game_id=game_id,
        outcomes=[to_recorded(o) for o in game.outcomes],
        expected_count=game.revealed.outcome_count,
        scheme=game.opened.scheme,
        client_seed_commitments=list(game.opened.client_seed_commitments),
    )
    assert report.ok and report.checked == 3, report
    view = signed_view(game_id, messages, key)
    assert view.trusted == leaves and not view.skipped and not view.tail

    # The crash between the reveal and its head: the reveal is the one leaf the service
    # would sign on load; the raw log fails until it does.
    crashed = messages[:-1]
    view = signed_view(game_id, crashed, key)
    assert view.tail == [len(crashed) - 1] and view.signed_size == 5
    leaves, heads = split_messages(crashed)
    problem = check_log(game_id, leaves, heads, key)
    assert problem is not None and problem.code == "record_unsigned"
