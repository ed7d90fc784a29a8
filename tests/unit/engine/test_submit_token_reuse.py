"""A SubmitActions stream checks a token string's MAC once and its expiry on every move
(services/engine/server.py): the same token, once expired, ends the stream UNAUTHENTICATED
as a fresh check of it would, even when its next move is already waiting to be read."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from boulevard.api.v1 import engine_pb2
from boulevard.platform.auth import verify_token
from boulevard.platform.errors import Unauthenticated
from services.engine.server import EngineServicer
from tests.unit.engine.test_create_game_clock import Index
from tests.unit.engine.test_engine_core import KEY, make_engine, seats
from tests.unit.engine.test_watch_settled import Context


def unsigned_move(game_id: str, token: str, key: str) -> engine_pb2.SubmitActionsRequest:
    # Refused as an answer (the stream goes on): it carries no signature.
    return engine_pb2.SubmitActionsRequest(
        submit=engine_pb2.SubmitActionRequest(
            game_id=game_id, player_token=token, idempotency_key=key
        )
    )


async def test_the_same_token_once_expired_ends_the_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = make_engine()
    created = await engine.create_game("req-reuse", "las_vegas", seats(2))
    token = created.tokens[0]
    expires = verify_token(KEY, token).expires_unix
    servicer = EngineServicer(engine, engine.store, Index(), None)  # type: ignore[arg-type]

    async def moves() -> AsyncIterator[engine_pb2.SubmitActionsRequest]:
        yield unsigned_move(created.game_id, token, "k1")
        yield unsigned_move(created.game_id, token, "k2")  # read at once: no idle wait

    stream = servicer.SubmitActions(moves(), Context())  # type: ignore[arg-type]
    first = await anext(stream)  # type: ignore[call-overload]
    assert first.idempotency_key == "k1" and first.HasField("error")  # refused, not ended
    real = time.time
    monkeypatch.setattr(time, "time", lambda: max(real(), expires + 1.0))
    with pytest.raises(Unauthenticated, match="expired"):
        await anext(stream)  # type: ignore[call-overload]
