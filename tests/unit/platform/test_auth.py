import pytest

from boulevard.platform.auth import PlayerClaims, authorize, issue_token, verify_token
from boulevard.platform.errors import PermissionDenied, Unauthenticated

KEY = b"k" * 32


def test_a_token_carries_its_claims() -> None:
    claims = PlayerClaims("game-1", 2, "alice@example")
    assert verify_token(KEY, issue_token(KEY, claims)) == claims


def test_forged_and_malformed_tokens_are_refused() -> None:
    token = issue_token(KEY, PlayerClaims("g", 0, "alice"))
    body, mac = token.rsplit(".", 1)
    forged_seat = body.replace(".0.", ".1.") + "." + mac
    for bad in ["", "nonsense", forged_seat, issue_token(b"other key", PlayerClaims("g", 0, "a"))]:
        with pytest.raises(Unauthenticated):
            verify_token(KEY, bad)


def test_a_token_for_another_game_or_seat_is_denied() -> None:
    token = issue_token(KEY, PlayerClaims("g1", 1, "bob"))
    assert authorize(KEY, token, "g1", 1).player_id == "bob"
    with pytest.raises(PermissionDenied):
        authorize(KEY, token, "g2", 1)
    with pytest.raises(PermissionDenied):
        authorize(KEY, token, "g1", 0)
