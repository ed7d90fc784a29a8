"""The bytes that are signed and hashed in a game's log (docs/auditing.md).

Every structure is domain-separated (its first field names what it is and its version)
and length-prefixed (each variable field is preceded by its length as 4 big-endian bytes),
so no signature over one kind of statement can be read as another and no two different
field tuples encode to the same bytes.

- command signing bytes: what a seat's Ed25519 key signs for SubmitAction;
- chain hash: SHA-256 over an envelope's stored bytes, each envelope naming the previous
  envelope's chain hash (`EventEnvelope.prev_hash`);
- receipt signing bytes: what the engine's key signs in a SubmitAction or RevealSeed
  answer (v2, with the time the engine accepted it; v1 receipts, untimed, still verify).
"""

from __future__ import annotations

import functools
import hashlib
import os
import struct
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

COMMAND_DOMAIN = b"boulevard.game.command.v1"
CHAIN_DOMAIN = b"boulevard.game.chain.v1"
RECEIPT_DOMAIN = b"boulevard.game.receipt.v1"  # untimed receipts (time_unix_ms 0)
RECEIPT_DOMAIN_V2 = b"boulevard.game.receipt.v2"  # receipts that carry when they were given
RECLAIM_DOMAIN = b"boulevard.game.reclaim.v1"
ZERO_HASH = bytes(32)
PUBLIC_KEY_SIZE = 32
SIGNATURE_SIZE = 64
MAX_IDEMPOTENCY_KEY = 128


def _lp(data: bytes) -> bytes:
    """A field with its length: 4 bytes big-endian, then the bytes."""
    return struct.pack(">I", len(data)) + data


def command_signing_bytes(
    game_id: str, seat: int, expected_version: int, idempotency_key: str, action: bytes
) -> bytes:
    """What a seat signs to submit `action` (the `Action` message's deterministic protobuf
    encoding) in game `game_id`."""
    return b"".join(
        (
            _lp(COMMAND_DOMAIN),
            _lp(game_id.encode()),
            struct.pack(">I", seat),
            struct.pack(">Q", expected_version),
            _lp(idempotency_key.encode()),
            _lp(action),
        )
    )


def reclaim_signing_bytes(game_id: str, seat: int, expected_version: int) -> bytes:
    """What a seat signs to take its place back from the platform's bot (SeatReclaimed):
    "in game `game_id`, after version `expected_version`, I play seat `seat` again"."""
    return b"".join(
        (
            _lp(RECLAIM_DOMAIN),
            _lp(game_id.encode()),
            struct.pack(">I", seat),
            struct.pack(">Q", expected_version),
        )
    )


def chain_hash(stored_envelope: bytes) -> bytes:
    """The chain hash of one envelope, over its bytes exactly as stored in the log."""
    return hashlib.sha256(CHAIN_DOMAIN + b"\x00" + stored_envelope).digest()


def receipt_signing_bytes(
    game_id: str, version: int, chain_head: bytes, time_unix_ms: int = 0
) -> bytes:
    """What the engine signs: "game `game_id`'s log reached `version` with this head" and,
    from v2 on, "at `time_unix_ms`" (the time of the envelope at `version`). A receipt with
    time 0 is a v1 receipt: its bytes are the v1 bytes, so the receipts players kept before
    receipts were timed still verify, and no v2 receipt reads as a v1 one (the domain)."""
    if len(chain_head) != 32:
        raise ValueError("a chain head is 32 bytes")
    if time_unix_ms == 0:
        return b"".join(
            (_lp(RECEIPT_DOMAIN), _lp(game_id.encode()), struct.pack(">Q", version), chain_head)
        )
    return b"".join(
        (
            _lp(RECEIPT_DOMAIN_V2),
            _lp(game_id.encode()),
            struct.pack(">Q", version),
            chain_head,
            struct.pack(">q", time_unix_ms),
        )
    )


def key_id(public_key: bytes) -> str:
    """How receipts name the engine's key: hex SHA-256 of its 32 raw bytes."""
    return hashlib.sha256(public_key).hexdigest()


def parse_public_key(text: str) -> bytes:
    """A seat's key as bound in GameCreated: 64 lowercase hex digits. Raises ValueError."""
    if len(text) != 2 * PUBLIC_KEY_SIZE or text != text.lower():
        raise ValueError("a public key is 64 lowercase hex digits (32 raw Ed25519 bytes)")
    try:
        raw = bytes.fromhex(text)
        Ed25519PublicKey.from_public_bytes(raw)  # raises ValueError when not a key
    except ValueError:
        # Our own words: the library's ("non-hexadecimal number found in fromhex() arg…")
        # reached clients in a status message.
        raise ValueError("a public key is 64 lowercase hex digits (32 raw Ed25519 bytes)") from None
    return raw


def verify(public_key: bytes, signature: bytes, message: bytes) -> bool:
    """Whether `signature` is `public_key`'s Ed25519 signature of `message`."""
    if len(signature) != SIGNATURE_SIZE or len(public_key) != PUBLIC_KEY_SIZE:
        return False
    try:
        _public_key(public_key).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


@functools.lru_cache(maxsize=4096)
def _public_key(raw: bytes) -> Ed25519PublicKey:
    """The key object of 32 raw bytes, made once per key while it is in use (a seat signs
    every move with the same key; the engine's key signs every receipt). Bytes that are no
    key raise ValueError, which is not cached."""
    return Ed25519PublicKey.from_public_bytes(raw)


class SigningKey:
    """An Ed25519 key given by its 32-byte seed (a player's, the bots', the engine's)."""

    def __init__(self, seed: bytes) -> None:
        if len(seed) != 32:
            raise ValueError("an Ed25519 seed is exactly 32 bytes")
        self.seed = seed
        self._key = Ed25519PrivateKey.from_private_bytes(seed)
        self.public_key = self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.public_hex = self.public_key.hex()
        self.key_id = key_id(self.public_key)

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(os.urandom(32))

    @classmethod
    def from_hex(cls, text: str) -> SigningKey:
        return cls(bytes.fromhex(text.strip()))

    def sign(self, message: bytes) -> bytes:
        return self._key.sign(message)

    def sign_command(
        self, game_id: str, seat: int, expected_version: int, idempotency_key: str, action: bytes
    ) -> bytes:
        return self.sign(
            command_signing_bytes(game_id, seat, expected_version, idempotency_key, action)
        )


@dataclass(frozen=True, slots=True)
class Receipt:
    """The engine's signed statement that a game's log reached `version` with `chain_head`
    (at `time_unix_ms`, when the engine accepted it; 0 in a v1, untimed receipt)."""

    game_id: str
    version: int
    chain_head: bytes
    key_id: str
    signature: bytes
    time_unix_ms: int = 0

    @classmethod
    def sign(
        cls, key: SigningKey, game_id: str, version: int, chain_head: bytes, time_unix_ms: int = 0
    ) -> Receipt:
        signature = key.sign(receipt_signing_bytes(game_id, version, chain_head, time_unix_ms))
        return cls(game_id, version, chain_head, key.key_id, signature, time_unix_ms)

    def verify(self, public_key: bytes) -> bool:
        if self.key_id != key_id(public_key) or len(self.chain_head) != 32:
            return False
        return verify(
            public_key,
            self.signature,
            receipt_signing_bytes(self.game_id, self.version, self.chain_head, self.time_unix_ms),
        )

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "game_id": self.game_id,
            "version": self.version,
            "chain_head": self.chain_head.hex(),
            "key_id": self.key_id,
            "signature": self.signature.hex(),
        }
        if self.time_unix_ms:
            data["time_unix_ms"] = self.time_unix_ms
        return data

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Receipt:
        return cls(
            str(data["game_id"]),
            int(str(data["version"])),
            bytes.fromhex(str(data["chain_head"])),
            str(data["key_id"]),
            bytes.fromhex(str(data["signature"])),
            int(str(data.get("time_unix_ms", 0))),
        )
