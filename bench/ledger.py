"""Ledger throughput beside raw JetStream, measured in the same run; and the Merkle tree at
one million entries.

1. End to end: envelopes published on GAMES (256 in flight, as many games appending at once)
   → entry durable in LEDGER (acknowledged by the server with `sync_interval: always` and
   counted by the service's own GetTreeHead), with the ledger service running as its own
   process. Beside it, raw `publish_async` (256 in flight) of the same envelopes to a
   scratch stream on the same server: the binding limit of an internal consumer.
   Measured "live" (publishing while it posts) and "backlog" (GAMES filled first, then the
   service started: the posting rate alone, rebuild included).
2. Restart: the service started again on that LEDGER, timed from spawn until it serves
   (entries/s; at these sizes mostly Python's start; it loads the checkpoint the first
   process wrote on its clean stop).
3. Restart at 100,000 and 1,000,000 entries: LEDGER filled by a bench-only writer (valid
   entries and signed heads made with the ledger's own code, stored in atomic batches the
   way the service stores them), then the service started on it: once with no checkpoint
   (it reads and re-verifies all of LEDGER, then writes its first checkpoint), and once
   more after a short tail was appended (it loads the checkpoint and reads only the
   tail). Beside them, the raw JetStream read rate of the same LEDGER (the ordered push
   consumer the rebuild uses, doing nothing with the messages) in the same run.
4. The 1,000,000-entry tree: build, inclusion / consistency proof generation and
   verification per second.
5. CPU per envelope (`--only cpu`): the poster in this process, fed a live trickle of
   GAMES commits shaped like 100 Lords of Vegas tables (1-2 envelopes a commit, about one
   envelope in five moving money; 300 commits/s in bursts of 3, published by a separate
   process so its CPU is not counted). Prints this process's CPU µs per envelope (the
   poster and its NATS client: all the ledger's posting work but the gRPC API), and
   per envelope the NATS messages in and out and the asyncio tasks created: counts that
   do not depend on the machine.

Usage: python bench/ledger.py [--quick] [--entries N] [--runs R] [--only SECTION]
       [--restart-sizes 100000,1000000] [--tail 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
import uuid
from pathlib import Path

import grpc
from nats.js import JetStreamContext

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Timer, nats_server, rate

from boulevard.accounting import (
    EntrySource,
    Ledger,
    MerkleTree,
    Posting,
    TreeHeadSigner,
    verify_consistency,
    verify_inclusion,
)
from boulevard.accounting.accounts import account_id
from boulevard.api.v1 import events_pb2
from boulevard.client.ledger import LedgerClient
from boulevard.eventlog.jetstream import encode_commit
from boulevard.eventlog.store import NewEvent
from boulevard.messaging.server import NatsServer, free_port
from boulevard.messaging.streams import StreamSpec, ensure_stream
from boulevard.platform.logging import configure_logging
from services.ledger.book import LedgerBook
from services.ledger.journal_log import LedgerLog, Outgoing, replay_stream
from services.ledger.mapping import head_to_pb
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
    def __init__(
        self, server: NatsServer, data_dir: Path, log: Path | None = None, **extra: str
    ) -> None:
        self.port = free_port()
        env = {
            **os.environ,
            "NATS_URL": server.url,
            "BOULEVARD_NATS_IDENTITIES_DIR": str(server.identities_dir),
            "BOULEVARD_DATA_DIR": str(data_dir),
            "BOULEVARD_LEDGER_PORT": str(self.port),
            "BOULEVARD_LEDGER_SIGNING_KEY": "22" * 32,
            # Any free port: others' ledgers on this machine hold the default one.
            "BOULEVARD_LEDGER_METRICS_PORT": "0",
            "BOULEVARD_LOG_LEVEL": "info" if log else "warning",
            "BOULEVARD_LOG_FORMAT": "json",
            **extra,
        }
        out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 - the child's
        self.process = subprocess.Popen(
            [sys.executable, "-m", "services.ledger"], cwd=ROOT, env=env,
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
        if log:
            out.close()
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


def trickle_commits(
    n: int, games: int = 100, seed: int = 28
) -> tuple[list[tuple[str, str, bytes]], int]:
    """`n` GAMES commits (subject, msg id, data) of `games` interleaved games shaped like a
    Lords of Vegas table's (1-2 envelopes a commit, about one envelope in five a payout
    from the bank, payloads of canonical JSON around 200 bytes), and how many entries
    posting them makes."""
    rng = random.Random(seed)
    versions = [0] * games
    out, entries = [], 0
    for i in range(n):
        g = i % games
        game_id = f"t{g}"
        raws: list[NewEvent] = []
        first = versions[g] + 1
        for _ in range(1 + (i // games) % 2):
            versions[g] += 1
            v = versions[g]
            transfers = []
            if v == 1 or rng.random() < 0.2:
                payout = events_pb2.Transfer(
                    source="bank",
                    target=f"seat:{v % 4}",
                    amount=rng.randint(1, 12),
                    reason="payout",
                )
                transfers = [payout]
                entries += 1
            kind = "Paid" if transfers else "CasinoBuilt"
            env = events_pb2.EventEnvelope(
                event_id=uuid.UUID(int=rng.getrandbits(128)).hex, type=kind, game_id=game_id,
                game="lords_of_vegas", version=v, time_unix_ms=1_700_000_000_000 + i,
                causation_id=uuid.UUID(int=rng.getrandbits(128)).hex, correlation_id="m1",
                payload=json.dumps({"type": kind, "seat": v % 4, "lot": rng.randrange(48),
                                    "dice": [rng.randint(1, 6) for _ in range(4)],
                                    "note": "x" * rng.randint(60, 140)}).encode(),
                transfers=transfers, prev_hash=rng.randbytes(32),
            )  # fmt: skip
            raws.append(NewEvent(env.event_id, kind, env.SerializeToString()))
        out.append((f"game.{game_id}", raws[0].event_id, encode_commit(raws, first)))
    return out, entries


async def publish_trickle(store_dir: Path, port: int, n: int, per_second: int, burst: int) -> None:
    """The `cpu` section's publisher (its own process): `n` commits, `burst` at a time."""
    nc = await NatsServer(store_dir, port=port).connect()
    js = nc.jetstream()
    items, _ = trickle_commits(n)
    started = time.perf_counter()
    for k in range(0, n, burst):
        acks = [await js.publish_async(s, d, headers={"Nats-Msg-Id": m})
                for s, m, d in items[k : k + burst]]  # fmt: skip
        await asyncio.gather(*acks)
        ahead = started + (k + burst) / per_second - time.perf_counter()
        if ahead > 0:
            await asyncio.sleep(ahead)
    await nc.close()


def decode_costs(items: list[tuple[str, str, bytes]]) -> list[str]:
    """µs an envelope to find the ones that move money, three ways, in this process: each
    commit through `decode_commit` (a record per event) then each envelope; the commit's
    protobuf events directly (what the poster does); and that with a byte test first that
    skips an envelope which cannot hold transfers (no byte 0x52 or 0xD2, the only first
    bytes field 10's tag can have, and no "GameFinished")."""
    from boulevard.eventlog.jetstream import decode_commit

    envelope, commit = events_pb2.EventEnvelope.FromString, events_pb2.EventCommit.FromString
    datas = [(s.rsplit(".", 1)[-1], d) for s, _, d in items]

    def by_records() -> int:
        return sum(
            1
            for sid, d in datas
            for e in decode_commit(sid, d)
            if (env := envelope(e.data)).transfers or env.type == "GameFinished"
        )

    def by_protobuf() -> int:
        return sum(
            1
            for _, d in datas
            for e in commit(d).events
            if (env := envelope(e.data)).transfers or env.type == "GameFinished"
        )

    def skimmed() -> int:
        n = 0
        for _, d in datas:
            for e in commit(d).events:
                raw = e.data
                if b"R" not in raw and b"\xd2" not in raw and b"GameFinished" not in raw:
                    continue
                env = envelope(raw)
                n += bool(env.transfers or env.type == "GameFinished")
        return n

    envs = sum(len(commit(d).events) for _, d in datas)
    assert by_records() == by_protobuf() == skimmed()
    lines = []
    for label, fn in (("decode_commit, then each envelope", by_records),
                      ("the commit's protobuf events (the poster)", by_protobuf),
                      ("with the byte test first", skimmed)):  # fmt: skip
        best = min(timeit.repeat(fn, number=3, repeat=5)) / 3
        lines.append(f"  decoding: {label:<44} {best / envs * 1e6:6.2f} µs/envelope")
    return lines


async def cpu_per_envelope(n: int, per_second: int = 300, burst: int = 3) -> list[str]:
    """The poster's CPU per envelope at a live trickle (docstring of this module, 5)."""
    items, entries = trickle_commits(n)
    envs = sum(len(events_pb2.EventCommit.FromString(d).events) for _, _, d in items)
    with nats_server() as server:
        nc = await server.connect()
        js = nc.jetstream()
        await fresh_streams(js)
        await ensure_stream(js, StreamSpec("LEDGER", ("ledger.>",)))
        book = LedgerBook()
        poster = Poster(
            nc, book, LedgerLog(nc, "LEDGER", "ledger"), TreeHeadSigner(bytes(32)),
            games_stream="GAMES", games_prefix="game", durable="bench",
        )  # fmt: skip
        await poster.start()
        loop = asyncio.get_running_loop()
        tasks = 0

        def counting_factory(loop: asyncio.AbstractEventLoop, coro, **kw):  # type: ignore[no-untyped-def]
            nonlocal tasks
            tasks += 1
            return asyncio.Task(coro, loop=loop, **kw)

        loop.set_task_factory(counting_factory)
        before = dict(nc.stats)
        usage0, wall0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        publisher = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--publish-trickle",
            f"{server.store_dir},{server.port},{n},{per_second},{burst}", cwd=ROOT,
        )  # fmt: skip
        while book.size < entries:  # noqa: ASYNC110 - polling the book, rarely
            await asyncio.sleep(0.05)
        usage, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - wall0
        user, system = usage.ru_utime - usage0.ru_utime, usage.ru_stime - usage0.ru_stime
        loop.set_task_factory(None)
        msgs_in = nc.stats["in_msgs"] - before["in_msgs"]
        msgs_out = nc.stats["out_msgs"] - before["out_msgs"]
        assert await publisher.wait() == 0
        await poster.stop()
        await nc.close()
    us = 1e6 / envs  # seconds in all -> µs per envelope
    return [
        f"  {n:,} commits, {envs:,} envelopes, {entries:,} entries, {per_second} commits/s"
        f" in bursts of {burst}; {wall:.1f} s",
        f"  CPU per envelope (this process: poster + NATS client)  {(user + system) * us:8.1f}"
        f" µs  (user {user * us:.1f}, system {system * us:.1f})",
        f"  NATS messages in / out per envelope                  {msgs_in / envs:6.2f} / "
        f"{msgs_out / envs:.2f}",
        f"  asyncio tasks created per envelope                   {tasks / envs:6.2f}",
        *decode_costs(items),
    ]


SIGNING_SEED = bytes.fromhex("22" * 32)  # LedgerProcess's key: the heads must verify


class BenchWriter:
    """Valid entries and signed heads, made with the ledger's own code (`Ledger.post`, the
    tree-head signer) and stored with the service's own `LedgerLog.publish` (atomic
    batches, each expecting the last sequence): LEDGER as the service would have written
    it, without a million GAMES events to post first."""

    def __init__(self, server: NatsServer, games: int = 200) -> None:
        self.server = server
        self.games = games
        self.ledger = Ledger()
        self.signer = TreeHeadSigner(SIGNING_SEED)
        self.written = 0

    async def write(self, n: int, batch: int = 500, sign_every: int = 1000) -> float:
        """Append n entries (a head every `sign_every` and at the end); returns seconds."""
        nc = await self.server.connect()
        journal = LedgerLog(nc, "LEDGER", "ledger")
        after = await journal.last_seq()
        started = time.perf_counter()
        out: list[Outgoing] = []
        ledger = self.ledger
        for i in range(self.written, self.written + n):
            g, v = i % self.games, i // self.games + 1
            game = f"b{g}"
            entry = ledger.post(
                EntrySource(game, v, f"{game}-{v}", "Paid", 1_700_000_000_000 + i),
                (Posting(account_id(game, "bank"), -7, "payout"),
                 Posting(account_id(game, f"seat:{v % 4}"), 7, "payout")),
            )  # fmt: skip
            out.append(Outgoing(journal.entry_subject(game), entry.canonical, f"ledger:{game}:{v}"))
            if ledger.size % sign_every == 0 or i == self.written + n - 1:
                out.append(self._head(journal))
            if len(out) >= batch:
                after = (await journal.publish(out, after))[-1]
                out = []
        if out:
            after = (await journal.publish(out, after))[-1]
        self.written += n
        await nc.close()
        return time.perf_counter() - started

    def _head(self, journal: LedgerLog) -> Outgoing:
        size = self.ledger.size
        sth = self.signer.sign(size, self.ledger.tree.root(size), 1_700_000_000_000 + size)
        data = head_to_pb(sth).SerializeToString()
        return Outgoing(
            journal.head_subject, data, f"ledger-head:{size}:{sth.head.root_hash.hex()}"
        )


async def raw_read(server: NatsServer) -> tuple[int, float]:
    """(messages, msg/s) of reading all of LEDGER with the ordered push consumer the rebuild
    uses, doing nothing with them."""
    nc = await server.connect()
    count = 0

    def take(subject: str, data: bytes, seq: int) -> None:
        nonlocal count
        count += 1

    with Timer() as t:
        await replay_stream(nc.jetstream(), "LEDGER", "ledger.>", take)
    await nc.close()
    return count, rate(count, t.seconds)


def seconds_of(line: dict[str, object], field: str) -> float:
    value = line[field]
    assert isinstance(value, (int, float)), line
    return float(value)


def logged(log: Path, event: str) -> list[dict[str, object]]:
    lines = log.read_text().splitlines() if log.exists() else []
    return [
        d for d in (json.loads(x) for x in lines if x.startswith("{")) if d.get("event") == event
    ]


async def start_and_time(
    server: NatsServer, data_dir: Path, log: Path, **env: str
) -> tuple[LedgerProcess, float, dict[str, object]]:
    """A ledger process started on the LEDGER there is: (it, seconds from spawn until it
    serves, its own "ledger rebuilt" log line)."""
    seen = len(logged(log, "ledger rebuilt"))
    t0 = time.perf_counter()
    ledger = LedgerProcess(server, data_dir, log, **env)
    async with grpc.aio.insecure_channel(ledger.address) as channel:
        serving = asyncio.create_task(wait_serving(LedgerClient(channel), within=3600))
        while not serving.done():
            if ledger.process.poll() is not None:
                serving.cancel()
                raise RuntimeError(f"the ledger exited: {log.read_text()[-2000:]}")
            await asyncio.sleep(0.05)
        await serving
    seconds = time.perf_counter() - t0
    return ledger, seconds, logged(log, "ledger rebuilt")[seen]


async def wait_logged(log: Path, event: str, count: int, within: float = 600) -> dict[str, object]:
    deadline = time.monotonic() + within
    while len(found := logged(log, event)) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {event!r} in {log}")
        await asyncio.sleep(0.2)
    return found[count - 1]


async def restart(size: int, tail: int, log_dir: Path | None = None) -> list[str]:
    """Restart times at `size` entries: all of LEDGER vs the checkpoint plus `tail`."""
    lines = []
    with nats_server(sync_always=True) as server, tempfile.TemporaryDirectory() as tmp:
        data_dir, log = Path(tmp), Path(tmp) / "ledger.log"
        if log_dir is not None:  # kept for reading after the run
            log_dir.mkdir(parents=True, exist_ok=True)
            log = log_dir / f"ledger-restart-{size}.log"
            log.unlink(missing_ok=True)
        nc = await server.connect()
        await ensure_stream(nc.jetstream(), StreamSpec("LEDGER", ("ledger.>",)))
        await ensure_stream(nc.jetstream(), StreamSpec("GAMES", ("game.>",)))
        await nc.close()
        writer = BenchWriter(server)
        wrote = await writer.write(size)
        lines.append(f"  [{size:,} entries] LEDGER written by the bench writer in {wrote:.1f} s "
                     f"({rate(size, wrote):,.0f} entries/s, heads every 1,000)")  # fmt: skip
        messages, raw = await raw_read(server)
        # 1. No checkpoint yet: the whole log, re-verified. It then writes its first one.
        ledger, full, rebuilt = await start_and_time(server, data_dir, log)
        assert rebuilt["source"] == "log" and rebuilt["entries"] == size, rebuilt
        written = await wait_logged(log, "ledger checkpoint written", 1)
        ledger.stop()
        # 2. A tail after it, then a restart from the checkpoint.
        await writer.write(tail)
        ledger, fast, rebuilt2 = await start_and_time(server, data_dir, log)
        ledger.stop()
        assert rebuilt2["source"] == "checkpoint", rebuilt2
        assert rebuilt2["from_checkpoint"] == size and rebuilt2["entries"] == size + tail
        own_full, own_fast = seconds_of(rebuilt, "seconds"), seconds_of(rebuilt2, "seconds")
        load = seconds_of(rebuilt2, "checkpoint_seconds")
        lines += [
            f"  raw JetStream read of LEDGER ({messages:,} messages, ordered push consumer)"
            f"  {raw:>10,.0f} msg/s = {messages / raw:6.2f} s",
            f"  A full rebuild (no checkpoint): serving after {full:6.1f} s; its rebuild "
            f"{own_full:6.2f} s = {rate(size, own_full):>7,.0f} entries/s, "
            f"ratio to raw read {rate(size, own_full) / raw:4.2f}",
            f"    then its first checkpoint, written in {seconds_of(written, 'seconds'):.2f} s "
            f"(all {size // 4096:,} full chunks at once; later ones write only what is new)",
            f"  B restart from checkpoint + {tail:,}-entry tail: serving after {fast:6.1f} s; "
            f"its rebuild {own_fast:5.2f} s = checkpoint load {load:5.2f} s "
            f"({rate(size, load):>9,.0f} entries/s, "
            f"ratio to raw read {rate(size, load) / raw:5.2f})"
            f" + tail {own_fast - load:5.2f} s",
            f"    speed-up of the rebuild A/B {own_full / own_fast:5.1f}x; "
            f"of time to serving {full / fast:4.1f}x "
            f"(process start, imports and connecting are in both)",
        ]
    return lines


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
        f"  restart, spawn → serving (from its checkpoint) {statistics.median(rebuilds):>8,.0f}"
        " entries/s  (mostly process start: see the restart section)",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, one run")
    parser.add_argument("--entries", type=int, default=0)
    parser.add_argument("--runs", type=int, default=0)
    parser.add_argument("--tree", type=int, default=1_000_000)
    parser.add_argument("--no-default-sync", action="store_true")
    parser.add_argument("--batch", type=int, default=256, help="the poster's fetch batch")
    parser.add_argument("--only", choices=["throughput", "restart", "tree", "cpu"], default=None)
    parser.add_argument("--cpu-commits", type=int, default=0, help="commits of the cpu section")
    parser.add_argument("--publish-trickle", default="", help=argparse.SUPPRESS)
    parser.add_argument("--restart-sizes", default="", help="comma-separated entry counts")
    parser.add_argument("--tail", type=int, default=5_000, help="entries after the checkpoint")
    parser.add_argument("--log-dir", type=Path, default=None, help="keep the ledgers' logs here")
    args = parser.parse_args()
    if args.publish_trickle:  # the cpu section's publisher process
        store, port, count, per_second, burst = args.publish_trickle.split(",")
        asyncio.run(publish_trickle(Path(store), int(port), int(count), int(per_second),
                                    int(burst)))  # fmt: skip
        return
    configure_logging("warning", "console")  # the in-process poster's info lines
    n = args.entries or (3_000 if args.quick else 20_000)
    runs = args.runs or (1 if args.quick else 3)
    tree = 100_000 if args.quick and args.tree == 1_000_000 else args.tree
    sizes = [int(x) for x in args.restart_sizes.split(",") if x] or (
        [100_000] if args.quick else [100_000, 1_000_000]
    )
    if args.only in (None, "throughput"):
        print("ledger: end to end (GAMES envelope published → entry durable in LEDGER)")
        for line in asyncio.run(throughput(n, runs, sync_always=True, batch=args.batch)):
            print(line, flush=True)
        if not args.no_default_sync:
            for line in asyncio.run(throughput(n, runs, sync_always=False, batch=args.batch)):
                print(line, flush=True)
    if args.only in (None, "restart"):
        print("ledger: restart (sync_interval: always)")
        for size in sizes:
            for line in asyncio.run(restart(size, args.tail, args.log_dir)):
                print(line, flush=True)
    if args.only in (None, "cpu"):
        commits = args.cpu_commits or (1_500 if args.quick else 6_000)
        print("ledger: CPU per envelope, live trickle (poster in this process)")
        for line in asyncio.run(cpu_per_envelope(commits)):
            print(line, flush=True)
    if args.only in (None, "tree"):
        print(f"ledger: Merkle tree of {tree:,} entries")
        for line in tree_figures(tree, samples=2_000 if args.quick else 20_000):
            print(line, flush=True)


if __name__ == "__main__":
    main()
