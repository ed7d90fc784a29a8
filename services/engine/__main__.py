"""Run the engine service: `python -m services.engine`.

With BOULEVARD_ENGINE_PROFILE=<file> the process runs under cProfile and writes its stats
there on exit (read them with `python -m pstats <file>`): how docs/performance.md's engine
profiles were taken. Off unless set; the profiler slows every call."""

import asyncio
import cProfile
import gc
import os

from boulevard.platform.server import serve
from services.engine.app import EngineApp
from services.engine.settings import get_engine_settings

# Container objects allocated (net) between two young-generation collections; CPython's
# default is 700. See `tune_gc`.
GC_YOUNG_THRESHOLD = 7000


def tune_gc() -> None:
    """Make the cyclic garbage collector cheaper for the engine's work (issue 28): with
    CPython's defaults it took 8–11% of the engine's CPU at 100 Las Vegas tables, most of
    it young collections every 700 net allocations (a move allocates thousands of short-
    lived objects) and full collections walking every object imported at start.

    Everything alive once the modules are imported is moved out of the collector's sight
    (`gc.freeze`: those objects live as long as the process, and are never garbage), and
    young collections run ten times less often. Cycles are still collected, only later:
    the garbage they hold waits for at most GC_YOUNG_THRESHOLD net allocations."""
    gc.collect()
    gc.freeze()
    _young, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def main() -> None:
    settings = get_engine_settings()
    tune_gc()
    profile_to = os.environ.get("BOULEVARD_ENGINE_PROFILE", "")
    if not profile_to:
        asyncio.run(serve(EngineApp(settings), settings))
        return
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        asyncio.run(serve(EngineApp(settings), settings))
    finally:
        profiler.disable()
        profiler.dump_stats(profile_to)


if __name__ == "__main__":
    main()
