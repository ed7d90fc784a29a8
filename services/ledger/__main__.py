"""Run the ledger service: `python -m services.ledger`.

With BOULEVARD_LEDGER_PROFILE=<file> the process runs under cProfile and writes its stats
there on exit (read them with `python -m pstats <file>`), as the engine's
BOULEVARD_ENGINE_PROFILE does: how docs/performance.md's ledger profile was taken. Off unless
set; the profiler slows every call."""

from boulevard.platform import eventloop
from boulevard.platform.gctune import tune_gc
from boulevard.platform.profiling import profiled
from boulevard.platform.server import serve
from services.ledger.app import LedgerApp
from services.ledger.settings import get_ledger_settings


def main() -> None:
    settings = get_ledger_settings()
    tune_gc()
    with profiled("BOULEVARD_LEDGER_PROFILE"):
        eventloop.run(serve(LedgerApp(settings), settings))


if __name__ == "__main__":
    main()
