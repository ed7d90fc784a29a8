"""The canonical byte encoding of ledger records, and the hashes over it.

Canonical JSON in the sense of RFC 8785 (JCS) restricted to what the ledger writes: objects
with ASCII keys sorted, no whitespace, strings as UTF-8 with JSON's minimal escapes, and
integers only, bounded by ±(2**53 - 1) so every JSON implementation reads them exactly.
`json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` produces it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

MAX_SAFE_INTEGER = 2**53 - 1
HASH_SIZE = 32
LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"
ZERO_HASH = bytes(HASH_SIZE)


def canonical_json(obj: Any) -> bytes:
    """Deterministic bytes for a JSON value of dicts, lists, strings and safe integers."""
    _check(obj)
    return canonical_json_unchecked(obj)


def canonical_json_unchecked(obj: Any) -> bytes:
    """`canonical_json` for a value whose parts were already checked (the hot path)."""
    return _ENCODER.encode(obj).encode()


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _check(obj: Any) -> None:
    if isinstance(obj, bool) or obj is None:
        return
    if isinstance(obj, int):
        if not -MAX_SAFE_INTEGER <= obj <= MAX_SAFE_INTEGER:
            raise ValueError(f"integer {obj} is outside ±(2**53 - 1)")
    elif isinstance(obj, str):
        obj.encode()  # lone surrogates cannot be UTF-8: fail here, not in a reader
    elif isinstance(obj, list):
        for v in obj:
            _check(v)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if not isinstance(k, str) or not k.isascii():
                raise ValueError(f"object key {k!r} must be an ASCII string")
            _check(v)
    else:
        raise ValueError(f"{type(obj).__name__} has no canonical encoding")


def leaf_hash(data: bytes) -> bytes:
    """RFC 6962 leaf hash: SHA-256(0x00 || data)."""
    return hashlib.sha256(LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 6962 interior node hash: SHA-256(0x01 || left || right)."""
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def empty_root() -> bytes:
    """RFC 6962 hash of the empty tree: SHA-256 of no bytes."""
    return hashlib.sha256(b"").digest()
