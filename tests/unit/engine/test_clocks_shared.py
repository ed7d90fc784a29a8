"""The seats' clocks an update carries are made once for the streams that send one version
within CLOCKS_SHARED_MS of each other (services/engine/server.py, `clocks_at`), and each
says when it was computed: a stream later than that, or a new version, gets them anew."""

from __future__ import annotations

import random

from boulevard.contract.clocks import seat_clocks_to_proto
from boulevard.eventlog.store import InMemoryEventStore
from services.engine.chance import LocalChance
from services.engine.engine import Engine, MemoryKeyValue
from services.engine.server import CLOCKS_SHARED_MS, clocks_at
from tests.unit.engine.test_clocks import CONTROL, Clock
from tests.unit.engine.test_engine_core import KEY, seats


async def test_one_versions_clocks_are_shared_for_a_moment_and_say_when() -> None:
    clock = Clock()
    engine = Engine(
        InMemoryEventStore(), LocalChance(random.Random(7)), MemoryKeyValue(), KEY, clock=clock
    )
    await engine.create_game("m", "las_vegas", seats(2), match_id="m", time_control=CONTROL)
    session = await engine.load("m")
    start = session.time_ms()

    at, first = clocks_at(session, start + 100)
    assert at == start + 100
    assert first == seat_clocks_to_proto(session.clock_times(start + 100))
    assert any(c.running for c in first)  # a seat's clock ticks: its remaining time moves

    # Another stream a moment later: the same clocks, computed at the first one's time.
    assert clocks_at(session, start + 100 + CLOCKS_SHARED_MS) == (at, first)
    # Later than that: computed anew, at its own time.
    later, fresh = clocks_at(session, start + 101 + CLOCKS_SHARED_MS)
    assert later == start + 101 + CLOCKS_SHARED_MS
    assert fresh == seat_clocks_to_proto(session.clock_times(later))
    assert fresh != first
    # Never before the last envelope's time.
    assert clocks_at(session, start - 5_000)[0] >= start
