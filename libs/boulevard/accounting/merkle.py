"""An append-only Merkle tree in the style of RFC 6962 / RFC 9162 (Certificate Transparency).

Leaves are hashed SHA-256(0x00 || data), interior nodes SHA-256(0x01 || left || right), and
a tree of n > 1 leaves splits at k, the largest power of two smaller than n (RFC 6962 §2.1).

Storage: level `h` holds, back to back in one bytearray, the hash of every *complete*
subtree of 2**h leaves seen so far (level 0 are the leaf hashes). Appending adds one leaf
and the ≤ log2(n) parents it completes, so a million entries cost ~64 MB and every root,
inclusion path and consistency path is assembled from O(log n) stored nodes; the only
hashing at proof time is for the ragged right edge of a tree whose size is not a power
of two. Proof *verification* is the RFC 9162 §2.1.3.2 / §2.1.4.2 algorithm, verbatim.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from boulevard.accounting.encoding import (
    HASH_SIZE,
    NODE_PREFIX,
    empty_root,
    leaf_hash,
    node_hash,
)
from boulevard.accounting.errors import ErrorCode, VerificationFailed


def _split(n: int) -> int:
    """The largest power of two strictly smaller than n (n ≥ 2)."""
    return 1 << ((n - 1).bit_length() - 1)


class MerkleTree:
    """The tree over every leaf appended so far; answers for any earlier size too."""

    def __init__(self) -> None:
        self._levels: list[bytearray] = [bytearray()]
        self._size = 0

    @classmethod
    def from_leaf_hashes(cls, leaves: bytes | bytearray) -> MerkleTree:
        """The tree over `leaves`, the leaf hashes back to back (32 bytes each), built level
        by level: the same stored nodes as appending them one by one, in about a fifth of
        the time (no per-append bookkeeping)."""
        if len(leaves) % HASH_SIZE:
            raise ValueError("leaf hashes come in 32-byte units")
        tree = cls()
        row = bytearray(leaves)
        tree._levels = [row]
        tree._size = len(row) // HASH_SIZE
        sha256, prefix, pair = hashlib.sha256, NODE_PREFIX, 2 * HASH_SIZE
        while len(row) >= pair:
            view = bytes(row)
            row = bytearray(
                b"".join(
                    [
                        sha256(prefix + view[i : i + pair]).digest()
                        for i in range(0, len(view) - pair + 1, pair)
                    ]
                )
            )
            tree._levels.append(row)
        return tree

    @property
    def size(self) -> int:
        return self._size

    def leaf_hashes(self, lo: int = 0, hi: int | None = None) -> bytes:
        """The leaf hashes of leaves lo..hi-1, back to back."""
        hi = self._size if hi is None else hi
        if not 0 <= lo <= hi <= self._size:
            raise ValueError(f"leaf range {lo}..{hi} is not in 0..{self._size}")
        return bytes(self._levels[0][lo * HASH_SIZE : hi * HASH_SIZE])

    def frontier(self, size: int | None = None) -> list[bytes]:
        """The right edge of the tree of the first `size` leaves: see `frontier_append`."""
        size = self._size if size is None else size
        self._check_size(size)
        out: list[bytes] = []
        lo = 0
        for level in reversed(range(size.bit_length())):
            if size >> level & 1:
                out.append(self._node(level, lo >> level))
                lo += 1 << level
        return out

    def append(self, data: bytes) -> bytes:
        """Append a leaf by its data; returns the leaf hash."""
        h = leaf_hash(data)
        self.append_leaf_hash(h)
        return h

    def append_leaf_hash(self, h: bytes) -> None:
        """Append a leaf whose RFC 6962 leaf hash is `h`."""
        if len(h) != HASH_SIZE:
            raise ValueError("a leaf hash is 32 bytes")
        levels = self._levels
        levels[0] += h
        index = self._size
        self._size += 1
        level = 0
        # Each time the new node is a right child, its parent subtree just became complete.
        while index & 1:
            row = levels[level]
            end = len(row)
            parent = node_hash(bytes(row[end - 2 * HASH_SIZE : end - HASH_SIZE]), h)
            level += 1
            if level == len(levels):
                levels.append(bytearray())
            levels[level] += parent
            h = parent
            index >>= 1

    def leaf_hash(self, index: int) -> bytes:
        self._check_index(index, self._size)
        return self._node(0, index)

    def _node(self, level: int, index: int) -> bytes:
        start = index * HASH_SIZE
        return bytes(self._levels[level][start : start + HASH_SIZE])

    def _subtree(self, lo: int, hi: int) -> bytes:
        """MTH(D[lo:hi]) for a range that the RFC's recursion produces (lo aligned)."""
        n = hi - lo
        if n & (n - 1) == 0:  # complete: stored
            level = n.bit_length() - 1
            return self._node(level, lo >> level)
        k = _split(n)
        return node_hash(self._subtree(lo, lo + k), self._subtree(lo + k, hi))

    def root(self, size: int | None = None) -> bytes:
        """The tree head hash of the first `size` leaves (default: all)."""
        size = self._size if size is None else size
        self._check_size(size)
        return empty_root() if size == 0 else self._subtree(0, size)

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        """RFC 9162 §2.1.3.1 PATH(index, D[0:size]): sibling hashes, leaf level first."""
        size = self._size if size is None else size
        self._check_size(size)
        self._check_index(index, size)
        path: list[bytes] = []
        lo, hi = 0, size
        while hi - lo > 1:
            k = _split(hi - lo)
            if index < lo + k:
                path.append(self._subtree(lo + k, hi))
                hi = lo + k
            else:
                path.append(self._subtree(lo, lo + k))
                lo = lo + k
        path.reverse()
        return path

    def consistency_proof(self, first: int, second: int | None = None) -> list[bytes]:
        """RFC 9162 §2.1.4.1 PROOF(first, D[0:second]); empty when first == second."""
        second = self._size if second is None else second
        self._check_size(second)
        if not 0 < first <= second:
            raise VerificationFailed(
                ErrorCode.OUT_OF_RANGE, f"need 0 < first ≤ second, got {first} and {second}"
            )
        proof: list[bytes] = []
        lo, hi, m, whole = 0, second, first, True
        # SUBPROOF(m, D[lo:hi], whole), unrolled; nodes come out root-side first.
        while m != hi - lo:
            k = _split(hi - lo)
            if m <= k:
                proof.append(self._subtree(lo + k, hi))
                hi = lo + k
            else:
                proof.append(self._subtree(lo, lo + k))
                lo, m, whole = lo + k, m - k, False
        if not whole:
            proof.append(self._subtree(lo, hi))
        proof.reverse()
        return proof

    def _check_size(self, size: int) -> None:
        if not 0 <= size <= self._size:
            raise VerificationFailed(
                ErrorCode.OUT_OF_RANGE, f"tree size {size} is not in 0..{self._size}"
            )

    @staticmethod
    def _check_index(index: int, size: int) -> None:
        if not 0 <= index < size:
            raise VerificationFailed(
                ErrorCode.OUT_OF_RANGE, f"leaf index {index} is not in a tree of {size}"
            )


def frontier_append(size: int, frontier: Sequence[bytes], leaf: bytes) -> list[bytes]:
    """The frontier of a tree of `size` leaves after appending the leaf hash `leaf`.

    A tree's frontier is the roots of the complete subtrees its size decomposes into, one
    per set bit of the size, largest (leftmost) first: O(log n) hashes, all a writer needs
    to go on appending and to compute the root (`root_from_frontier`). Appending works
    like a binary counter: the new leaf absorbs one frontier node per trailing 1 bit."""
    if len(frontier) != size.bit_count():
        raise ValueError(f"a tree of {size} leaves has {size.bit_count()} frontier nodes")
    if len(leaf) != HASH_SIZE:
        raise ValueError("a leaf hash is 32 bytes")
    out = list(frontier)
    h = leaf
    while size & 1:
        h = node_hash(out.pop(), h)
        size >>= 1
    out.append(h)
    return out


def root_from_frontier(size: int, frontier: Sequence[bytes]) -> bytes:
    """MTH(D[0:size]) from the tree's frontier alone (RFC 6962 §2.1: the split at the
    largest power of two leaves the complete left subtree whole, so the root folds the
    frontier from the right)."""
    if size < 0 or len(frontier) != size.bit_count():
        raise ValueError(f"a tree of {size} leaves has {max(size, 0).bit_count()} frontier nodes")
    for h in frontier:
        if not isinstance(h, bytes) or len(h) != HASH_SIZE:
            raise ValueError("a frontier node is a 32-byte hash")
    if size == 0:
        return empty_root()
    root = frontier[-1]
    for h in reversed(frontier[:-1]):
        root = node_hash(h, root)
    return root


def root_from_inclusion_proof(index: int, size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """RFC 9162 §2.1.3.2: the root that `proof` implies for leaf hash `leaf` at `index`."""
    if not 0 <= index < size:
        raise VerificationFailed(
            ErrorCode.OUT_OF_RANGE, f"leaf index {index} is not in a tree of {size}"
        )
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        _check_hash(p)
        if sn == 0:
            raise VerificationFailed(ErrorCode.INVALID_PROOF, "inclusion proof is too long")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise VerificationFailed(ErrorCode.INVALID_PROOF, "inclusion proof is too short")
    return r


def verify_inclusion(
    index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes
) -> None:
    """Raise unless `proof` shows leaf hash `leaf` at `index` in the tree `(size, root)`."""
    if root_from_inclusion_proof(index, size, leaf, proof) != root:
        raise VerificationFailed(
            ErrorCode.INVALID_PROOF,
            f"leaf {index} is not included in the tree of size {size} with that root",
        )


def verify_consistency(
    first: int, second: int, first_root: bytes, second_root: bytes, proof: Sequence[bytes]
) -> None:
    """RFC 9162 §2.1.4.2: raise unless the tree `(second, second_root)` extends
    `(first, first_root)`. A tree is consistent with itself (empty proof, same root) and
    every tree extends the empty one."""
    for p in proof:
        _check_hash(p)
    if not 0 <= first <= second:
        raise VerificationFailed(
            ErrorCode.OUT_OF_RANGE, f"need first ≤ second, got {first} and {second}"
        )
    if first == 0:
        if proof:
            raise VerificationFailed(ErrorCode.INVALID_PROOF, "proof from the empty tree")
        if first_root != empty_root():
            raise VerificationFailed(ErrorCode.INVALID_PROOF, "wrong root for the empty tree")
        return
    if first == second:
        if proof or first_root != second_root:
            raise VerificationFailed(
                ErrorCode.INVALID_PROOF, f"two different roots for tree size {first}"
            )
        return
    if not proof:
        raise VerificationFailed(ErrorCode.INVALID_PROOF, "empty consistency proof")
    path = list(proof)
    if first & (first - 1) == 0:  # first is a power of two: its root is a node of the path
        path.insert(0, first_root)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise VerificationFailed(ErrorCode.INVALID_PROOF, "consistency proof is too long")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise VerificationFailed(ErrorCode.INVALID_PROOF, "consistency proof is too short")
    if fr != first_root:
        raise VerificationFailed(
            ErrorCode.INVALID_PROOF, f"proof does not lead to the root of tree size {first}"
        )
    if sr != second_root:
        raise VerificationFailed(
            ErrorCode.INVALID_PROOF, f"proof does not lead to the root of tree size {second}"
        )


def _check_hash(h: object) -> None:
    if not isinstance(h, bytes) or len(h) != HASH_SIZE:
        raise VerificationFailed(ErrorCode.INVALID_PROOF, "a proof node is not a 32-byte hash")
