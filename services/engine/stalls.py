"""A per-game stall signal: one stuck table among busy ones shows, clock or not (the
BoulevardGamesStalled alert sees only games past their time control's deadline).

A game is stalled when its newest event is older than a limit (BOULEVARD_ENGINE_STALL_SECONDS,
15 minutes by default): nobody moved, or a move cannot be stored. It covers every game,
with a clock or without; a game with a time control also has its own, sharper signal, the
clocks' `boulevard_games_overdue` (its deadline passed and the sweeper did not act).
Only games the engine holds in memory are seen (the newest `cache_size`): a game evicted
while waiting is not counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Stalls:
    longest_wait_seconds: float  # the longest any live game has waited (0: none live)
    stalled: int  # live games waiting longer than the limit


def stalls(last_event_ms: Iterable[int], now_ms: int, limit_seconds: float) -> Stalls:
    """How long live games have waited, from when each one's newest event was appended.
    A game whose time is unknown (0) or in the future (clock skew) counts as not waiting."""
    waits = [max(0, now_ms - t) / 1000 for t in last_event_ms if t > 0]
    return Stalls(max(waits, default=0.0), sum(1 for w in waits if w > limit_seconds))
