"""The dice head a game's GameFinished records, checked against the dice log the dice service
serves (docs/auditing.md, "The dice anchor"). Pure: no I/O.

The engine asks the dice service for its signed head over every leaf of the game's outcome
log just before it appends GameFinished, and records it there; the reveal comes after
GameFinished (the dice service refuses it before), so it is the one leaf the head cannot
cover. The chain hash of GameFinished — which receipts sign and the ledger anchors — thereby
commits to the moves, the money and the dice at once: a dice log rewritten afterwards, even
re-signed with the dice key, no longer has the anchored root.

What is checked (`anchor_problem`): the head verifies under the dice key its `key_id` names
(one of the keys the auditor holds for the dice service); it covers exactly the leaves the
log serves before its reveal (the served log is those leaves plus the reveal, nothing more);
and its root is the RFC 6962 root of those leaves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from google.protobuf.message import DecodeError

from boulevard.accounting.errors import VerificationFailed
from boulevard.accounting.merkle import MerkleTree
from boulevard.accounting.treehead import verify_tree_head
from boulevard.api.v1 import dice_pb2
from boulevard.contract.dice_log import signed_head_of_ref
from boulevard.games.base import DiceHeadRef


@dataclass(frozen=True, slots=True)
class ServedDiceLog:
    """A game's dice log as the dice service serves it (ListLogRecords), for the anchor
    check: its leaf records in order (None: not served, its seed not revealed), and every
    dice key the auditor trusts, by key_id."""

    leaves: Sequence[bytes] | None
    keys: Mapping[str, bytes]


def anchored_size(leaves: Sequence[bytes]) -> int:
    """How many leaves the head in GameFinished must cover: all those before the reveal,
    which is the served log's last leaf once the game is revealed (every leaf, before)."""
    if not leaves:
        return 0
    last = dice_pb2.DiceRecord()
    try:
        last.ParseFromString(leaves[-1])
    except DecodeError:
        return len(leaves)  # not a reveal: the head must cover it (and cannot, signed)
    return len(leaves) - 1 if last.HasField("revealed") else len(leaves)


def anchor_problem(
    game_id: str,
    head: DiceHeadRef,
    leaves: Sequence[bytes],
    dice_keys: Mapping[str, bytes],
) -> str | None:
    """Why the head GameFinished records does not anchor `leaves` (the game's dice log, leaf
    records as served, in order), or None when it does. `dice_keys`: key_id -> raw Ed25519
    public key of every dice key the auditor trusts (the served key, and those of a key
    history)."""
    key = dice_keys.get(head.key_id)
    if key is None:
        return (
            f"the dice head GameFinished records is signed by key {head.key_id}, which is not "
            "a dice key the auditor holds (the served key, or one of the key history)"
        )
    try:
        verify_tree_head(signed_head_of_ref(game_id, head), key)
    except VerificationFailed as err:
        return f"the dice head GameFinished records does not verify: {err.message}"
    want = anchored_size(leaves)
    if head.tree_size != want:
        after = "the reveal" if want < len(leaves) else "no reveal"
        return (
            f"GameFinished anchors the dice log at {head.tree_size} records; the dice "
            f"service serves {want} before {after} ({len(leaves)} in all): records were "
            + (
                "added after the game ended"
                if want > head.tree_size
                else "removed from the dice log since"
            )
        )
    tree = MerkleTree()
    for data in leaves[:want]:
        tree.append(data)
    root = tree.root()
    if root.hex() != head.root_hash:
        return (
            f"GameFinished anchors the dice log's root {head.root_hash} at size "
            f"{head.tree_size}; the served records have root {root.hex()}: "
            "the dice log was rewritten after the game ended"
        )
    return None
