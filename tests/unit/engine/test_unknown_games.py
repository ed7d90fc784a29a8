"""Looking up games that do not exist costs nothing that stays: GetGame, WatchGame and
ListLegalActions load a game before anything else, without a token for spectators, so a
stranger can ask for as many made-up (well-formed) game ids as they like. The engine's
per-game lock used to be made for each such id and kept forever: a slow, unauthenticated
memory leak (about 200 bytes per id)."""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from boulevard.platform.errors import NotFound
from tests.unit.engine.test_engine_core import make_engine, seats

LOOKUPS = 5000


async def test_a_stranger_asking_for_unknown_games_leaves_nothing_behind() -> None:
    engine = make_engine()
    created = await engine.create_game("r1", "las_vegas", seats(2))
    for i in range(50):  # warm every cache and counter the path touches once
        with pytest.raises(NotFound):
            await engine.load(f"warm{i}")
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for i in range(LOOKUPS):
            with pytest.raises(NotFound):
                await engine.load(f"nogame{i:08d}{'x' * 40}")
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    # Before the fix: ~1 MiB for 5000 ids; after it, under 1 KiB (noise, not per-id state).
    assert grown < 256 * 1024, f"{grown} bytes kept after {LOOKUPS} unknown game ids"
    # The real game still loads (its lock works as before).
    assert (await engine.load(created.game_id)).version >= 1
