"""Shared bits of the benchmarks: a throwaway nats-server and a timer."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from boulevard.messaging.server import NatsServer


@contextmanager
def nats_server(sync_always: bool = True) -> Iterator[NatsServer]:
    with tempfile.TemporaryDirectory() as tmp:
        server = NatsServer(Path(tmp) / "nats", sync_always=sync_always).start()
        try:
            yield server
        finally:
            server.stop()


class Timer:
    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def row(label: str, ours: float, raw: float, unit: str = "msg/s") -> str:
    return f"  {label:<44} {ours:>10,.0f} {unit}   raw {raw:>10,.0f}   ratio {ours / raw:5.2f}"
