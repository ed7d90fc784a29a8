"""A whole service process under cProfile, switched on by an environment variable of its own
(BOULEVARD_ENGINE_PROFILE, BOULEVARD_LEDGER_PROFILE): how docs/performance.md's profiles were
taken. A service's `__main__` wraps its run in `profiled(variable)`."""

import cProfile
import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def profiled(variable: str) -> Iterator[None]:
    """Run the block under cProfile when the environment variable named `variable` names a
    file, and write the stats there when the block ends, by returning or raising (read them
    with `python -m pstats <file>`). Unset or empty: the block runs as it is, since the
    profiler slows every call."""
    profile_to = os.environ.get(variable, "")
    if not profile_to:
        yield
        return
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        profiler.dump_stats(profile_to)
