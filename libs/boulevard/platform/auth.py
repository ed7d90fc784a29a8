"""Player tokens: proof that the bearer may act for one seat of one game.

Matchmaking (or CreateGame, for games an operator creates directly) issues them; the engine
verifies them on every call. A token is `v1.<game_id>.<seat>.<player_id b64>.<mac b64>`,
where mac = HMAC-SHA256(key, everything before it). The key comes from settings and is
shared by the services that issue and verify tokens.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

from boulevard.platform.errors import PermissionDenied, Unauthenticated

VERSION = "v1"


@dataclass(frozen=True, slots=True)
class PlayerClaims:
    game_id: str
    seat: int
    player_id: str


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, body: str) -> str:
    return _b64(hmac.new(key, body.encode(), hashlib.sha256).digest())


def issue_token(key: bytes, claims: PlayerClaims) -> str:
    if not key:
        raise ValueError("no token key configured (BOULEVARD_TOKEN_KEY)")
    body = ".".join([VERSION, claims.game_id, str(claims.seat), _b64(claims.player_id.encode())])
    return f"{body}.{_mac(key, body)}"


def verify_token(key: bytes, token: str) -> PlayerClaims:
    """The claims of a genuine token; Unauthenticated for a missing, malformed or forged one."""
    if not token:
        raise Unauthenticated("a player token is required (from your match ticket)")
    parts = token.split(".")
    if len(parts) != 5 or parts[0] != VERSION:
        raise Unauthenticated("malformed player token")
    body, mac = ".".join(parts[:4]), parts[4]
    if not hmac.compare_digest(mac, _mac(key, body)):
        raise Unauthenticated("invalid player token")
    try:
        return PlayerClaims(parts[1], int(parts[2]), _unb64(parts[3]).decode())
    except (ValueError, UnicodeDecodeError) as exc:
        raise Unauthenticated("malformed player token") from exc


def authorize(key: bytes, token: str, game_id: str, seat: int | None = None) -> PlayerClaims:
    """Verify a token and that it is for this game (and this seat, when one is named)."""
    claims = verify_token(key, token)
    if claims.game_id != game_id:
        raise PermissionDenied("this token is for another game")
    if seat is not None and claims.seat != seat:
        raise PermissionDenied(f"this token is for seat {claims.seat}, not seat {seat}")
    return claims
