"""Player (seat) tokens: proof that the bearer may act for one seat of one game, until a time.

Matchmaking (or CreateGame, for games an operator creates directly) issues them; the engine
verifies them on every call. A token is
`v2.<game_id>.<seat>.<player_id b64>.<expires unix s>.<mac b64>`, where
mac = HMAC-SHA256(key, everything before it). The key comes from settings and is shared by
the services that issue and verify tokens.

They expire (`BOULEVARD_SEAT_TOKEN_TTL_SECONDS`): an expired one is refused with
UNAUTHENTICATED saying so, and the seat's owner gets a fresh one from matchmaking
(GetTicket, as the ticket's owner) or from the engine (RenewPlayerToken, with their bearer
JWT). Who owns a seat comes from the player's JWT (`boulevard.platform.identity`); this
token only carries that decision to the engine, cheaply, on every move.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from dataclasses import dataclass

from boulevard.platform.errors import PermissionDenied, Unauthenticated

VERSION = "v2"
DEFAULT_TTL_SECONDS = 6 * 3600


@dataclass(frozen=True, slots=True)
class PlayerClaims:
    game_id: str
    seat: int
    player_id: str
    expires_unix: int = 0  # set by verify_token; issue_token sets it from its ttl


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, body: str) -> str:
    return _b64(hmac.new(key, body.encode(), hashlib.sha256).digest())


def issue_token(
    key: bytes,
    claims: PlayerClaims,
    ttl_seconds: float = DEFAULT_TTL_SECONDS,
    now: float | None = None,
) -> str:
    """A token for the seat, valid for `ttl_seconds` from now."""
    if not key:
        raise ValueError("no token key configured (BOULEVARD_TOKEN_KEY)")
    expires = int((time.time() if now is None else now) + ttl_seconds)
    body = ".".join(
        [VERSION, claims.game_id, str(claims.seat), _b64(claims.player_id.encode()), str(expires)]
    )
    return f"{body}.{_mac(key, body)}"


def verify_token(key: bytes, token: str, now: float | None = None) -> PlayerClaims:
    """The claims of a genuine, current token; Unauthenticated for a missing, malformed,
    forged or expired one."""
    if not token:
        raise Unauthenticated("a player token is required (from your match ticket)")
    parts = token.split(".")
    if len(parts) != 6 or parts[0] != VERSION:
        raise Unauthenticated("malformed player token")
    body, mac = ".".join(parts[:5]), parts[5]
    if not hmac.compare_digest(mac, _mac(key, body)):
        raise Unauthenticated("invalid player token")
    try:
        claims = PlayerClaims(parts[1], int(parts[2]), _unb64(parts[3]).decode(), int(parts[4]))
    except (ValueError, UnicodeDecodeError) as exc:
        raise Unauthenticated("malformed player token") from exc
    if (time.time() if now is None else now) >= claims.expires_unix:
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(claims.expires_unix))
        raise Unauthenticated(
            f"player token expired at {when}; get a fresh one from matchmaking "
            "(GetTicket) or the engine (RenewPlayerToken)"
        )
    return claims


def authorize(key: bytes, token: str, game_id: str, seat: int | None = None) -> PlayerClaims:
    """Verify a token and that it is for this game (and this seat, when one is named)."""
    claims = verify_token(key, token)
    if claims.game_id != game_id:
        raise PermissionDenied("this token is for another game")
    if seat is not None and claims.seat != seat:
        raise PermissionDenied(f"this token is for seat {claims.seat}, not seat {seat}")
    return claims
