"""A malformed seat key is refused in our words: no status message quotes Python internals
(issue 27 saw "non-hexadecimal number found in fromhex() arg at position 0")."""

import pytest

from boulevard.audit.signing import parse_public_key
from tests.support.keys import seat_key

SAID = "a public key is 64 lowercase hex digits (32 raw Ed25519 bytes)"


@pytest.mark.parametrize("text", ["z" * 64, "0" * 63 + "g", "", "AB" * 32, "00" * 31, " " * 64])
def test_a_malformed_key_is_refused_in_our_words(text: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_public_key(text)
    assert str(caught.value) == SAID
    assert "fromhex" not in str(caught.value)


def test_a_good_key_parses() -> None:
    assert parse_public_key(seat_key(0).public_hex).hex() == seat_key(0).public_hex
