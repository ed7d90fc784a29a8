"""Fixed Ed25519 keys for tests (never used outside them)."""

from __future__ import annotations

from boulevard.audit.signing import SigningKey

TEST_KEY = SigningKey(b"\x07" * 32)
TEST_PUBLIC_KEY = TEST_KEY.public_hex


def seat_key(seat: int) -> SigningKey:
    """The key a test's client holds for `seat` (bound to the seat at creation)."""
    return SigningKey(bytes([seat + 1]) * 32)


def seat_keys(n: int) -> list[SigningKey]:
    return [seat_key(i) for i in range(n)]
