"""The engine's games index lists every game, also while other games are being written:
nats-py's `kv.keys()` could end its replay early under concurrent writes and drop keys (a
game missing from ListGames, seen in CI); the index reads the bucket's stream state."""

from __future__ import annotations

import asyncio

import pytest

from services.engine.kv import JetStreamKeyValue

pytestmark = pytest.mark.integration


async def test_keys_lists_every_key_while_others_are_written(nats_server) -> None:
    nc = await nats_server.connect("engine")
    try:
        index = await JetStreamKeyValue.open(nc, "engine_games")
        assert await index.keys() == []
        written = [f"g{i:04d}" for i in range(600)]
        await asyncio.gather(*(index.put(k, b"{}") for k in written))
        stop = asyncio.Event()
        churned: set[str] = set()

        async def churn() -> None:  # other games being created and finished meanwhile
            n = 0
            while not stop.is_set():
                key = f"z{n % 50:04d}"
                await index.put(key, b'{"n": %d}' % n)
                churned.add(key)
                n += 1

        writers = [asyncio.create_task(churn()) for _ in range(4)]
        try:
            for _ in range(20):
                listed = await index.keys()
                assert set(written) <= set(listed)
                assert listed == sorted(listed) and len(listed) == len(set(listed))
        finally:
            stop.set()
            await asyncio.gather(*writers)
        assert await index.keys() == sorted({*written, *churned})
    finally:
        await nc.close()
