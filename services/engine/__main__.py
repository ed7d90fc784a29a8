"""Run the engine service: `python -m services.engine`.

With BOULEVARD_ENGINE_PROFILE=<file> the process runs under cProfile and writes its stats
there on exit (read them with `python -m pstats <file>`): how docs/performance.md's engine
profiles were taken. Off unless set; the profiler slows every call."""

import asyncio
import cProfile
import os

from boulevard.platform.gctune import tune_gc
from boulevard.platform.server import serve
from services.engine.app import EngineApp
from services.engine.settings import get_engine_settings


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
