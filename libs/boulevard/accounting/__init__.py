"""The pure double-entry core of the ledger: accounts and their rules, balanced journal
entries, the hash chain, an RFC 6962 Merkle tree with inclusion and consistency proofs,
Ed25519-signed tree heads, and the auditor's verifiers. No I/O, no clock, no randomness;
the format is specified in docs/ledger.md.
"""

from boulevard.accounting.accounts import (
    BANK,
    PLATFORM_BOOK,
    AccountId,
    AccountKind,
    account_kind,
    may_go_negative,
    seat_account,
    seat_of,
)
from boulevard.accounting.audit import (
    Divergence,
    JournalAuditor,
    reconcile,
    verify_chain,
    verify_entry_in_head,
)
from boulevard.accounting.encoding import (
    ZERO_HASH,
    canonical_json,
    empty_root,
    leaf_hash,
    node_hash,
)
from boulevard.accounting.errors import EntryRejected, ErrorCode, LedgerError, VerificationFailed
from boulevard.accounting.journal import (
    EntrySource,
    JournalEntry,
    Ledger,
    Posting,
    TransferLike,
    check_balanced,
    check_own_book,
    decode_entry,
    postings_from_transfers,
)
from boulevard.accounting.merkle import (
    MerkleTree,
    frontier_append,
    root_from_frontier,
    root_from_inclusion_proof,
    verify_consistency,
    verify_inclusion,
)
from boulevard.accounting.treehead import (
    SignedTreeHead,
    TreeHead,
    TreeHeadSigner,
    key_id,
    verify_document,
    verify_tree_head,
)

__all__ = [
    "BANK",
    "PLATFORM_BOOK",
    "ZERO_HASH",
    "AccountId",
    "AccountKind",
    "Divergence",
    "EntryRejected",
    "EntrySource",
    "ErrorCode",
    "JournalAuditor",
    "JournalEntry",
    "Ledger",
    "LedgerError",
    "MerkleTree",
    "Posting",
    "SignedTreeHead",
    "TransferLike",
    "TreeHead",
    "TreeHeadSigner",
    "VerificationFailed",
    "account_kind",
    "canonical_json",
    "check_balanced",
    "check_own_book",
    "decode_entry",
    "empty_root",
    "frontier_append",
    "key_id",
    "leaf_hash",
    "may_go_negative",
    "node_hash",
    "postings_from_transfers",
    "reconcile",
    "root_from_frontier",
    "root_from_inclusion_proof",
    "seat_account",
    "seat_of",
    "verify_chain",
    "verify_consistency",
    "verify_document",
    "verify_entry_in_head",
    "verify_inclusion",
    "verify_tree_head",
]
