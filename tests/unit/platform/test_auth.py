import dataclasses

import pytest

from boulevard.platform.auth import PlayerClaims, authorize, issue_token, verify_token
from boulevard.platform.errors import PermissionDenied, Unauthenticated

KEY = b"k" * 32
NOW = 1_800_000_000.0


def test_a_token_carries_its_claims_and_expiry() -> None:
    claims = PlayerClaims("game-1", 2, "alice@example")
    token = issue_token(KEY, claims, ttl_seconds=60, now=NOW)
    assert verify_token(KEY, token, now=NOW) == dataclasses.replace(
        claims, expires_unix=int(NOW) + 60
    )


def test_forged_and_malformed_tokens_are_refused() -> None:
    token = issue_token(KEY, PlayerClaims("g", 0, "alice"))
    body, mac = token.rsplit(".", 1)
    forged_seat = body.replace(".0.", ".1.") + "." + mac
    parts = body.split(".")
    forged_expiry = ".".join([*parts[:4], str(int(parts[4]) + 86400)]) + "." + mac
    v1 = "v1.g.0.YWxpY2U." + mac  # the old, never-expiring format
    for bad in [
        "",
        "nonsense",
        forged_seat,
        forged_expiry,
        v1,
        issue_token(b"other key", PlayerClaims("g", 0, "a")),
    ]:
        with pytest.raises(Unauthenticated):
            verify_token(KEY, bad)


def test_an_expired_token_is_refused_and_says_so() -> None:
    token = issue_token(KEY, PlayerClaims("g", 0, "alice"), ttl_seconds=60, now=NOW)
    assert verify_token(KEY, token, now=NOW + 59).seat == 0
    with pytest.raises(Unauthenticated, match="expired"):
        verify_token(KEY, token, now=NOW + 60)


def test_a_token_for_another_game_or_seat_is_denied() -> None:
    token = issue_token(KEY, PlayerClaims("g1", 1, "bob"))
    assert authorize(KEY, token, "g1", 1).player_id == "bob"
    with pytest.raises(PermissionDenied):
        authorize(KEY, token, "g2", 1)
    with pytest.raises(PermissionDenied):
        authorize(KEY, token, "g1", 0)
