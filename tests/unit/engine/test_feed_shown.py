"""A feed redacts each event once for all its streams (issue 28): what a stream sends is
exactly what `redacted` makes of the envelope — a shuffle's order and blinding hidden, a
roll and every other event as stored — and a stream that cannot read an event still fails
on it, every time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from boulevard.api.v1 import events_pb2
from boulevard.games import get_game
from boulevard.games.base import ChanceKind, ChanceResolved, RulesError
from services.engine import server, sessions
from services.engine.server import Feed

GAME = get_game("las_vegas")


def envelope(version: int, event: Any) -> events_pb2.EventEnvelope:
    return events_pb2.EventEnvelope(
        game_id="g1",
        version=version,
        type=type(event).__name__,
        payload=sessions.codec_of(GAME).dumps(event),
        blinding=b"\x07" * 16,
    )


async def test_each_event_is_redacted_once_and_as_redacted_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []

    def counting(game: Any, env: events_pb2.EventEnvelope, finished: bool) -> Any:
        calls.append(int(env.version))
        return sessions.redacted(game, env, finished)

    monkeypatch.setattr(server, "redacted", counting)
    shuffle = envelope(1, ChanceResolved("banknotes", ChanceKind.SHUFFLE, (3, 1, 2), nonce=0))
    roll = envelope(2, ChanceResolved("turn", ChanceKind.ROLL, (6, 6, 1), nonce=1))
    other = events_pb2.EventEnvelope(game_id="g1", version=3, type="DicePlaced", payload=b"{}")
    feed = Feed(None, "g1")  # type: ignore[arg-type]
    feed.task.cancel()
    await asyncio.gather(feed.task, return_exceptions=True)
    for _stream in range(4):
        for env in (shuffle, roll, other):
            shown = feed.shown(GAME, env)
            fresh = sessions.redacted(GAME, env, False)
            assert shown.SerializeToString(deterministic=True) == fresh.SerializeToString(
                deterministic=True
            )
    assert calls == [1, 2]  # one decode per roll or shuffle, none for other events
    hidden = feed.shown(GAME, shuffle)
    assert not hidden.blinding and b"[3,1,2]" not in hidden.payload
    assert feed.shown(GAME, roll) is roll and feed.shown(GAME, other) is other


async def test_an_unreadable_event_fails_every_stream() -> None:
    broken = events_pb2.EventEnvelope(
        game_id="g1", version=1, type="ChanceResolved", payload=b"not json"
    )
    feed = Feed(None, "g1")  # type: ignore[arg-type]
    feed.task.cancel()
    await asyncio.gather(feed.task, return_exceptions=True)
    for _stream in range(2):
        with pytest.raises(RulesError):
            feed.shown(GAME, broken)
