"""Signed tree heads: the ledger operator's signed statement "the journal's first
`tree_size` entries have Merkle root `root_hash`" (RFC 6962 §3.5, with Ed25519).

The signature covers the canonical JSON of the head (see docs/ledger.md), whose `type`
field separates it from any other message the same key might ever sign.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from boulevard.accounting.encoding import HASH_SIZE, MAX_SAFE_INTEGER, canonical_json
from boulevard.accounting.errors import ErrorCode, LedgerError, VerificationFailed

TREE_HEAD_TYPE = "boulevard.ledger.tree_head.v1"


def key_id(public_key: bytes) -> str:
    """How a tree head names its key: hex SHA-256 of the 32 raw public-key bytes."""
    return hashlib.sha256(public_key).hexdigest()


@dataclass(frozen=True, slots=True)
class TreeHead:
    tree_size: int
    root_hash: bytes
    timestamp_unix_ms: int
    key_id: str
    # Other logs signed the same way (the dice service's per-game outcome logs) name
    # themselves: a head of one game's log can never pass for another's or the ledger's.
    log_id: str = ""
    head_type: str = TREE_HEAD_TYPE

    def __post_init__(self) -> None:
        for name in ("tree_size", "timestamp_unix_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise VerificationFailed(ErrorCode.OUT_OF_RANGE, f"{name} must be an integer")
            if not 0 <= value <= MAX_SAFE_INTEGER:
                raise VerificationFailed(ErrorCode.OUT_OF_RANGE, f"{name} {value} out of range")
        if not isinstance(self.root_hash, bytes) or len(self.root_hash) != HASH_SIZE:
            raise VerificationFailed(ErrorCode.INVALID_PROOF, "root_hash must be 32 bytes")

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": self.head_type,
            "tree_size": self.tree_size,
            "root_hash": self.root_hash.hex(),
            "timestamp_unix_ms": self.timestamp_unix_ms,
            "key_id": self.key_id,
        }
        if self.log_id:
            data["log_id"] = self.log_id
        return data

    def signing_bytes(self) -> bytes:
        return canonical_json(self.to_json())


@dataclass(frozen=True, slots=True)
class SignedTreeHead:
    head: TreeHead
    signature: bytes

    def verify(self, public_key: bytes) -> None:
        verify_tree_head(self, public_key)


class TreeHeadSigner:
    """Signs tree heads with one Ed25519 key, given as its 32-byte private seed."""

    def __init__(self, seed: bytes) -> None:
        if not isinstance(seed, bytes) or len(seed) != 32:
            raise LedgerError(ErrorCode.INVALID_KEY, "an Ed25519 seed is exactly 32 bytes")
        self._key = Ed25519PrivateKey.from_private_bytes(seed)
        self.public_key = self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.key_id = key_id(self.public_key)

    def sign(
        self,
        tree_size: int,
        root_hash: bytes,
        timestamp_unix_ms: int,
        *,
        log_id: str = "",
        head_type: str = TREE_HEAD_TYPE,
    ) -> SignedTreeHead:
        head = TreeHead(tree_size, root_hash, timestamp_unix_ms, self.key_id, log_id, head_type)
        return SignedTreeHead(head, self._key.sign(head.signing_bytes()))

    def sign_document(self, document: Mapping[str, Any]) -> bytes:
        """Ed25519 over the canonical JSON of a record that is not a tree head (the
        ledger's checkpoint manifest). Its `type` names what it is, so the signature can
        never pass for a tree head's, nor a tree head's for it."""
        return self._key.sign(canonical_json(_typed_document(document)))


def _typed_document(document: Mapping[str, Any]) -> dict[str, Any]:
    kind = document.get("type")
    if not isinstance(kind, str) or not kind or kind == TREE_HEAD_TYPE:
        raise LedgerError(ErrorCode.INVALID_FIELD, "a signed document names its own type")
    return dict(document)


def verify_document(document: Mapping[str, Any], signature: bytes, public_key: bytes) -> None:
    """Raise unless `signature` is `public_key`'s over `document` (see `sign_document`)."""
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(
            signature, canonical_json(_typed_document(document))
        )
    except (InvalidSignature, ValueError, TypeError):
        raise VerificationFailed(
            ErrorCode.INVALID_SIGNATURE, f"bad signature on a {document.get('type')!r}"
        ) from None


def verify_tree_head(sth: SignedTreeHead, public_key: bytes) -> None:
    """Raise unless `sth` is signed by `public_key` (raw 32 bytes) and names that key."""
    if not isinstance(public_key, bytes) or len(public_key) != 32:
        raise VerificationFailed(ErrorCode.INVALID_KEY, "an Ed25519 public key is 32 bytes")
    if sth.head.key_id != key_id(public_key):
        raise VerificationFailed(
            ErrorCode.INVALID_SIGNATURE,
            f"tree head of size {sth.head.tree_size} names key {sth.head.key_id}, "
            f"not {key_id(public_key)}",
        )
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(
            sth.signature, sth.head.signing_bytes()
        )
    except (InvalidSignature, ValueError):
        raise VerificationFailed(
            ErrorCode.INVALID_SIGNATURE,
            f"bad signature on the tree head of size {sth.head.tree_size}",
        ) from None
