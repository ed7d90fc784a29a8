"""ListGames page latency from the engine's in-memory games index, beside the raw cost of one
KV get measured in the same run, at 1,000 and 10,000 games.

For each size: the games-index bucket is filled with summaries shaped as the engine writes
them; a fresh index replays it (the time a replica needs before it serves); then ListGames is
called through the engine's servicer method (no gRPC hop: bench/engine.py measures that) for
the first page, a page from the middle and a filtered page (finished games, one in ten), and
compared with one KV get of one summary. For scale, the former listing's cost per call —
every key through STREAM.INFO with a subjects filter plus one chunk of 64 gets, the same
primitives (JetStreamKeyValue.keys, .get) — is measured too, and the memory the index holds
per game (tracemalloc, a separate replay).
Usage: python bench/list_games.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from common import Timer, nats_server

from boulevard.api.v1 import engine_pb2
from boulevard.platform.identity import TokenVerifier
from services.engine.games_index import GamesIndex
from services.engine.kv import JetStreamKeyValue
from services.engine.server import EngineServicer

GAMES = ("lords_of_vegas", "las_vegas", "vegas_showdown", "long_shot")
BUCKET = "engine_games"


class Anonymous:
    """A call's context with no authorization header (ListGames without player_id)."""

    def invocation_metadata(self) -> tuple[()]:
        return ()


def summary(n: int) -> bytes:
    """As services/engine/server.py summary_json writes it."""
    players = [f"player-{uuid.uuid4().hex[:12]}" for _ in range(2 + n % 4)]
    info: dict[str, Any] = {
        "game": GAMES[n % len(GAMES)],
        "status": "finished" if n % 10 == 0 else "active",
        "version": 50 + n % 900,
        "players": players,
        "updated_unix_ms": 1_764_000_000_000 + n,
    }
    if n % 7 == 0:
        info["seeds_pending_until"] = 1_764_000_060_000 + n
    return json.dumps(info, sort_keys=True).encode()


def game_id(n: int) -> str:
    return "g" + uuid.uuid5(uuid.NAMESPACE_OID, str(n)).hex[:31]


async def timed(call: Any, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        await call()
        out.append(time.perf_counter() - start)
    return out


def us(samples: list[float]) -> str:
    p50 = statistics.median(samples) * 1e6
    p99 = sorted(samples)[max(0, int(len(samples) * 0.99) - 1)] * 1e6
    return f"p50 {p50:9,.0f} µs   p99 {p99:9,.0f} µs"


async def fill(kv: JetStreamKeyValue, start: int, stop: int) -> None:
    window = 256
    for lo in range(start, stop, window):
        await asyncio.gather(
            *(kv.put(game_id(n), summary(n)) for n in range(lo, min(stop, lo + window)))
        )


async def measure(server: Any, sizes: list[int], repeat: int) -> None:
    nc = await server.connect()
    kv = await JetStreamKeyValue.open(nc, BUCKET)
    filled = 0
    for size in sizes:
        await fill(kv, filled, size)
        filled = size
        print(f"\n{size:,} games")
        await one_size(server, kv, size, repeat)
        await held_per_game(server, size)
    await nc.close()


async def one_size(server: Any, kv: JetStreamKeyValue, size: int, repeat: int) -> None:
    # A fresh replica's replay, before it serves.
    replica_nc = await server.connect()
    index = GamesIndex(await JetStreamKeyValue.open(replica_nc, BUCKET), replica_nc)
    with Timer() as t:
        await index.start()
    assert len(index) == size, (len(index), size)
    print(f"  replay before serving            {t.seconds * 1000:9,.0f} ms")

    servicer = EngineServicer(None, None, index, TokenVerifier("unused", "bench", "bench"))  # type: ignore[arg-type]
    keys = [k for k, _ in index.after("")]
    middle = keys[len(keys) // 2]
    context = Anonymous()

    def page(**kw: Any) -> Any:
        async def call() -> None:
            reply = await servicer.ListGames(
                engine_pb2.ListGamesRequest(page_size=50, **kw),
                context,  # type: ignore[arg-type]
            )
            assert len(reply.games) == 50

        return call

    some = keys[:: max(1, len(keys) // repeat)][:repeat]

    async def one_get() -> None:
        await kv.get(some[int(time.perf_counter_ns()) % len(some)])

    raw = await timed(one_get, repeat)
    first = await timed(page(), repeat)
    mid = await timed(page(page_token=middle), repeat)
    finished = await timed(page(status=engine_pb2.GAME_STATUS_FINISHED), repeat)

    async def former() -> None:  # the listing ListGames did per call before the index
        listed = await kv.keys()
        await asyncio.gather(*(kv.get(k) for k in listed[:64]))

    old = await timed(former, max(5, repeat // 20))
    raw_p50 = statistics.median(raw)
    print(f"  raw: one KV get                  {us(raw)}")
    for label, samples in (
        ("ListGames, first page of 50", first),
        ("ListGames, a middle page of 50", mid),
        ("ListGames, 50 finished (1 in 10)", finished),
    ):
        ratio = statistics.median(samples) / raw_p50
        print(f"  {label:<32} {us(samples)}   ratio to one get {ratio:5.2f}")
    ratio = statistics.median(old) / raw_p50
    print(f"  former listing per call          {us(old)}   ratio to one get {ratio:5.2f}")
    walk = statistics.median(first) * size / 50
    print(
        f"  paging through all {size:,} by 50:  about {walk * 1000:,.0f} ms now, "
        f"{statistics.median(old) * size / 50:,.1f} s with the former listing"
    )

    # Another replica's lag: from a put's acknowledgement to this replica's watch holding it.
    lags = []
    for n in range(min(repeat, 200)):
        key = keys[n * 7 % len(keys)]
        start = time.perf_counter()
        revision = await kv.put(key, summary(n))
        # A spin: an event would add a wake-up of its own to what is measured.
        while (held := index.get(key)) is None or held.revision < revision:  # noqa: ASYNC110
            await asyncio.sleep(0)
        lags.append(time.perf_counter() - start)
    print(f"  put, then held by another replica {us(lags)}")
    await index.stop()
    await replica_nc.close()


async def held_per_game(server: Any, size: int) -> None:
    """What the index holds per game, from a separate replay under tracemalloc."""
    gc.collect()
    nc = await server.connect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    held = GamesIndex(await JetStreamKeyValue.open(nc, BUCKET), nc)
    await held.start()
    await held.stop()
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    mib = grown / 2**20
    print(f"  memory held per game             {grown / size:9,.0f} bytes ({mib:.1f} MiB)")
    assert len(held) == size
    await nc.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 games only, fewer calls")
    args = parser.parse_args()
    sizes = [1_000] if args.quick else [1_000, 10_000]
    with nats_server() as server:
        asyncio.run(measure(server, sizes, 100 if args.quick else 400))


if __name__ == "__main__":
    main()
