"""The tree frontier a ledger checkpoint stores: the O(log n) right-edge hashes that are
enough to compute the root and to go on appending; and the bulk build from leaf hashes."""

from __future__ import annotations

import hashlib

import pytest

from boulevard.accounting import (
    Ledger,
    MerkleTree,
    TreeHeadSigner,
    VerificationFailed,
    frontier_append,
    leaf_hash,
    root_from_frontier,
    verify_document,
)
from boulevard.accounting.accounts import AccountId
from boulevard.accounting.treehead import TREE_HEAD_TYPE

from . import rfc6962


def data(i: int) -> bytes:
    return f"entry {i}".encode()


def test_the_root_from_the_frontier_is_the_rfc_root_for_every_size_up_to_300() -> None:
    tree = MerkleTree()
    items: list[bytes] = []
    for n in range(301):
        frontier = tree.frontier()
        assert len(frontier) == n.bit_count()
        assert root_from_frontier(n, frontier) == rfc6962.mth(items) == tree.root()
        items.append(data(n))
        tree.append(items[-1])


def test_appending_to_a_frontier_follows_the_full_tree() -> None:
    """Start from the frontier of any size, append leaves to the frontier alone: its root
    stays the full tree's at every size (what a restart from a checkpoint relies on)."""
    full = MerkleTree()
    for start in (0, 1, 2, 3, 7, 8, 13, 64, 100, 255, 256, 257):
        while full.size < start:
            full.append(data(full.size))
        frontier, size = full.frontier(), start
        tree = MerkleTree.from_leaf_hashes(full.leaf_hashes())
        for i in range(start, start + 70):
            h = leaf_hash(data(i))
            frontier = frontier_append(size, frontier, h)
            size += 1
            tree.append_leaf_hash(h)
            assert root_from_frontier(size, frontier) == tree.root()
            assert frontier == tree.frontier()


def test_large_sizes_and_earlier_frontiers() -> None:
    tree = MerkleTree()
    h = hashlib.sha256(b"seed").digest()
    for _ in range(5000):
        tree.append_leaf_hash(h)
        h = hashlib.sha256(h).digest()
    for size in (0, 1, 1023, 1024, 1025, 4095, 4096, 4097, 4999, 5000):
        assert root_from_frontier(size, tree.frontier(size)) == tree.root(size)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, 31, 32, 33, 1000, 4097])
def test_a_tree_built_from_leaf_hashes_is_the_appended_tree(n: int) -> None:
    appended = MerkleTree()
    for i in range(n):
        appended.append(data(i))
    built = MerkleTree.from_leaf_hashes(appended.leaf_hashes())
    assert built.size == n
    assert built._levels == appended._levels  # the same stored nodes, level by level
    for m in range(1, n + 1, max(1, n // 7)):
        assert built.root(m) == appended.root(m)
        assert built.inclusion_proof(m - 1, n) == appended.inclusion_proof(m - 1, n)
        assert built.consistency_proof(m, n) == appended.consistency_proof(m, n)
    built.append(data(n))
    appended.append(data(n))
    assert built.root() == appended.root()


def test_malformed_frontiers_and_leaves_are_refused() -> None:
    tree = MerkleTree()
    for i in range(6):
        tree.append(data(i))
    frontier = tree.frontier()  # 6 = 4 + 2: two nodes
    with pytest.raises(ValueError, match="frontier nodes"):
        root_from_frontier(7, frontier)
    with pytest.raises(ValueError, match="frontier nodes"):
        frontier_append(4, frontier, leaf_hash(b"x"))
    with pytest.raises(ValueError, match="32-byte"):
        root_from_frontier(6, [frontier[0], b"short"])
    with pytest.raises(ValueError, match="32-byte units"):
        MerkleTree.from_leaf_hashes(b"\x00" * 33)
    # A changed frontier node changes the root: a wrong frontier cannot pass for the tree.
    forged = [frontier[0], hashlib.sha256(b"forged").digest()]
    assert root_from_frontier(6, forged) != tree.root()


def test_a_restored_ledger_refuses_states_no_entries_could_reach() -> None:
    tree = MerkleTree()
    for i in range(3):
        tree.append(data(i))
    bank, seat = AccountId("g", "bank"), AccountId("g", "seat:0")
    keys = [("g", 1), ("g", 2), ("g", 3)]
    ledger = Ledger.restore(tree, {bank: -9, seat: 9}, keys)
    assert ledger.head_hash == tree.leaf_hash(2) and ledger.is_posted("g", 2)
    assert ledger.balances("g") == {bank: -9, seat: 9}
    with pytest.raises(VerificationFailed, match="sum to \\+1"):
        Ledger.restore(tree, {bank: -9, seat: 10}, keys)
    with pytest.raises(VerificationFailed, match="below zero"):
        Ledger.restore(tree, {bank: 9, seat: -9}, keys)
    with pytest.raises(VerificationFailed, match="posted twice"):
        Ledger.restore(tree, {}, [("g", 1), ("g", 1), ("g", 3)])
    with pytest.raises(VerificationFailed, match="2 durable keys"):
        Ledger.restore(tree, {}, keys[:2])


def test_a_signed_document_is_never_a_tree_head() -> None:
    signer = TreeHeadSigner(bytes(range(32)))
    doc = {"type": "boulevard.ledger.checkpoint.v1", "tree_size": 3}
    signature = signer.sign_document(doc)
    verify_document(doc, signature, signer.public_key)
    with pytest.raises(VerificationFailed, match="bad signature"):
        verify_document({**doc, "tree_size": 4}, signature, signer.public_key)
    with pytest.raises(VerificationFailed):
        verify_document(doc, signature, TreeHeadSigner(bytes(32)).public_key)
    with pytest.raises(Exception, match="names its own type"):
        signer.sign_document({"type": TREE_HEAD_TYPE, "tree_size": 3})
