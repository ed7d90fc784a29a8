"""The event loop every service process runs on (issue 28): uvloop, libuv's loop for asyncio,
where it is installed (every platform but Windows), else the standard library's.
BOULEVARD_EVENT_LOOP=asyncio asks for the standard library's anyway (to compare the two, as
docs/performance.md did, or should uvloop ever misbehave somewhere); =uvloop insists on uvloop.

Measured at 100 Las Vegas tables, alternated runs on one machine: 6-10% less engine CPU a
move on uvloop, and less in the dice service and the ledger (docs/performance.md)."""

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

EVENT_LOOP_ENV = "BOULEVARD_EVENT_LOOP"
CHOICES = ("auto", "uvloop", "asyncio")


def chosen() -> str:
    """The loop the environment chooses: "uvloop" or "asyncio" (ValueError for a bad value;
    "uvloop" named but not installed is an ImportError when run)."""
    choice = os.environ.get(EVENT_LOOP_ENV, "").strip().lower() or "auto"
    if choice not in CHOICES:
        raise ValueError(f"{EVENT_LOOP_ENV} must be one of {', '.join(CHOICES)}, not {choice!r}")
    if choice == "auto":
        try:
            import uvloop  # noqa: F401
        except ImportError:
            return "asyncio"
        return "uvloop"
    return choice


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on the loop `chosen()` names."""
    try:
        choice = chosen()
    except ValueError:
        main.close()  # never awaited: say so quietly, then fail the start
        raise
    if choice == "asyncio":
        return asyncio.run(main)
    import uvloop

    return uvloop.run(main)
