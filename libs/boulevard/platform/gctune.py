"""The garbage collector tuned for a service process's work (issue 28): what is alive at start
is frozen out of the collector's walks, young collections run less often, and cycles made
afterwards are still collected. Every service's `__main__` calls `tune_gc` once, after its
imports and before it serves."""

import gc

# Container objects allocated (net) between two young-generation collections; CPython's
# default is 700. See `tune_gc`.
GC_YOUNG_THRESHOLD = 7000


def tune_gc() -> None:
    """Make the cyclic garbage collector cheaper for a service's work (issue 28): with
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
