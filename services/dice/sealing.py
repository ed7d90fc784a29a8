"""Server seeds at rest: AES-256-GCM, bound to their game.

A sealed seed is `b"BDS1" ‖ key id (8 bytes) ‖ nonce (12 bytes) ‖ ciphertext+tag`; the
associated data is the game id, so a sealed seed copied under another game's key does not
open. The key id (first 8 bytes of SHA-256 of the key) says which key sealed it, so a wrong or
rotated key is reported as such instead of as corruption.
"""

from __future__ import annotations

import hashlib
import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

MAGIC = b"BDS1"
NONCE_BYTES = 12


class SealError(Exception):
    """A sealed seed that this key cannot open."""


class SeedSealer:
    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise ValueError("AES-256-GCM needs a 32-byte key")
        self._aead = AESGCM(key)
        self.key_id = hashlib.sha256(key).digest()[:8]

    def seal(self, game_id: str, seed: bytes) -> bytes:
        nonce = secrets.token_bytes(NONCE_BYTES)
        return MAGIC + self.key_id + nonce + self._aead.encrypt(nonce, seed, _aad(game_id))

    def open(self, game_id: str, sealed: bytes) -> bytes:
        head = len(MAGIC) + len(self.key_id)
        if not sealed.startswith(MAGIC) or len(sealed) < head + NONCE_BYTES + 16:
            raise SealError(f"the stored seed of {game_id} is not a sealed seed")
        if sealed[len(MAGIC) : head] != self.key_id:
            raise SealError(f"the seed of {game_id} was sealed with another key")
        nonce = sealed[head : head + NONCE_BYTES]
        try:
            return self._aead.decrypt(nonce, sealed[head + NONCE_BYTES :], _aad(game_id))
        except InvalidTag:
            raise SealError(f"the sealed seed of {game_id} does not authenticate") from None


def _aad(game_id: str) -> bytes:
    return b"boulevard-dice-seed:" + game_id.encode("utf-8")
