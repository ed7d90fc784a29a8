"""The engine's side of the trusted game log (docs/auditing.md): checking a seat's
signature on a command, chaining envelopes by hash, signing receipts, and sealing
snapshots so a forged one is never used.

Kept apart from engine.py so the command path there stays one readable sequence."""

from __future__ import annotations

import json
from typing import Any

import structlog

from boulevard.api.v1 import engine_pb2, events_pb2
from boulevard.audit.signing import (
    MAX_IDEMPOTENCY_KEY,
    Receipt,
    SigningKey,
    chain_hash,
    command_signing_bytes,
    parse_public_key,
    verify,
)
from boulevard.games.base import CommandAccepted, GameCreated
from boulevard.platform.auth import PlayerClaims
from boulevard.platform.errors import InvalidArgument, PermissionDenied, Unauthenticated

log = structlog.get_logger(__name__)


def check_public_key(seat: int, public_key: str) -> None:
    """A seat's key must be present and well formed before a game is created with it."""
    if not public_key:
        raise InvalidArgument(
            f"seat {seat} has no public_key: every seat signs its moves (docs/auditing.md)"
        )
    try:
        parse_public_key(public_key)
    except ValueError as err:
        raise InvalidArgument(f"seat {seat}: {err}") from None


def accept_command(
    game_id: str,
    created: GameCreated,
    claims: PlayerClaims,
    expected_version: int,
    idempotency_key: str,
    action: bytes,
    signature: bytes,
) -> CommandAccepted:
    """The record of a command whose signature verifies under the seat's bound key, or
    UNAUTHENTICATED (no signature) / PERMISSION_DENIED (a signature that does not verify)."""
    if not idempotency_key or len(idempotency_key) > MAX_IDEMPOTENCY_KEY:
        # The key is what stops a signed command from being replayed: it runs once.
        raise InvalidArgument(
            f"idempotency_key is required, 1-{MAX_IDEMPOTENCY_KEY} characters "
            "(a signed command runs once per key)"
        )
    if not signature:
        raise Unauthenticated("the command is not signed: sign it with your seat's key")
    seat = next((s for s in created.seats if s.seat == claims.seat), None)
    if seat is None or not seat.public_key:
        raise PermissionDenied(f"seat {claims.seat} has no key bound to it in this game")
    message = command_signing_bytes(game_id, claims.seat, expected_version, idempotency_key, action)
    if not verify(bytes.fromhex(seat.public_key), signature, message):
        raise PermissionDenied(f"the signature does not verify under seat {claims.seat}'s key")
    if claims.player_id != seat.player_id:
        raise PermissionDenied(f"seat {claims.seat} is not {claims.player_id!r}'s in this game")
    return CommandAccepted(
        seat=claims.seat,
        player_id=claims.player_id,  # the authenticated player (the token's)
        idempotency_key=idempotency_key,
        expected_version=expected_version,
        action=action.hex(),
        signature=signature.hex(),
    )


def link(envelope: events_pb2.EventEnvelope, prev_hash: bytes) -> tuple[bytes, bytes]:
    """Chain `envelope` after `prev_hash`: its stored bytes and its own chain hash."""
    envelope.prev_hash = prev_hash
    data = envelope.SerializeToString()
    return data, chain_hash(data)


def receipt_pb(
    key: SigningKey, game_id: str, version: int, head: bytes, time_unix_ms: int = 0
) -> engine_pb2.Receipt:
    """The engine's signed receipt: the log reached `version` with `head`, the envelope
    there recorded at `time_unix_ms` (0: an untimed, v1 receipt)."""
    r = Receipt.sign(key, game_id, version, head, time_unix_ms)
    return engine_pb2.Receipt(
        game_id=r.game_id,
        version=r.version,
        chain_head=r.chain_head,
        key_id=r.key_id,
        signature=r.signature,
        time_unix_ms=r.time_unix_ms,
    )


# Snapshots ---------------------------------------------------------------------------------
# A snapshot is what a session's fold looked like at some version, and the chain hash of the
# envelope at that version; it is stored with the engine's signature over both. The engine
# uses a snapshot only when the signature verifies *and* the log's envelope at that version
# has that chain hash; anything else is a forged (or stale, corrupt) snapshot: reported and
# ignored, the game rebuilt from its log.

SNAPSHOT_DOMAIN = b"boulevard.engine.snapshot.v1\x00"


def seal_snapshot(key: SigningKey, body: bytes) -> bytes:
    signature = key.sign(SNAPSHOT_DOMAIN + body)
    return json.dumps({"body": body.decode(), "signature": signature.hex()}).encode()


def open_snapshot(key: SigningKey, raw: bytes) -> tuple[bytes, int, bytes] | None:
    """(body, version, chain hash) of a sealed snapshot, or None when it is not one the
    engine signed."""
    try:
        sealed = json.loads(raw)
        body = str(sealed["body"]).encode()
        signature = bytes.fromhex(str(sealed["signature"]))
        data: dict[str, Any] = json.loads(body)
        version = int(data["version"])
        head = bytes.fromhex(str(data["chain_hash"]))
    except (ValueError, KeyError, TypeError):
        return None
    if not verify(key.public_key, signature, SNAPSHOT_DOMAIN + body):
        return None
    return body, version, head
