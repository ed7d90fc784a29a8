"""Run the engine service: `python -m services.engine`.

With BOULEVARD_ENGINE_PROFILE=<file> the process runs under cProfile and writes its stats
there on exit (read them with `python -m pstats <file>`): how docs/performance.md's engine
profiles were taken. Off unless set; the profiler slows every call."""

from boulevard.platform import eventloop
from boulevard.platform.gctune import tune_gc
from boulevard.platform.profiling import profiled
from boulevard.platform.server import serve
from services.engine.app import EngineApp
from services.engine.settings import get_engine_settings


def main() -> None:
    settings = get_engine_settings()
    tune_gc()
    with profiled("BOULEVARD_ENGINE_PROFILE"):
        eventloop.run(serve(EngineApp(settings), settings))


if __name__ == "__main__":
    main()
