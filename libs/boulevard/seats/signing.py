"""Signing a player's moves (docs/auditing.md): what a client does with its seat's key
before SubmitAction, so the engine can prove — and auditors check — the move was theirs."""

from __future__ import annotations

import uuid

from boulevard.api.v1 import engine_pb2
from boulevard.audit.signing import SigningKey


def sign_submit(
    request: engine_pb2.SubmitActionRequest, seat: int, key: SigningKey
) -> engine_pb2.SubmitActionRequest:
    """Sign `request` in place for `seat` (making an idempotency key when it has none)
    and return it. Change nothing in it afterwards: the signature covers the game id, the
    seat, the expected version, the idempotency key and the action's exact bytes."""
    if not request.idempotency_key:
        request.idempotency_key = uuid.uuid4().hex
    request.signature = key.sign_command(
        request.game_id,
        seat,
        request.expected_version,
        request.idempotency_key,
        request.action.SerializeToString(deterministic=True),
    )
    return request


def signed_submit(
    game_id: str,
    token: str,
    seat: int,
    key: SigningKey,
    action: engine_pb2.Action,
    expected_version: int = 0,
    idempotency_key: str = "",
) -> engine_pb2.SubmitActionRequest:
    """A ready-to-send, signed SubmitActionRequest."""
    request = engine_pb2.SubmitActionRequest(
        game_id=game_id,
        player_token=token,
        action=action,
        expected_version=expected_version,
        idempotency_key=idempotency_key,
    )
    return sign_submit(request, seat, key)
