from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from boulevard.accounting import (
    EntrySource,
    ErrorCode,
    JournalAuditor,
    JournalEntry,
    Ledger,
    LedgerError,
    SignedTreeHead,
    TreeHeadSigner,
    VerificationFailed,
    decode_entry,
    postings_from_transfers,
    reconcile,
    verify_chain,
    verify_entry_in_head,
    verify_tree_head,
)
from boulevard.games.base import Transfer

SIGNER = TreeHeadSigner(bytes(range(32)))
OTHER = TreeHeadSigner(bytes(32))


def journal(n: int) -> tuple[Ledger, list[JournalEntry]]:
    ledger = Ledger()
    entries = []
    for i in range(n):
        game = f"g{i % 3}"
        version = i // 3 + 1
        transfers = [Transfer("bank", f"seat:{i % 2}", 10 + i, "payday")]
        entries.append(
            ledger.post(
                EntrySource(game, version, f"e{i}", "Paid", i),
                postings_from_transfers(game, transfers),
            )
        )
    return ledger, entries


def head(ledger: Ledger, size: int) -> SignedTreeHead:
    return SIGNER.sign(size, ledger.tree.root(size), 1000 + size)


def test_signed_tree_heads_verify_and_forgeries_do_not() -> None:
    ledger, _ = journal(5)
    sth = head(ledger, 5)
    verify_tree_head(sth, SIGNER.public_key)
    forged_root = dataclasses.replace(sth.head, root_hash=bytes(32))
    forged_size = dataclasses.replace(sth.head, tree_size=4)
    for bad in (
        SignedTreeHead(forged_root, sth.signature),
        SignedTreeHead(forged_size, sth.signature),
        SignedTreeHead(sth.head, bytes(64)),
    ):
        with pytest.raises(VerificationFailed) as err:
            verify_tree_head(bad, SIGNER.public_key)
        assert err.value.code == ErrorCode.INVALID_SIGNATURE
    # Signed by another key: refused even if that key's own signature is valid.
    with pytest.raises(VerificationFailed):
        verify_tree_head(OTHER.sign(5, sth.head.root_hash, 1), SIGNER.public_key)


def test_the_signed_bytes_are_canonical_json() -> None:
    sth = SIGNER.sign(3, bytes(32), 42)
    assert sth.head.signing_bytes() == (
        b'{"key_id":"'
        + SIGNER.key_id.encode()
        + b'","root_hash":"'
        + b"0" * 64
        + b'","timestamp_unix_ms":42,"tree_size":3,"type":"boulevard.ledger.tree_head.v1"}'
    )


def test_a_bad_seed_is_refused() -> None:
    with pytest.raises(LedgerError) as err:
        TreeHeadSigner(b"short")
    assert err.value.code == ErrorCode.INVALID_KEY


def audit(raws: list[bytes], heads: list[SignedTreeHead], ledger: Ledger) -> JournalAuditor:
    """What `boulevard audit ledger` does with what the service served."""
    auditor = JournalAuditor(SIGNER.public_key)
    for raw in raws:
        auditor.feed(raw)
    prev = None
    for sth in heads:
        proof = (
            ledger.tree.consistency_proof(prev.head.tree_size, sth.head.tree_size)
            if prev is not None and prev.head.tree_size
            else []
        )
        auditor.check_head(sth, proof if prev is not None else None)
        prev = sth
    final = heads[-1]
    for i in range(final.head.tree_size):
        auditor.check_inclusion(i, final, ledger.tree.inclusion_proof(i, final.head.tree_size))
    return auditor


def test_an_honest_journal_passes_the_audit() -> None:
    ledger, entries = journal(20)
    auditor = audit([e.canonical for e in entries], [head(ledger, s) for s in (3, 8, 20)], ledger)
    assert auditor.ledger.balances() == ledger.balances()
    assert verify_chain(entries) == ledger.head_hash


@given(st.integers(2, 25), st.data())
def test_a_modified_entry_is_caught_at_that_entry(n: int, data: st.DataObject) -> None:
    ledger, entries = journal(n)
    i = data.draw(st.integers(0, n - 1))
    e = entries[i]
    bigger = [dataclasses.replace(p, amount=p.amount * 2) for p in e.postings]
    doctored = JournalEntry(e.seq, e.prev_hash, e.source, tuple(bigger))
    raws = [x.canonical for x in entries]
    raws[i] = doctored.canonical
    sth = head(ledger, n)
    with pytest.raises(VerificationFailed) as err:
        audit(raws, [sth], ledger)
    # Either the next entry's link or (for the last one) the signed root gives it away.
    assert (err.value.seq == i + 2) or (i == n - 1 and err.value.code == ErrorCode.ROOT_MISMATCH)
    # And the entry alone no longer fits the signed head.
    with pytest.raises(VerificationFailed) as err:
        verify_entry_in_head(raws[i], sth, SIGNER.public_key, ledger.tree.inclusion_proof(i))
    assert err.value.code == ErrorCode.INVALID_PROOF and err.value.seq == i + 1


@given(st.integers(3, 25), st.data())
def test_reordered_and_dropped_entries_are_caught(n: int, data: st.DataObject) -> None:
    ledger, entries = journal(n)
    raws = [x.canonical for x in entries]
    i = data.draw(st.integers(0, n - 2))
    swapped = [*raws[:i], raws[i + 1], raws[i], *raws[i + 2 :]]
    with pytest.raises(VerificationFailed) as err:
        audit(swapped, [head(ledger, n)], ledger)
    assert err.value.code == ErrorCode.CHAIN_BROKEN and err.value.seq == i + 2
    dropped = raws[:i] + raws[i + 1 :]
    with pytest.raises(VerificationFailed) as err:
        audit(dropped, [head(ledger, n - 1)], ledger)
    assert err.value.code == ErrorCode.CHAIN_BROKEN and err.value.seq == i + 2
    with pytest.raises(VerificationFailed) as err:
        verify_chain([decode_entry(r) for r in dropped])
    assert err.value.code == ErrorCode.CHAIN_BROKEN and err.value.seq == i + 2
    # A slice of the journal checks from where it starts.
    assert verify_chain(entries[i + 1 :], after_seq=i + 1, after_hash=entries[i].hash) == (
        ledger.head_hash
    )


def test_a_forged_tree_head_is_caught() -> None:
    ledger, entries = journal(10)
    raws = [e.canonical for e in entries]
    honest = head(ledger, 10)
    # A valid signature, by the wrong key.
    with pytest.raises(VerificationFailed) as err:
        audit(raws, [OTHER.sign(10, ledger.tree.root(), 1)], ledger)
    assert err.value.code == ErrorCode.INVALID_SIGNATURE
    # The right key signing a root that the entries do not hash to.
    with pytest.raises(VerificationFailed) as err:
        audit(raws, [SIGNER.sign(10, ledger.tree.root(9), 1)], ledger)
    assert err.value.code == ErrorCode.ROOT_MISMATCH
    # A head for more entries than were served.
    with pytest.raises(VerificationFailed) as err:
        audit(raws[:9], [honest], ledger)
    assert err.value.code == ErrorCode.OUT_OF_RANGE


def test_heads_that_fork_history_are_inconsistent() -> None:
    ledger, entries = journal(9)
    forked = Ledger()
    for e in entries[:4]:
        forked.append(e)
    forked.post(
        EntrySource("g9", 1, "x", "Paid", 0),
        postings_from_transfers("g9", [Transfer("bank", "seat:0", 1, "r")]),
    )
    auditor = JournalAuditor(SIGNER.public_key)
    for e in entries:
        auditor.feed(e.canonical)
    auditor.last_head = SIGNER.sign(5, forked.tree.root(5), 1)
    with pytest.raises(VerificationFailed) as err:
        auditor.check_head(head(ledger, 9), ledger.tree.consistency_proof(5, 9))
    assert err.value.code == ErrorCode.INVALID_PROOF


def test_reconcile_finds_the_first_divergence() -> None:
    ledger = Ledger()
    entries = [
        ledger.post(
            EntrySource("g", 1, "a", "GameCreated", 0),
            postings_from_transfers(
                "g", [Transfer("bank", "seat:0", 10, "start"), Transfer("bank", "seat:1", 10, "s")]
            ),
        ),
        ledger.post(
            EntrySource("g", 3, "c", "RentPaid", 0),
            postings_from_transfers("g", [Transfer("seat:0", "seat:1", 4, "rent")]),
        ),
    ]
    honest = [(1, {0: 10, 1: 10}), (2, {0: 10, 1: 10}), (3, {0: 6, 1: 14})]
    assert reconcile("g", entries, honest) is None
    wrong = [(1, {0: 10, 1: 10}), (2, {0: 10, 1: 10}), (3, {0: 6, 1: 13})]
    d = reconcile("g", entries, wrong)
    assert d is not None and (d.version, d.seat, d.ledger_balance, d.game_money) == (3, 1, 14, 13)
    assert "version 3: seat 1 has 14 in the ledger but 13 in the game" in str(d)
    # Money the game moved with no entry in the ledger.
    missing = reconcile("g", entries[:1], honest)
    assert missing is not None and (missing.version, missing.seat) == (3, 0)
    # An entry for an event the game does not have.
    extra = reconcile("g", entries, honest[:2])
    assert extra is not None and extra.version == 3


def test_the_worked_example_in_docs_ledger_md() -> None:
    ledger = Ledger()
    e1 = ledger.post(
        EntrySource("g-7f3a", 1, "g-7f3a-1", "GameCreated", 1764430000000),
        postings_from_transfers(
            "g-7f3a",
            [
                Transfer("bank", "seat:0", 10, "starting money"),
                Transfer("bank", "seat:1", 10, "starting money"),
            ],
        ),
    )
    e2 = ledger.post(
        EntrySource("g-7f3a", 4, "g-7f3a-4", "RentPaid", 1764430005000),
        postings_from_transfers("g-7f3a", [Transfer("seat:0", "seat:1", 3, "rent")]),
    )
    assert e1.hash.hex() == "10e4a9618452f35fa2b6c6b63a3a45e7604229728573442197edbbaa0c4214cf"
    assert e2.hash.hex() == "f733f1ca765a6a09d6d47b337045c4038f11e8896ee233ebd5747410875a5104"
    root = ledger.tree.root()
    assert root.hex() == "cd818dcda4f066c2e40f5ba66d2a9ae804729e7dc6a38eefb762b1f9456c5d47"
    assert SIGNER.public_key.hex() == (
        "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8"
    )
    sth = SIGNER.sign(2, root, 1764430006000)
    assert sth.signature.hex() == (
        "930f789587d3e9b4acfbad451b4bd1d68c46ad4caf42e537f16cbdb0f3ab5beb"
        "a63b95bcdd3a02178870167c79b03eba25b915f5bf7401e45e42b967b66f3501"
    )
