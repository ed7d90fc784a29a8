"""The engine's games index lists every game, also while other games are being written:
nats-py's `kv.keys()` could end its replay early under concurrent writes and drop keys (a
game missing from ListGames, seen in CI); the index reads the bucket's stream state."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from services.engine.games_index import GamesIndex, IndexUnavailable
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


# The in-memory index (services/engine/games_index.py) -----------------------------------


def summary(n: int, status: str = "active", players: tuple[str, ...] = ("p1", "p2")) -> bytes:
    return json.dumps(
        {"game": "las_vegas", "status": status, "version": n, "players": list(players)}
    ).encode()


async def open_index(nats_server: Any, start: bool = True) -> tuple[NATS, GamesIndex]:
    nc = await nats_server.connect("engine")  # the engine's own permissions
    index = GamesIndex(await JetStreamKeyValue.open(nc, "engine_games"), nc)
    if start:
        await index.start(timeout=30)
    return nc, index


async def eventually(check: Callable[[], bool], seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not reached in time"
        await asyncio.sleep(0.02)


def listed(index: GamesIndex) -> list[str]:
    return [key for key, _ in index.after("")]


async def test_a_fresh_index_sees_every_key_written_before_it_started_under_writes(
    nats_server,
) -> None:
    """The old bug's shape: a replay while other games are created. Every key whose put
    returned before the index started is there when it says it is ready."""
    writer_nc = await nats_server.connect("engine")
    writer = await JetStreamKeyValue.open(writer_nc, "engine_games")
    await asyncio.gather(*(writer.put(f"g{i:04d}", summary(i)) for i in range(3000)))
    done: set[str] = {f"g{i:04d}" for i in range(3000)}
    stop = asyncio.Event()

    async def churn(w: int) -> None:  # new games and updates of old ones, all the while
        n = 0
        while not stop.is_set():
            key = f"c{w}-{n:05d}" if n % 2 else f"g{n % 600:04d}"
            await writer.put(key, summary(n))
            done.add(key)
            n += 1

    writers = [asyncio.create_task(churn(w)) for w in range(4)]
    try:
        for _ in range(8):
            before = set(done)
            nc, index = await open_index(nats_server)
            try:
                keys = listed(index)
                assert before <= set(keys), sorted(before - set(keys))[:5]
                assert keys == sorted(keys) and len(keys) == len(set(keys))
            finally:
                await index.stop()
                await nc.close()
    finally:
        stop.set()
        await asyncio.gather(*writers)
    nc, index = await open_index(nats_server)
    try:
        await eventually(lambda: set(listed(index)) == done)
        assert listed(index) == await writer.keys()
    finally:
        await index.stop()
        await nc.close()
        await writer_nc.close()


class Gate:
    """Holds back what an index's watch delivers until opened: a replica whose watch lags
    (the NATS delivery is real; only its hand-over to the index waits)."""

    def __init__(self, index: GamesIndex) -> None:
        self.deliver = index._deliver
        self.held: list[Msg] = []
        self.open = True
        index._deliver = self  # type: ignore[method-assign]

    def __call__(self, msg: Msg) -> None:
        if self.open:
            self.deliver(msg)
        else:
            self.held.append(msg)

    def close(self) -> None:
        self.open = False

    def release(self) -> None:
        self.open = True
        for msg in self.held:
            self.deliver(msg)
        self.held.clear()


async def test_two_replicas_read_their_own_writes_and_see_the_others_eventually(
    nats_server,
) -> None:
    nc_a, a = await open_index(nats_server)
    nc_b, b = await open_index(nats_server)
    gate_a, gate_b = Gate(a), Gate(b)
    try:
        # a's watch lags: its own put is held all the same, at once.
        gate_a.close()
        revision = await a.put("game-1", summary(1))
        held = a.get("game-1")
        assert held is not None and held.revision == revision and held.version == 1
        assert listed(a) == ["game-1"]
        await eventually(lambda: b.get("game-1") is not None)
        assert b.get("game-1") == held
        gate_a.release()  # its own put comes back through the watch: nothing changes
        await eventually(lambda: a._applied >= revision)
        assert a.get("game-1") == held

        # The other way round, and an update: finished on b, then seen finished on a.
        gate_b.close()
        later = await b.put("game-1", summary(9, "finished"))
        assert later > revision
        assert (b.get("game-1") or held).status == "finished"
        await eventually(lambda: (a.get("game-1") or held).revision == later)
        gate_b.release()
        assert a.get("game-1") == b.get("game-1")
        assert listed(a) == listed(b) == ["game-1"]
    finally:
        for index, nc in ((a, nc_a), (b, nc_b)):
            await index.stop()
            await nc.close()


async def test_an_older_delivery_never_overwrites_a_newer_summary(nats_server) -> None:
    nc, index = await open_index(nats_server)
    other_nc = await nats_server.connect("engine")
    other = await JetStreamKeyValue.open(other_nc, "engine_games")
    gate = Gate(index)
    try:
        index.apply("k", 10, summary(10))
        index.apply("k", 5, summary(5))
        assert (index.get("k") or pytest.fail()).version == 10
        index.apply("k", 12, None)  # deleted at 12: an older value does not bring it back
        index.apply("k", 11, summary(11))
        assert index.get("k") is None and "k" not in listed(index)

        # Another replica writes r1; this one, whose watch lags, writes r2; then the watch
        # delivers r1 (and r2). r2 stays.
        for n in range(5):
            key = f"race-{n}"
            gate.close()
            first = await other.put(key, summary(1))
            # r1 has reached this replica and waits behind the gate: an older delivery.
            await eventually(
                lambda: any(m.metadata.sequence.stream == first for m in gate.held)  # noqa: B023
            )
            mine = await index.put(key, summary(2))
            assert first < mine
            gate.release()
            await eventually(lambda: index._applied >= mine)  # noqa: B023  (this round's)
            held = index.get(key)
            assert held is not None and held.revision == mine and held.version == 2
    finally:
        await index.stop()
        await nc.close()
        await other_nc.close()


async def test_deletes_and_purges_remove_the_key(nats_server) -> None:
    nc, index = await open_index(nats_server)
    try:
        for key in ("a", "b", "c"):
            await index.put(key, summary(1))
        await index.kv.kv.delete("a")
        await index.kv.kv.purge("b")
        await eventually(lambda: listed(index) == ["c"])
        # A fresh replay (delete and purge markers in the stream) agrees.
        nc2, fresh = await open_index(nats_server)
        try:
            assert listed(fresh) == ["c"]
        finally:
            await fresh.stop()
            await nc2.close()
    finally:
        await index.stop()
        await nc.close()


async def test_an_undecodable_summary_is_left_out_not_fatal(nats_server) -> None:
    nc, index = await open_index(nats_server)
    try:
        await index.put("good", summary(1))
        await index.kv.put("bad", b"not json")
        await index.kv.put("worse", b'{"game": "x"}')  # no status, version, players
        await index.put("later", summary(2))
        await eventually(lambda: index._applied >= (index.get("later") or pytest.fail()).revision)
        assert listed(index) == ["good", "later"]
    finally:
        await index.stop()
        await nc.close()


async def test_a_nats_restart_turns_the_index_unavailable_then_it_catches_up(
    nats_server,
) -> None:
    nc, index = await open_index(nats_server)
    try:
        for i in range(50):
            await index.put(f"before-{i:02d}", summary(i))
        assert index.ready

        nats_server.stop()
        await eventually(lambda: not index.ready, 10)
        with pytest.raises(IndexUnavailable, match="replaying"):
            await index.wait_ready(0.3)

        nats_server.start()
        # Another replica writes while this one reconnects and resumes its watch.
        writer_nc = await nats_server.connect("engine")
        try:
            writer = await JetStreamKeyValue.open(writer_nc, "engine_games")
            after = [f"after-{i:02d}" for i in range(50)]
            for key in after:
                await writer.put(key, summary(1))
            await index.wait_ready(30)
            assert index.resyncs >= 1
            await eventually(lambda: set(after) <= set(listed(index)))
            assert listed(index) == await writer.keys()
            assert all(index.get(f"before-{i:02d}") is not None for i in range(50))
        finally:
            await writer_nc.close()
    finally:
        await index.stop()
        await nc.close()


async def test_a_start_that_cannot_complete_fails_and_leaves_no_watch(nats_server) -> None:
    nc, index = await open_index(nats_server, start=False)
    try:
        nats_server.stop()
        await eventually(lambda: not nc.is_connected, 10)
        with pytest.raises(IndexUnavailable):
            await index.start(timeout=0.5)
        assert index._task is None and index._sub is None
        with pytest.raises(IndexUnavailable, match="not running"):
            await index.wait_ready(0.1)
    finally:
        await nc.close()


async def test_a_lost_consumer_is_replaced_and_the_index_catches_up(nats_server) -> None:
    """The watch's consumer disappears without the connection dropping (deleted here by an
    operator): nats-py's ordered consumer misses its heartbeats and resumes from the
    sequence after the last it passed on, so nothing written meanwhile is missed."""
    nc = await nats_server.connect("engine")
    index = GamesIndex(await JetStreamKeyValue.open(nc, "engine_games"), nc, 0.5)
    admin = await nats_server.connect()
    try:
        await index.start(timeout=30)
        await index.put("before", summary(1))
        assert index._sub is not None
        consumer = index._sub._consumer
        js = admin.jetstream()
        await js.delete_consumer("KV_engine_games", consumer)
        writer = await JetStreamKeyValue.open(admin, "engine_games")
        for i in range(20):
            await writer.put(f"meanwhile-{i:02d}", summary(i))
        await eventually(lambda: len(index) == 21, 20)
        assert index._sub._consumer != consumer  # a new consumer, not the old one revived
        assert listed(index) == await writer.keys()
        assert index.ready
    finally:
        await index.stop()
        await nc.close()
        await admin.close()
