"""Ledger throughput beside raw JetStream, measured in the same run; and the Merkle tree at
one million entries.

1. End to end: envelopes published on GAMES (256 in flight, as many games appending at once)
   → entry durable in LEDGER (acknowledged by the server with `sync_interval: always` and
   counted by the service's own GetTreeHead), with the ledger service running as its own
   process. Beside it, raw `publish_async` (256 in flight) of the same envelopes to a
   scratch stream on the same server: the binding limit of an internal consumer.
   Measured "live" (publishing while it posts) and "backlog" (GAMES filled first, then the
   service started: the posting rate alone, rebuild included).
2. Rebuild: the service reading LEDGER back on start (entries/s).
3. The 1,000,000-entry tree: build, inclusion / consistency proof generation and
   verification per second.

Usage: python bench/ledger.py [--quick] [--entries N] [--runs R]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import grpc
from nats.js import JetStreamContext

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Timer, nats_server, rate

from boulevard.accounting import (
    MerkleTree,
    TreeHeadSigner,
    verify_consistency,
    verify_inclusion,
)
from boulevard.api.v1 import events_pb2
from boulevard.client.ledger import LedgerClient
from boulevard.eventlog.jetstream import encode_commit
from boulevard.eventlog.store import NewEvent
from boulevard.messaging.server import NatsServer, free_port
from boulevard.messaging.streams import StreamSpec, ensure_stream
from boulevard.platform.logging import configure_logging
from services.ledger.book import LedgerBook
from services.ledger.journal_log import LedgerLog
from services.ledger.poster import Poster

ROOT = Path(__file__).resolve().parent.parent
WINDOW = 256


def envelopes(n: int, games: int = 200) -> list[bytes]:
    """Money-moving envelopes of `games` games, each a bank payout (never overdraws)."""
    out = []
    for i in range(n):
        g, v = i % games, i // games + 1
        env = events_pb2.EventEnvelope(
            event_id=f"b{g}-{v}",
            type="Paid",
            game_id=f"b{g}",
            game="synthetic",
            version=v,
            time_unix_ms=1_700_000_000_000 + i,
            payload=b'{"type":"Paid","amount":7}',
            transfers=[events_pb2.Transfer(source="bank", target=f"seat:{v % 4}", amount=7,
                                           reason="payout")],
        )  # fmt: skip
        out.append(env.SerializeToString())
    return out


def as_appended(raw: bytes) -> tuple[str, str, bytes]:
    """(subject, msg id, data) of one event appended as the event store appends it: an
    EventCommit of one envelope on `game.<id>`."""
    env = events_pb2.EventEnvelope.FromString(raw)
    commit = encode_commit([NewEvent(env.event_id, env.type, raw)], env.version)
    return f"game.{env.game_id}", env.event_id, commit


async def publish_all(js: JetStreamContext, items: list[tuple[str, str, bytes]]) -> None:
    pending = []
    for subject, msg_id, data in items:
        pending.append(await js.publish_async(subject, data, headers={"Nats-Msg-Id": msg_id}))
        if len(pending) >= WINDOW:
            await asyncio.gather(*pending[: WINDOW // 2])
            pending = pending[WINDOW // 2 :]
    await asyncio.gather(*pending)


async def raw_atomic(server: NatsServer, payloads: list[bytes], size: int = WINDOW) -> float:
    """Raw JetStream atomic batches (ADR-50) of `size`: how the ledger writes LEDGER."""
    nc = await server.connect()
    js = nc.jetstream()
    name = f"RAWB{random.randrange(10**9)}"
    await ensure_stream(js, StreamSpec(name, (f"{name.lower()}.>",)))
    subject = f"{name.lower()}.x"
    with Timer() as t:
        for start in range(0, len(payloads), size):
            chunk = payloads[start : start + size]
            batch_id = uuid.uuid4().hex
            for i, p in enumerate(chunk, start=1):
                headers = {"Nats-Batch-Id": batch_id, "Nats-Batch-Sequence": str(i),
                           "Nats-Msg-Id": f"{name}-{start + i}"}  # fmt: skip
                if i < len(chunk):
                    await nc.publish(subject, p, headers=headers)
                else:
                    headers["Nats-Batch-Commit"] = "1"
                    await js.publish(subject, p, headers=headers)
    await nc.close()
    return rate(len(payloads), t.seconds)


async def raw_publish(server: NatsServer, payloads: list[bytes]) -> float:
    nc = await server.connect()
    js = nc.jetstream()
    name = f"RAW{random.randrange(10**9)}"
    await ensure_stream(js, StreamSpec(name, (f"{name.lower()}.>",)))
    items = [(f"{name.lower()}.{i % 200}", f"r{i}", p) for i, p in enumerate(payloads)]
    with Timer() as t:
        await publish_all(js, items)
    await nc.close()
    return rate(len(payloads), t.seconds)


class LedgerProcess:
    def __init__(self, server: NatsServer, data_dir: Path) -> None:
        self.port = free_port()
        env = {
            **os.environ,
            "NATS_URL": server.url,
            "BOULEVARD_NATS_IDENTITIES_DIR": str(server.identities_dir),
            "BOULEVARD_DATA_DIR": str(data_dir),
            "BOULEVARD_LEDGER_PORT": str(self.port),
            "BOULEVARD_LEDGER_SIGNING_KEY": "22" * 32,
            "BOULEVARD_LOG_LEVEL": "warning",
            "BOULEVARD_LOG_FORMAT": "json",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "services.ledger"], cwd=ROOT, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.address = f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


async def durable_size(client: LedgerClient) -> int:
    try:
        _, _, size = await client.tree_head()
        return size
    except grpc.aio.AioRpcError:
        return 0


async def wait_serving(client: LedgerClient, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while True:
        try:
            await client.tree_head()
            return
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:  # serving, nothing signed yet
                return
        if time.monotonic() > deadline:
            raise TimeoutError("the ledger service did not start")
        await asyncio.sleep(0.05)


async def wait_size(client: LedgerClient, n: int) -> float:
    while await durable_size(client) < n:  # noqa: ASYNC110 - polling the service
        await asyncio.sleep(0.01)
    return time.perf_counter()


async def fresh_streams(js: JetStreamContext) -> None:
    for name in ("GAMES", "LEDGER"):
        with contextlib.suppress(Exception):  # absent on the first run
            await js.delete_stream(name)
    await ensure_stream(js, StreamSpec("GAMES", ("game.>",)))


async def live(server: NatsServer, payloads: list[bytes]) -> tuple[float, float]:
    """The service as its own process while envelopes are published: (entries/s from the
    first publish to the last entry durable, rebuild entries/s of a restarted process)."""
    nc = await server.connect()
    js = nc.jetstream()
    await fresh_streams(js)
    items = [as_appended(p) for p in payloads]
    n = len(payloads)
    with tempfile.TemporaryDirectory() as tmp:
        ledger = LedgerProcess(server, Path(tmp))
        try:
            async with grpc.aio.insecure_channel(ledger.address) as channel:
                client = LedgerClient(channel)
                await wait_serving(client)
                start = time.perf_counter()
                await publish_all(js, items)
                end = await wait_size(client, n)
        finally:
            ledger.stop()
        # Rebuild: a fresh process reads all of LEDGER back before it serves.
        ledger = LedgerProcess(server, Path(tmp))
        try:
            async with grpc.aio.insecure_channel(ledger.address) as channel:
                client = LedgerClient(channel)
                t0 = time.perf_counter()
                await wait_serving(client, within=600)
                rebuilt = time.perf_counter() - t0
                assert await durable_size(client) == n
        finally:
            ledger.stop()
    await nc.close()
    return rate(n, end - start), rate(n, rebuilt)


async def backlog(server: NatsServer, payloads: list[bytes], batch: int) -> float:
    """GAMES filled first, then the poster (in this process, nothing else running) drains
    it: entries/s until the last entry is durable in LEDGER."""
    nc = await server.connect()
    js = nc.jetstream()
    await fresh_streams(js)
    await publish_all(js, [as_appended(p) for p in payloads])
    await ensure_stream(js, StreamSpec("LEDGER", ("ledger.>",)))
    book = LedgerBook()
    poster = Poster(
        nc, book, LedgerLog(nc, "LEDGER", "ledger"), TreeHeadSigner(bytes(32)),
        games_stream="GAMES", games_prefix="game", durable="bench", fetch_batch=batch,
    )  # fmt: skip
    n = len(payloads)
    start = time.perf_counter()
    await poster.start()
    while len(book.stream_seqs) < n:  # noqa: ASYNC110 - polling the book
        await asyncio.sleep(0.005)
    seconds = time.perf_counter() - start
    await poster.stop()
    await nc.close()
    return rate(n, seconds)


def tree_figures(size: int, samples: int) -> list[str]:
    rng = random.Random(1)
    tree = MerkleTree()
    h = hashlib.sha256(b"bench").digest()
    with Timer() as build:
        for _ in range(size):
            tree.append_leaf_hash(h)
            h = hashlib.sha256(h).digest()
    root = tree.root()
    idx = [rng.randrange(size) for _ in range(samples)]
    with Timer() as gen:
        proofs = [tree.inclusion_proof(i, size) for i in idx]
    leaves = [tree.leaf_hash(i) for i in idx]
    with Timer() as ver:
        for i, leaf, proof in zip(idx, leaves, proofs, strict=True):
            verify_inclusion(i, size, leaf, proof, root)
    firsts = [rng.randrange(1, size) for _ in range(samples)]
    with Timer() as cgen:
        cproofs = [tree.consistency_proof(m, size) for m in firsts]
    roots = [tree.root(m) for m in firsts]
    with Timer() as cver:
        for m, r, proof in zip(firsts, roots, cproofs, strict=True):
            verify_consistency(m, size, r, root, proof)
    with Timer() as roots_t:
        for m in firsts:
            tree.root(m)

    def line(label: str, count: int, seconds: float, unit: str = "/s") -> str:
        return f"  {label:<44} {rate(count, seconds):>12,.0f} {unit}"

    return [
        line(f"tree of {size:,} entries built (append)", size, build.seconds, "entries/s")
        + f"  ({build.seconds:.1f} s)",
        line("inclusion proof generation", samples, gen.seconds),
        line("inclusion proof verification", samples, ver.seconds),
        line("consistency proof generation", samples, cgen.seconds),
        line("consistency proof verification", samples, cver.seconds),
        line("root of an earlier tree size", samples, roots_t.seconds),
        f"  proof length at {size:,}: {len(proofs[0])} hashes (inclusion), "
        f"{max(len(p) for p in cproofs)} max (consistency)",
    ]  # fmt: skip


async def throughput(n: int, runs: int, sync_always: bool, batch: int) -> list[str]:
    payloads = envelopes(n)
    raws, atomics, lives, backlogs, rebuilds = [], [], [], [], []
    with nats_server(sync_always=sync_always) as server:
        for _ in range(runs):
            raws.append(await raw_publish(server, payloads))
            atomics.append(await raw_atomic(server, payloads))
            live_rate, rebuild = await live(server, payloads)
            lives.append(live_rate)
            rebuilds.append(rebuild)
            backlogs.append(await backlog(server, payloads, batch))
    raw = statistics.median(raws)
    atomic = statistics.median(atomics)
    live_rate = statistics.median(lives)
    drain = statistics.median(backlogs)
    label = "sync_interval: always" if sync_always else "server default sync"
    return [
        f"  [{label}] {n:,} money events, median of {runs} runs",
        f"  raw publish_async, {WINDOW} in flight (A)           {raw:>10,.0f} msg/s",
        f"  raw atomic batches of {WINDOW} (B)                  {atomic:>10,.0f} msg/s",
        f"  end to end, live (publish → entry durable)   {live_rate:>10,.0f} entries/s"
        f"   ratio A {live_rate / raw:5.2f}   B {live_rate / atomic:5.2f}",
        f"  backlog drain (batches of {batch})               {drain:>10,.0f} entries/s"
        f"   ratio A {drain / raw:5.2f}   B {drain / atomic:5.2f}",
        f"  rebuild from LEDGER on start                 {statistics.median(rebuilds):>10,.0f}"
        " entries/s",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, one run")
    parser.add_argument("--entries", type=int, default=0)
    parser.add_argument("--runs", type=int, default=0)
    parser.add_argument("--tree", type=int, default=1_000_000)
    parser.add_argument("--no-default-sync", action="store_true")
    parser.add_argument("--batch", type=int, default=256, help="the poster's fetch batch")
    args = parser.parse_args()
    configure_logging("warning", "console")  # the in-process poster's info lines
    n = args.entries or (3_000 if args.quick else 20_000)
    runs = args.runs or (1 if args.quick else 3)
    tree = 100_000 if args.quick and args.tree == 1_000_000 else args.tree
    print("ledger: end to end (GAMES envelope published → entry durable in LEDGER)")
    for line in asyncio.run(throughput(n, runs, sync_always=True, batch=args.batch)):
        print(line, flush=True)
    if not args.no_default_sync:
        for line in asyncio.run(throughput(n, runs, sync_always=False, batch=args.batch)):
            print(line, flush=True)
    print(f"ledger: Merkle tree of {tree:,} entries")
    for line in tree_figures(tree, samples=2_000 if args.quick else 20_000):
        print(line, flush=True)


if __name__ == "__main__":
    main()
