from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from boulevard.accounting import (
    ErrorCode,
    MerkleTree,
    VerificationFailed,
    empty_root,
    leaf_hash,
    verify_consistency,
    verify_inclusion,
)

from . import rfc6962


def tree_of(n: int) -> tuple[MerkleTree, list[bytes]]:
    data = [f"entry {i}".encode() for i in range(n)]
    t = MerkleTree()
    for d in data:
        t.append(d)
    return t, data


def test_empty_tree_root_is_sha256_of_nothing() -> None:
    assert MerkleTree().root() == hashlib.sha256(b"").digest() == empty_root()


def test_known_answer_from_the_certificate_transparency_test_vectors() -> None:
    # The 8 leaves used by the RFC 6962 reference tests (certificate-transparency-go,
    # merkle/testonly): roots of every prefix are known.
    leaves = [
        b"",
        b"\x00",
        b"\x10",
        b"\x20\x21",
        b"\x30\x31",
        b"\x40\x41\x42\x43",
        b"\x50\x51\x52\x53\x54\x55\x56\x57",
        b"\x60\x61\x62\x63\x64\x65\x66\x67\x68\x69\x6a\x6b\x6c\x6d\x6e\x6f",
    ]
    roots = [
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
    ]
    t = MerkleTree()
    for leaf, root in zip(leaves, roots, strict=True):
        t.append(leaf)
        assert t.root().hex() == root


@given(st.integers(1, 70), st.data())
def test_root_and_inclusion_proofs_match_the_rfc_definition(n: int, data: st.DataObject) -> None:
    t, d = tree_of(n)
    size = data.draw(st.integers(1, n))
    index = data.draw(st.integers(0, size - 1))
    assert t.root(size) == rfc6962.mth(d[:size])
    proof = t.inclusion_proof(index, size)
    assert proof == rfc6962.path(index, d[:size])
    verify_inclusion(index, size, leaf_hash(d[index]), proof, t.root(size))


@given(st.integers(1, 70), st.data())
def test_consistency_proofs_between_arbitrary_sizes(n: int, data: st.DataObject) -> None:
    t, d = tree_of(n)
    second = data.draw(st.integers(1, n))
    first = data.draw(st.integers(1, second))
    proof = t.consistency_proof(first, second)
    if first < second:
        assert proof == rfc6962.proof(first, d[:second])
    else:
        assert proof == []
    verify_consistency(first, second, t.root(first), t.root(second), proof)


def test_every_pair_of_sizes_up_to_40_is_consistent() -> None:
    t, _ = tree_of(40)
    roots = [t.root(s) for s in range(41)]
    for second in range(41):
        for first in range(second + 1):
            proof = t.consistency_proof(first, second) if first else []
            verify_consistency(first, second, roots[first], roots[second], proof)


@given(st.integers(2, 64), st.data())
def test_inclusion_fails_for_a_modified_entry(n: int, data: st.DataObject) -> None:
    t, d = tree_of(n)
    i = data.draw(st.integers(0, n - 1))
    proof = t.inclusion_proof(i, n)
    with pytest.raises(VerificationFailed) as err:
        verify_inclusion(i, n, leaf_hash(d[i] + b"!"), proof, t.root())
    assert err.value.code == ErrorCode.INVALID_PROOF


@given(st.integers(2, 64), st.data())
def test_inclusion_fails_for_an_entry_at_another_position(n: int, data: st.DataObject) -> None:
    t, d = tree_of(n)
    i = data.draw(st.integers(0, n - 1))
    j = data.draw(st.integers(0, n - 1).filter(lambda j: j != i))
    with pytest.raises(VerificationFailed):
        verify_inclusion(j, n, leaf_hash(d[i]), t.inclusion_proof(i, n), t.root())
    with pytest.raises(VerificationFailed):
        verify_inclusion(j, n, leaf_hash(d[i]), t.inclusion_proof(j, n), t.root())


def test_reordered_or_dropped_entries_change_the_root() -> None:
    t, d = tree_of(10)
    swapped = MerkleTree()
    for x in [d[1], d[0], *d[2:]]:
        swapped.append(x)
    dropped = MerkleTree()
    for x in d[:4] + d[5:]:
        dropped.append(x)
    assert swapped.root() != t.root()
    assert dropped.root() != t.root(9)
    # A proof from the honest tree does not place an entry in the doctored ones.
    with pytest.raises(VerificationFailed):
        verify_inclusion(0, 10, leaf_hash(d[0]), t.inclusion_proof(0), swapped.root())
    with pytest.raises(VerificationFailed):
        verify_inclusion(7, 9, leaf_hash(d[8]), dropped.inclusion_proof(7), t.root(9))


@given(st.integers(2, 64), st.data())
def test_consistency_fails_for_rewritten_history(n: int, data: st.DataObject) -> None:
    t, d = tree_of(n)
    first = data.draw(st.integers(1, n - 1))
    changed = data.draw(st.integers(0, first - 1))
    forked = MerkleTree()
    for i, x in enumerate(d):
        forked.append(x + b"forged" if i == changed else x)
    proof = forked.consistency_proof(first, n)
    with pytest.raises(VerificationFailed):
        verify_consistency(first, n, t.root(first), forked.root(n), proof)
    if proof != t.consistency_proof(first, n):
        with pytest.raises(VerificationFailed):
            verify_consistency(first, n, t.root(first), t.root(n), proof)


@given(st.integers(3, 64), st.data())
def test_tampered_proofs_fail(n: int, data: st.DataObject) -> None:
    t, d = tree_of(n)
    first = data.draw(st.integers(1, n - 1))
    proof = t.consistency_proof(first, n)
    k = data.draw(st.integers(0, len(proof) - 1))
    bad = [*proof[:k], bytes(32), *proof[k + 1 :]]
    with pytest.raises(VerificationFailed):
        verify_consistency(first, n, t.root(first), t.root(n), bad)
    with pytest.raises(VerificationFailed):
        verify_consistency(first, n, t.root(first), t.root(n), proof[:-1])
    with pytest.raises(VerificationFailed):
        verify_consistency(first, n, t.root(first), t.root(n), [*proof, bytes(32)])
    i = data.draw(st.integers(0, n - 1))
    inc = t.inclusion_proof(i)
    with pytest.raises(VerificationFailed):
        verify_inclusion(i, n, leaf_hash(d[i]), inc[:-1], t.root())
    with pytest.raises(VerificationFailed):
        verify_inclusion(i, n, leaf_hash(d[i]), [*inc, bytes(32)], t.root())


def test_out_of_range_requests_are_refused_with_a_code() -> None:
    t, _ = tree_of(5)
    for call in (
        lambda: t.inclusion_proof(5),
        lambda: t.inclusion_proof(0, 6),
        lambda: t.consistency_proof(0, 3),
        lambda: t.consistency_proof(4, 3),
        lambda: t.root(6),
    ):
        with pytest.raises(VerificationFailed) as err:
            call()
        assert err.value.code == ErrorCode.OUT_OF_RANGE


@settings(max_examples=5, deadline=None)
@given(st.data())
def test_a_tree_of_a_million_entries_serves_short_proofs(data: st.DataObject) -> None:
    t = _million()
    n = t.size
    i = data.draw(st.integers(0, n - 1))
    size = data.draw(st.integers(i + 1, n))
    proof = t.inclusion_proof(i, size)
    assert len(proof) <= 20
    verify_inclusion(i, size, t.leaf_hash(i), proof, t.root(size))
    first = data.draw(st.integers(1, n))
    verify_consistency(first, n, t.root(first), t.root(n), t.consistency_proof(first, n))


_BIG: list[MerkleTree] = []


def _million() -> MerkleTree:
    if not _BIG:
        t = MerkleTree()
        h = hashlib.sha256(b"seed").digest()
        for _ in range(1_000_000):
            t.append_leaf_hash(h)
            h = hashlib.sha256(h).digest()
        _BIG.append(t)
    return _BIG[0]
