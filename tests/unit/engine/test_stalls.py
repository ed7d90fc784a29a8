"""The per-game stall signal: one stuck game among busy ones is counted."""

from __future__ import annotations

from services.engine.stalls import Stalls, stalls

NOW = 1_700_000_000_000


def test_one_stuck_game_among_busy_ones_is_stalled() -> None:
    busy = [NOW - 2_000, NOW - 500, NOW - 40_000]
    stuck = NOW - 20 * 60 * 1000
    assert stalls([*busy, stuck], NOW, 900) == Stalls(1200.0, 1)
    assert stalls(busy, NOW, 900) == Stalls(40.0, 0)


def test_no_live_games_unknown_times_and_skew_wait_nothing() -> None:
    assert stalls([], NOW, 900) == Stalls(0.0, 0)
    assert stalls([0, NOW + 5_000], NOW, 900) == Stalls(0.0, 0)


async def test_the_engine_reports_when_each_live_game_last_moved_even_after_a_trim() -> None:
    from tests.unit.engine.test_engine_core import make_engine
    from tests.unit.engine.test_idle_games import played

    engine = make_engine()
    engine.idle_trim_seconds = 0.0
    game_id, _ = await played(engine, "stall", moves=2)
    session = engine.cached(game_id)
    assert session is not None
    newest = max(int(e.time_unix_ms) for e in session.recent.values())
    assert newest > 0 and engine.waiting_since_ms() == [newest]
    engine.trim_idle()  # an idle game drops its recent envelopes, not when it last moved
    assert not session.recent and engine.waiting_since_ms() == [newest]
    waited = stalls(engine.waiting_since_ms(), newest + 901_000, 900)
    assert waited == Stalls(901.0, 1)
