"""The dice service signs a tree head after every leaf of a game's outcome log: the
service holds the key, so signing is its own; what a head is and how an auditor checks one
is the contract's (`boulevard.contract.dice_log`)."""

from __future__ import annotations

from boulevard.accounting.merkle import MerkleTree
from boulevard.accounting.treehead import TreeHeadSigner
from boulevard.api.v1 import dice_pb2
from boulevard.contract.dice_log import DICE_TREE_HEAD_TYPE


def sign_head(
    signer: TreeHeadSigner, game_id: str, tree: MerkleTree, timestamp_unix_ms: int
) -> dice_pb2.DiceTreeHead:
    """The service's signed head over the game's whole tree as it stands."""
    sth = signer.sign(
        tree.size,
        tree.root(),
        timestamp_unix_ms,
        log_id=game_id,
        head_type=DICE_TREE_HEAD_TYPE,
    )
    return dice_pb2.DiceTreeHead(
        game_id=game_id,
        tree_size=sth.head.tree_size,
        root_hash=sth.head.root_hash,
        timestamp_unix_ms=sth.head.timestamp_unix_ms,
        key_id=sth.head.key_id,
        signature=sth.signature,
    )
