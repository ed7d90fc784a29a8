"""Entries a ledger operator (holding the ledger's key) could chain and sign that no
honest event explains, beyond those tests/unit/accounting/test_audit.py covers."""

from __future__ import annotations

import pytest

from boulevard.accounting import (
    AccountId,
    EntrySource,
    ErrorCode,
    JournalAuditor,
    JournalEntry,
    Ledger,
    LedgerError,
    Posting,
    postings_from_transfers,
    reconcile,
)
from boulevard.cli import audit_game, audit_ledger
from boulevard.games.base import Transfer
from tests.unit.accounting.test_audit import SIGNER


def starting_money(ledger: Ledger, game: str) -> JournalEntry:
    transfers = [Transfer("bank", "seat:0", 5, "start")]
    return ledger.post(EntrySource(game, 1), postings_from_transfers(game, transfers))


def test_an_entry_of_one_game_that_moves_another_games_money_is_refused() -> None:
    """Game g-a's entry for its version 2 (an event that moves nothing) pays seat 0 of game
    g-b out of g-b's bank. Reconciling g-a looked only at g-a's book, reconciling g-b only
    at g-b's entries, and the game audit of each only at its own: the money appeared in
    g-b's book with no event behind it, and every audit passed."""
    ledger = Ledger()
    honest = [starting_money(ledger, "g-a"), starting_money(ledger, "g-b")]
    forged = JournalEntry(
        seq=ledger.size + 1,
        prev_hash=ledger.head_hash,
        source=EntrySource("g-a", 2, "g-a-2", "DiceRolled", 1),
        postings=(
            Posting(AccountId("g-b", "bank"), -100, "gift"),
            Posting(AccountId("g-b", "seat:0"), 100, "gift"),
        ),
    )
    auditor = JournalAuditor(SIGNER.public_key)
    for entry in honest:
        auditor.feed(entry.canonical)
    with pytest.raises(LedgerError) as err:
        auditor.feed(forged.canonical)
    assert err.value.code == ErrorCode.INVALID_ACCOUNT and err.value.seq == 3
    assert "g-b/bank" in err.value.message
    # The service refuses to post it too, and nothing changes.
    with pytest.raises(LedgerError) as err:
        ledger.append(forged)
    assert err.value.code == ErrorCode.INVALID_ACCOUNT and ledger.size == 2
    # `audit ledger --game g-a` replays only g-a's entries: the same rule.
    with pytest.raises(audit_ledger.AuditFailed, match=r"entry 3: .*g-b/bank"):
        audit_ledger.check_game_rules("g-a", [honest[0], forged])
    # `audit game g-a` compares the ledger's postings for each version with the event's
    # transfers: a posting in another book is one the event does not make.
    by_version = audit_game.postings_by_version("g-a", [honest[0], forged])
    assert by_version[2] == [("g-b/bank", -100), ("g-b/seat:0", 100)]


def test_a_games_listing_that_hides_an_entry_of_the_journal_fails() -> None:
    """The ledger credits seat 0 of g-a with 100 at a version that moves nothing, then
    leaves that entry out when asked for g-a's entries (ListEntries game_id=g-a) while
    serving it in the whole journal. The whole-journal audit saw a valid chain; the
    reconciliation and `audit game` saw g-a's listing, which agrees with the game: every
    audit passed, and GetBalances showed 100 the game never paid."""
    ledger = Ledger()
    honest = starting_money(ledger, "g-a")
    credit = ledger.post(
        EntrySource("g-a", 2, "g-a-2", "DiceRolled", 1),
        postings_from_transfers("g-a", [Transfer("bank", "seat:0", 100, "gift")]),
    )
    auditor = JournalAuditor(SIGNER.public_key)
    for entry in (honest, credit):
        auditor.feed(entry.canonical)
    money = [(1, {0: 5}), (2, {0: 5})]
    assert reconcile("g-a", [honest], money) is None  # the listing the ledger served
    assert reconcile("g-a", [honest, credit], money) is not None  # the journal's
    assert auditor.seqs_by_game == {"g-a": [1, 2]}
    audit_ledger.check_game_listing("g-a", [1, 2], auditor.seqs_by_game["g-a"])
    with pytest.raises(audit_ledger.AuditFailed, match=r"game g-a: .* entry 2"):
        audit_ledger.check_game_listing("g-a", [1], auditor.seqs_by_game["g-a"])
    with pytest.raises(audit_ledger.AuditFailed, match=r"game g-a: .* entry 7"):
        audit_ledger.check_game_listing("g-a", [1, 2, 7], auditor.seqs_by_game["g-a"])


def test_no_balance_leaves_the_range_every_reader_holds_exactly() -> None:
    """Amounts are bounded by 2**53 - 1 so every JSON reader (jq, JavaScript) is exact, and
    balances travel as int64 (GetBalances). Balances were not bounded: two entries of the
    largest amount put a seat at 2**54 - 2, which jq (docs/ledger.md's by-hand check) sums
    inexactly, and enough of them past 2**63, which an int64 auditor wraps to a negative
    number and GetBalances cannot even encode. Python's audit passed either journal."""
    top = 2**53 - 1
    ledger = Ledger()
    first = ledger.post(
        EntrySource("g-a", 1),
        postings_from_transfers("g-a", [Transfer("bank", "seat:0", top, "x")]),
    )
    second = JournalEntry(
        seq=2,
        prev_hash=first.hash,
        source=EntrySource("g-a", 2),
        postings=postings_from_transfers("g-a", [Transfer("bank", "seat:0", top, "x")]),
    )
    auditor = JournalAuditor(SIGNER.public_key)
    auditor.feed(first.canonical)
    with pytest.raises(LedgerError) as err:
        auditor.feed(second.canonical)
    assert err.value.code == ErrorCode.INVALID_AMOUNT and err.value.seq == 2
    assert "outside ±(2**53 - 1)" in err.value.message


def test_the_journal_names_the_finished_games_audit_all_must_find() -> None:
    """`audit all` audits the games the engine lists as finished (ListGames, its word): a
    forged game left out of the listing escaped it, with a PASS. The verified journal
    anchors every finished game's end, so those are the games it must have audited."""
    ledger = Ledger()
    first = starting_money(ledger, "g-a")
    anchor = ledger.anchor(EntrySource("g-a", 9, "g-a-9", "GameFinished"), bytes(32))
    other = starting_money(ledger, "g-b")
    auditor = JournalAuditor(SIGNER.public_key)
    for entry in (first, anchor, other):
        auditor.feed(entry.canonical)
    assert auditor.anchored == {"g-a"}
    assert audit_game.unlisted(sorted(auditor.anchored), ["g-b"]) == ["g-a"]
    assert audit_game.unlisted(sorted(auditor.anchored), ["g-a", "g-b"]) == []
