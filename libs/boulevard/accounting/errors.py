"""The accounting core's one root exception and its stable codes.

Every refusal and every failed verification raises `LedgerError` (or a subclass) carrying a
`code` from `ErrorCode`: tests and the gRPC edge match on the code, people read the message.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    # An entry the ledger refuses to post.
    EMPTY_ENTRY = "empty_entry"
    UNBALANCED = "unbalanced_entry"
    INVALID_AMOUNT = "invalid_amount"
    INVALID_ACCOUNT = "invalid_account"
    INVALID_FIELD = "invalid_field"
    OVERDRAFT = "overdraft"
    DUPLICATE = "duplicate_entry"
    # The journal itself does not hold together.
    CHAIN_BROKEN = "chain_broken"
    MALFORMED = "malformed_entry"
    # Proofs, tree heads and signatures.
    OUT_OF_RANGE = "out_of_range"
    INVALID_PROOF = "invalid_proof"
    INVALID_SIGNATURE = "invalid_signature"
    ROOT_MISMATCH = "root_mismatch"
    INVALID_KEY = "invalid_key"


class LedgerError(Exception):
    """Root of every accounting error. `seq` is the journal position concerned, if any."""

    def __init__(self, code: ErrorCode, message: str, *, seq: int | None = None) -> None:
        where = f" (entry {seq})" if seq is not None else ""
        super().__init__(f"{code.value}: {message}{where}")
        self.code = code
        self.message = message
        self.seq = seq


class EntryRejected(LedgerError):
    """An entry that must not be posted: unbalanced, overdrawn, duplicate, badly formed."""


class VerificationFailed(LedgerError):
    """Evidence that does not check out: a broken chain, a bad proof, root or signature."""
