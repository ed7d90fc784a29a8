"""What an idle game costs the engine (docs/performance.md, "Capacity"): games nobody used
for a while keep only their fold, evicted games come back from their snapshot or log, and
neither changes what a player sees or what a retried command returns."""

from __future__ import annotations

from typing import Any

from prometheus_client import REGISTRY

from boulevard.contract import mapping
from boulevard.eventlog.store import InMemoryEventStore
from boulevard.platform.auth import verify_token
from services.engine.engine import Engine, MemoryKeyValue
from services.engine.sessions import Session
from tests.unit.engine.test_engine_core import KEY, first_legal, make_engine, seats, submit


def loads(source: str) -> float:
    return REGISTRY.get_sample_value("boulevard_engine_game_loads_total", {"source": source}) or 0


async def played(engine: Engine, request_id: str, moves: int = 3) -> tuple[str, tuple[str, ...]]:
    created = await engine.create_game(request_id, "lords_of_vegas", seats(4))
    for i in range(moves):
        session = await engine.load(created.game_id)
        seat, command = first_legal(session)
        claims = verify_token(KEY, created.tokens[seat])
        await submit(engine, created.game_id, claims, command, session.version, f"{i}")
    return created.game_id, created.tokens


async def test_an_idle_game_keeps_its_fold_and_drops_its_caches() -> None:
    engine = make_engine()
    engine.idle_trim_seconds = 0.0  # everything not used from now on is idle
    game_id, tokens = await played(engine, "idle")
    session = await engine.load(game_id)
    seat, command = first_legal(session)
    claims = verify_token(KEY, tokens[seat])
    last = await submit(engine, game_id, claims, command, session.version, "last")
    # Readers fill the caches at the new version: legal commands and a seat's view.
    reader, _ = first_legal(session)
    legal = list(session.legal(reader))
    view = session.memo("view", reader, lambda: view_of(session, reader))
    fold = session.snapshot()
    assert session.recent and session._memo

    assert engine.trim_idle() == 1
    assert (session.recent, session._memo) == ({}, {})
    assert engine.cached(game_id) is session  # still held: trimmed, not evicted
    assert session.snapshot() == fold  # the fold is all kept
    # What readers and a retry see is unchanged: recomputed, or read from the log.
    assert await submit(engine, game_id, claims, command, 0, "last") == last
    assert list(session.legal(reader)) == legal
    assert session.memo("view", reader, lambda: view_of(session, reader)) == view
    # Used again, it is warm: it is not trimmed until it idles once more.
    engine.idle_trim_seconds = 3600.0
    await engine.load(game_id)
    assert engine.trim_idle() == 0
    assert session._memo


def view_of(session: Session, seat: int) -> Any:
    return mapping.view_to_proto(session.game, session.game.view(session.state, seat))


async def test_recently_used_games_are_not_trimmed() -> None:
    engine = make_engine()
    engine.idle_trim_seconds = 3600.0
    game_id, _ = await played(engine, "busy")
    session = await engine.load(game_id)
    assert session.recent
    assert engine.trim_idle() == 0
    assert session.recent


async def test_an_evicted_game_comes_back_from_its_snapshot_or_its_log() -> None:
    store = InMemoryEventStore()
    engine = make_engine(store, snapshot_every=5)
    engine._cache_size = 2
    games = [await played(engine, f"g{i}", moves=3) for i in range(3)]
    oldest, tokens = games[0]
    assert engine.cached(oldest) is None  # evicted by the two newer games
    assert engine.cached_games() == 2
    from_log, from_snapshot = loads("log"), loads("snapshot")
    session = await engine.load(oldest)
    assert loads("snapshot") == from_snapshot + 1  # it passed version 5: it has one
    # Its first action after idling goes through, on the reloaded fold.
    seat, command = first_legal(session)
    claims = verify_token(KEY, tokens[seat])
    version = session.version
    result = await submit(engine, oldest, claims, command, version, "back")
    assert result.version > version and engine.cached(oldest) is not None
    # A replica with no snapshots rebuilds the same fold from the whole log.
    fresh = Engine(store, engine.chance, MemoryKeyValue(), KEY)
    rebuilt = await fresh.load(oldest)
    assert loads("log") == from_log + 1
    assert rebuilt.snapshot() == (await engine.load(oldest)).snapshot()
