"""Run the ledger service: `python -m services.ledger`.

With BOULEVARD_LEDGER_PROFILE=<file> the process runs under cProfile and writes its stats
there on exit (read them with `python -m pstats <file>`), as the engine's
BOULEVARD_ENGINE_PROFILE does: how docs/performance.md's ledger profile was taken. Off unless
set; the profiler slows every call."""

import asyncio
import cProfile
import os

from boulevard.platform.gctune import tune_gc
from boulevard.platform.server import serve
from services.ledger.app import LedgerApp
from services.ledger.settings import get_ledger_settings


def main() -> None:
    settings = get_ledger_settings()
    tune_gc()
    profile_to = os.environ.get("BOULEVARD_LEDGER_PROFILE", "")
    if not profile_to:
        asyncio.run(serve(LedgerApp(settings), settings))
        return
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        asyncio.run(serve(LedgerApp(settings), settings))
    finally:
        profiler.disable()
        profiler.dump_stats(profile_to)


if __name__ == "__main__":
    main()
