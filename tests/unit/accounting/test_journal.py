from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from boulevard.accounting import (
    ZERO_HASH,
    AccountId,
    AccountKind,
    EntryRejected,
    EntrySource,
    ErrorCode,
    JournalEntry,
    Ledger,
    LedgerError,
    Posting,
    VerificationFailed,
    decode_entry,
    postings_from_transfers,
)
from boulevard.games.base import Transfer


def src(game: str = "g1", version: int = 1) -> EntrySource:
    return EntrySource(game, version, f"ev-{game}-{version}", "Paid", 1_700_000_000_000)


def t(source: str, target: str, amount: int, reason: str = "r") -> Transfer:
    return Transfer(source, target, amount, reason)


def test_a_transfer_posts_two_postings_that_sum_to_zero() -> None:
    ledger = Ledger()
    entry = ledger.post(src(), postings_from_transfers("g1", [t("bank", "seat:0", 10)]))
    assert [p.amount for p in entry.postings] == [-10, 10]
    assert ledger.balance(AccountId("g1", "seat:0")) == 10
    assert ledger.balance(AccountId("g1", "bank")) == -10
    assert entry.seq == 1 and entry.prev_hash == ZERO_HASH


def test_an_unbalanced_entry_is_refused() -> None:
    a, b = AccountId("g1", "bank"), AccountId("g1", "seat:0")
    with pytest.raises(EntryRejected) as err:
        Ledger().post(src(), [Posting(a, -10), Posting(b, 9)])
    assert err.value.code == ErrorCode.UNBALANCED
    assert "sum to -1" in str(err.value)


def test_an_empty_entry_is_refused() -> None:
    with pytest.raises(EntryRejected) as err:
        Ledger().post(src(), [])
    assert err.value.code == ErrorCode.EMPTY_ENTRY


def test_a_player_may_not_go_below_zero_but_the_bank_may() -> None:
    ledger = Ledger()
    ledger.post(src(version=1), postings_from_transfers("g1", [t("bank", "seat:0", 5)]))
    with pytest.raises(EntryRejected) as err:
        ledger.post(src(version=2), postings_from_transfers("g1", [t("seat:0", "seat:1", 6)]))
    assert err.value.code == ErrorCode.OVERDRAFT
    assert "g1/seat:0 would go to -1" in err.value.message
    # Nothing changed on refusal: the next entry is still number 2.
    assert ledger.size == 1
    assert ledger.balance(AccountId("g1", "seat:0")) == 5
    ledger.post(src(version=2), postings_from_transfers("g1", [t("seat:0", "seat:1", 5)]))
    assert ledger.balance(AccountId("g1", "bank")) == -5


def test_escrow_and_platform_accounts_may_not_go_below_zero() -> None:
    assert AccountId("g1", "escrow:wager").kind == AccountKind.ESCROW
    assert AccountId("platform", "platform:fees").kind == AccountKind.PLATFORM
    with pytest.raises(EntryRejected) as err:
        Ledger().post(src(), postings_from_transfers("g1", [t("escrow:wager", "bank", 1)]))
    assert err.value.code == ErrorCode.OVERDRAFT


def test_within_one_entry_only_the_net_effect_counts() -> None:
    # Pay rent out of money received in the same event.
    ledger = Ledger()
    ledger.post(
        src(), postings_from_transfers("g1", [t("bank", "seat:0", 5), t("seat:0", "seat:1", 5)])
    )
    assert ledger.balance(AccountId("g1", "seat:1")) == 5


@pytest.mark.parametrize("amount", [0, -3, 1.5, True, "7", 2**53])
def test_amounts_are_positive_whole_numbers(amount: object) -> None:
    with pytest.raises(EntryRejected) as err:
        postings_from_transfers("g1", [t("bank", "seat:0", amount)])  # type: ignore[arg-type]
    assert err.value.code == ErrorCode.INVALID_AMOUNT


@pytest.mark.parametrize(
    ("source", "target"),
    [("bank", "bank"), ("", "seat:0"), ("bank", "seat 0"), ("bank", "seat:01"), ("bank", "seat:x")],
)
def test_bad_accounts_are_refused(source: str, target: str) -> None:
    with pytest.raises(EntryRejected) as err:
        postings_from_transfers("g1", [t(source, target, 1)])
    assert err.value.code == ErrorCode.INVALID_ACCOUNT


def test_the_same_game_event_is_never_posted_twice() -> None:
    ledger = Ledger()
    ledger.post(src(version=3), postings_from_transfers("g1", [t("bank", "seat:0", 1)]))
    assert ledger.is_posted("g1", 3)
    with pytest.raises(EntryRejected) as err:
        ledger.post(src(version=3), postings_from_transfers("g1", [t("bank", "seat:0", 1)]))
    assert err.value.code == ErrorCode.DUPLICATE
    ledger.post(src("g2", 3), postings_from_transfers("g2", [t("bank", "seat:0", 1)]))


def test_entries_are_chained_and_out_of_order_appends_are_refused() -> None:
    ledger = Ledger()
    e1 = ledger.post(src(version=1), postings_from_transfers("g1", [t("bank", "seat:0", 1)]))
    e2 = ledger.prepare(src(version=2), postings_from_transfers("g1", [t("bank", "seat:0", 1)]))
    assert e2.prev_hash == e1.hash and e2.seq == 2
    forged = JournalEntry(2, ZERO_HASH, e2.source, e2.postings)
    with pytest.raises(VerificationFailed) as err:
        ledger.append(forged)
    assert err.value.code == ErrorCode.CHAIN_BROKEN
    skipped = JournalEntry(3, e1.hash, e2.source, e2.postings)
    with pytest.raises(VerificationFailed):
        ledger.append(skipped)
    ledger.append(e2)
    assert ledger.head_hash == e2.hash == ledger.tree.leaf_hash(1)


def test_canonical_bytes_round_trip_and_are_stable() -> None:
    ledger = Ledger()
    e = ledger.post(src(), postings_from_transfers("g1", [t("bank", "seat:0", 12, "salary – 💰")]))
    assert decode_entry(e.canonical) == e
    assert e.canonical.startswith(b'{"event_id":"ev-g1-1","event_type":"Paid","game_id":"g1",')
    assert "salary – 💰".encode() in e.canonical  # UTF-8, not \u escapes
    assert e.hash.hex() == decode_entry(e.canonical).hash.hex()


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda b: b.replace(b'"amount":12', b'"amount":13'), ErrorCode.UNBALANCED),
        (lambda b: b.replace(b'"amount":12', b'"amount":12.0'), ErrorCode.INVALID_AMOUNT),
        (lambda b: b.replace(b",", b", ", 1), ErrorCode.MALFORMED),  # not canonical
        (lambda b: b.replace(b'"v":1', b'"v":1,"x":1'), ErrorCode.MALFORMED),  # extra field
        (lambda b: b[:-1], ErrorCode.MALFORMED),  # truncated
    ],
)
def test_doctored_bytes_are_refused(mutate: object, code: ErrorCode) -> None:
    e = Ledger().post(src(), postings_from_transfers("g1", [t("bank", "seat:0", 12)]))
    with pytest.raises(VerificationFailed) as err:
        decode_entry(mutate(e.canonical))  # type: ignore[operator]
    assert err.value.code == code


transfer_plan = st.lists(
    st.tuples(
        st.sampled_from(["g1", "g2", "g3"]),
        st.lists(
            st.tuples(
                st.sampled_from(["bank", "seat:0", "seat:1", "seat:2", "escrow:wager"]),
                st.sampled_from(["bank", "seat:0", "seat:1", "seat:2", "escrow:wager"]),
                st.integers(-5, 10**6),
            ),
            min_size=0,
            max_size=4,
        ),
    ),
    max_size=60,
)


@given(transfer_plan)
def test_any_sequence_of_transfers_keeps_every_balance_sum_at_zero(
    plan: list[tuple[str, list[tuple[str, str, int]]]],
) -> None:
    ledger = Ledger()
    model: dict[AccountId, int] = {}
    versions: dict[str, int] = {}
    stored: list[bytes] = []
    for game, transfers in plan:
        version = versions.get(game, 0) + 1
        try:
            postings = postings_from_transfers(game, [t(s, d, a) for s, d, a in transfers])
            entry = ledger.post(src(game, version), postings)
        except LedgerError as err:
            # Refused only for a stated reason, and then nothing moved.
            assert err.code in {
                ErrorCode.EMPTY_ENTRY,
                ErrorCode.INVALID_AMOUNT,
                ErrorCode.INVALID_ACCOUNT,
                ErrorCode.OVERDRAFT,
            }
        else:
            versions[game] = version
            stored.append(entry.canonical)
            for p in entry.postings:
                model[p.account] = model.get(p.account, 0) + p.amount
        balances = ledger.balances()
        assert sum(balances.values()) == 0
        assert {a: b for a, b in balances.items() if b} == {a: b for a, b in model.items() if b}
        assert all(b >= 0 for a, b in balances.items() if a.name != "bank")
    # Replaying the stored bytes gives back the same ledger, root and all.
    again = Ledger()
    for raw in stored:
        again.append(decode_entry(raw))
    assert again.balances() == ledger.balances()
    assert again.tree.root() == ledger.tree.root() and again.head_hash == ledger.head_hash


def test_a_game_anchor_is_chained_and_in_the_tree_but_moves_no_money() -> None:
    ledger = Ledger()
    paid = ledger.post(src(), postings_from_transfers("g1", [t("bank", "seat:0", 10)]))
    head = bytes(range(32))
    anchor = ledger.anchor(src(version=9), head)
    assert anchor.seq == 2 and anchor.prev_hash == paid.hash and anchor.anchor == head
    assert ledger.tree.size == 2 and ledger.head_hash == anchor.hash
    assert ledger.balance(AccountId("g1", "seat:0")) == 10
    assert decode_entry(anchor.canonical) == anchor
    assert b'"anchor":"000102' in anchor.canonical
    # Not twice for the same game event; never with money; never a malformed head.
    with pytest.raises(LedgerError):
        ledger.anchor(src(version=9), head)
    with pytest.raises(EntryRejected):
        JournalEntry(3, anchor.hash, src(version=10), paid.postings, head)
    with pytest.raises(EntryRejected):
        JournalEntry(3, anchor.hash, src(version=10), (), b"short")
    # An entry without postings and without an anchor is still refused.
    with pytest.raises(EntryRejected):
        JournalEntry(3, anchor.hash, src(version=10), ())
    # Money entries keep their exact bytes (no anchor field).
    assert b"anchor" not in paid.canonical
