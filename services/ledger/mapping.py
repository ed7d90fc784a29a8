"""Protobuf ↔ the accounting core, in one place (protobuf stops at the service edge).
The tree-head conversions are the client's, so both ends share one definition."""

from __future__ import annotations

from boulevard.accounting import AccountId, AccountKind, Divergence, JournalEntry
from boulevard.api.v1 import ledger_pb2
from boulevard.contract.ledger import head_from_pb, head_to_pb

__all__ = ["balance_to_pb", "divergence_to_pb", "entry_to_pb", "head_from_pb", "head_to_pb"]

_KINDS = {
    AccountKind.BANK: ledger_pb2.ACCOUNT_KIND_BANK,
    AccountKind.PLAYER: ledger_pb2.ACCOUNT_KIND_PLAYER,
    AccountKind.ESCROW: ledger_pb2.ACCOUNT_KIND_ESCROW,
    AccountKind.PLATFORM: ledger_pb2.ACCOUNT_KIND_PLATFORM,
}


def balance_to_pb(account: AccountId, amount: int) -> ledger_pb2.Balance:
    return ledger_pb2.Balance(
        book=account.book, account=account.name, kind=_KINDS[account.kind], amount=amount
    )


def entry_to_pb(entry: JournalEntry) -> ledger_pb2.LedgerEntry:
    s = entry.source
    return ledger_pb2.LedgerEntry(
        seq=entry.seq,
        canonical=entry.canonical,
        hash=entry.hash,
        prev_hash=entry.prev_hash,
        game_id=s.game_id,
        version=s.version,
        event_id=s.event_id,
        event_type=s.event_type,
        time_unix_ms=s.time_unix_ms,
        postings=[
            ledger_pb2.Posting(
                book=p.account.book, account=p.account.name, amount=p.amount, reason=p.reason
            )
            for p in entry.postings
        ],
    )


def divergence_to_pb(d: Divergence) -> ledger_pb2.Divergence:
    return ledger_pb2.Divergence(
        version=d.version,
        seat=max(d.seat, 0),
        ledger_balance=d.ledger_balance,
        game_money=d.game_money,
    )
