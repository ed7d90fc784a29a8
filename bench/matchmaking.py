"""Matchmaking throughput and latency with 1,000 waiting tickets, beside raw gRPC.

    .venv/bin/python bench/matchmaking.py [--seconds 6] [--clients 16] [--runs 3]

Starts its own nats-server (JetStream, `sync_interval: always` as the product runs), the
matchmaking service as its own process (`python -m services.matchmaking`) and, for the
denominator, a gRPC server whose one method does nothing (also its own process). Then, one
after another:

- raw: unary no-op calls/s through gRPC, 1 client and N clients (N tasks, one call at a
  time each) — the ceiling of any client-facing RPC on this machine; and JetStream KV
  updates by revision (compare-and-set), 1 and 64 at once — what a ticket's life is made
  of (about 6-7 such writes and reads per ticket, see docs/performance-matchmaking.md);
- drain: 1,000 tickets that can all be matched (2-4 seats) are created at once (64 in
  flight); tickets matched per second = 1,000 / (last assignment - first CreateTicket),
  and each ticket's CreateTicket -> assignment time (client clock at the call, the
  ticket's assignment time from the server; same host);
- steady: 1,000 tickets that cannot be matched stay waiting (ratings far apart), so every
  matcher pass walks a deep queue, while N clients each loop CreateTicket (2 seats) ->
  WatchTicket until assigned; tickets assigned per second and CreateTicket -> assignment
  p50/p99 as the client sees it (each ticket costs at least two RPCs: create and watch).

Ratios against the raw N-client no-op rate are what matter; absolute figures drift.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "libs")]

import nats  # noqa: E402

from boulevard.api.v1 import matchmaking_pb2 as pb  # noqa: E402
from boulevard.api.v1 import matchmaking_pb2_grpc  # noqa: E402
from boulevard.audit.signing import SigningKey  # noqa: E402
from boulevard.messaging.server import NatsServer, free_port  # noqa: E402
from boulevard.platform.identity import LocalIssuer, bearer  # noqa: E402
from services.matchmaking.store import Records, open_bucket, rating_key  # noqa: E402

GAME = "las_vegas"
NOOP = "/bench.Noop/Call"

BENCH_KEY = SigningKey(bytes(32)).public_hex  # every ticket's seat key


# ---- the raw denominator: a gRPC server that does nothing ----


async def noop_server(port: int) -> None:
    async def call(request: bytes, context: object) -> bytes:
        return b""

    server = grpc.aio.server()
    handler = grpc.method_handlers_generic_handler(
        "bench.Noop", {"Call": grpc.unary_unary_rpc_method_handler(call)}
    )
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


async def noop_rate(address: str, clients: int, seconds: float) -> float:
    async with grpc.aio.insecure_channel(address) as channel:
        call = channel.unary_unary(NOOP)
        await call(b"", timeout=10)
        stop = time.perf_counter() + seconds
        counts = [0] * clients

        async def loop(i: int) -> None:
            while time.perf_counter() < stop:
                await call(b"")
                counts[i] += 1

        start = time.perf_counter()
        await asyncio.gather(*(loop(i) for i in range(clients)))
        return sum(counts) / (time.perf_counter() - start)


async def kv_cas_rate(nc: nats.NATS, workers: int, seconds: float) -> float:
    """Raw JetStream KV compare-and-set updates/s (the operation matchmaking is made of),
    `workers` keys each updated one at a time by revision."""
    kv = await open_bucket(nc.jetstream(), "rawbench", 1)
    value = b"x" * 200  # about a Ticket's size
    revs = [await kv.put(f"k{i}", value) for i in range(workers)]
    stop = time.perf_counter() + seconds
    counts = [0] * workers

    async def loop(i: int) -> None:
        while time.perf_counter() < stop:
            revs[i] = await kv.update(f"k{i}", value, last=revs[i])
            counts[i] += 1

    start = time.perf_counter()
    await asyncio.gather(*(loop(i) for i in range(workers)))
    return sum(counts) / (time.perf_counter() - start)


# ---- matchmaking ----


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def drain(
    nc: nats.NATS, stub: matchmaking_pb2_grpc.MatchmakingServiceStub, n: int
) -> dict[str, float]:
    """Assignments are read from the tickets bucket (a KV watch), not by polling the service,
    so the measurement does not load the service it measures."""
    tag = secrets.token_hex(3)
    gate = asyncio.Semaphore(64)
    started: dict[str, float] = {}
    assigned: dict[str, int] = {}
    all_in = asyncio.Event()
    watcher = await (await nc.jetstream().key_value("tickets")).watch("t.>")

    async def follow() -> None:
        async for entry in watcher:
            if entry is None or not entry.value:
                continue
            t = pb.Ticket.FromString(entry.value)
            if t.status == pb.TICKET_STATUS_ASSIGNED and t.player_id.startswith(f"d{tag}-"):
                assigned[t.ticket_id] = t.updated_unix_ms
                if len(assigned) >= n:
                    all_in.set()

    following = asyncio.create_task(follow())

    async def create(i: int) -> None:
        async with gate:
            t0 = time.time()
            r = await stub.CreateTicket(
                pb.CreateTicketRequest(public_key=BENCH_KEY, game=GAME, min_seats=2, max_seats=4),
                timeout=30,
                metadata=as_player(f"d{tag}-{i}"),
            )
            started[r.ticket.ticket_id] = t0

    first = time.time()
    await asyncio.gather(*(create(i) for i in range(n)))
    # 2-4 seats: at most one ticket can be left without a partner.
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(all_in.wait(), 10 if len(assigned) >= n - 1 else 120)
    await asyncio.sleep(0.5)
    await watcher.stop()
    following.cancel()
    done = {t: ms for t, ms in assigned.items() if t in started}
    last = max(done.values()) / 1000
    latencies = [done[t] / 1000 - started[t] for t in done]
    return {
        "matched": len(done),
        "left waiting": n - len(done),
        "tickets/s": len(done) / (last - first),
        "p50 ms": percentile(latencies, 0.5) * 1000,
        "p99 ms": percentile(latencies, 0.99) * 1000,
    }


async def steady(
    stub: matchmaking_pb2_grpc.MatchmakingServiceStub, clients: int, seconds: float
) -> dict[str, float]:
    tag = secrets.token_hex(3)
    latencies: list[float] = []
    stop = time.perf_counter() + seconds

    async def client(i: int) -> None:
        n = 0
        while time.perf_counter() < stop:
            n += 1
            t0 = time.perf_counter()
            r = await stub.CreateTicket(
                pb.CreateTicketRequest(
                    public_key=BENCH_KEY, game=GAME, min_seats=2, max_seats=2, request_id=f"{n}"
                ),
                timeout=30,
                metadata=as_player(f"s{tag}-{i}"),
            )
            async for update in stub.WatchTicket(
                pb.WatchTicketRequest(ticket_id=r.ticket.ticket_id),
                timeout=30,
                metadata=as_player(f"s{tag}-{i}"),
            ):
                if update.ticket.status == pb.TICKET_STATUS_ASSIGNED:
                    latencies.append(time.perf_counter() - t0)
                    break

    start = time.perf_counter()
    # Clients go in pairs of equal players; an odd last one waits for its partner's next.
    await asyncio.gather(*(client(i) for i in range(clients)))
    elapsed = time.perf_counter() - start
    return {
        "tickets/s": len(latencies) / elapsed,
        "p50 ms": percentile(latencies, 0.5) * 1000,
        "p99 ms": percentile(latencies, 0.99) * 1000,
    }


async def fill_unmatchable(
    nc: nats.NATS, stub: matchmaking_pb2_grpc.MatchmakingServiceStub, n: int
) -> None:
    """n waiting tickets no one can match: ratings 500 points apart (the window caps at 100)."""
    ratings = Records(await open_bucket(nc.jetstream(), "ratings", 1))
    tag = secrets.token_hex(3)
    gate = asyncio.Semaphore(64)

    async def one(i: int) -> None:
        player = f"w{tag}-{i}"
        async with gate:
            await ratings.create(
                rating_key(GAME, player),
                pb.PlayerRating(player_id=player, game=GAME, mu=1000.0 + 500 * i, sigma=1),
            )
            await stub.CreateTicket(
                pb.CreateTicketRequest(public_key=BENCH_KEY, game=GAME, min_seats=5, max_seats=5),
                timeout=30,
                metadata=as_player(player),
            )

    await asyncio.gather(*(one(i) for i in range(n)))


# The bench's token issuer (made in measure()); each player's bearer token is minted once,
# outside the timed calls, as a client app would hold its player's token.
ISSUER: dict[str, LocalIssuer] = {}


def issuer(folder: Path) -> LocalIssuer:
    return LocalIssuer.ensure(folder / "issuer")


@functools.cache
def as_player(player: str) -> tuple[tuple[str, str], ...]:
    return bearer(ISSUER[""].mint(player, ttl_seconds=3600))


async def wait_serving(stub: matchmaking_pb2_grpc.MatchmakingServiceStub) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            await stub.ListQueues(pb.ListQueuesRequest(), timeout=1)
            return
        except grpc.aio.AioRpcError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


def start(args: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    log = open(log_path, "ab")  # noqa: SIM115 - lives as long as the process
    return subprocess.Popen(
        [sys.executable, *args], env=env, cwd=ROOT,
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip


def end(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


async def measure(seconds: float, clients: int, runs: int, waiting: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = NatsServer(Path(tmp) / "nats", sync_always=True).start()
        mm_port, noop_port = free_port(), free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("BOULEVARD_")}
        env.update(
            NATS_URL=server.url,
            BOULEVARD_NATS_IDENTITIES_DIR=str(server.identities_dir),
            BOULEVARD_DATA_DIR=str(Path(tmp) / "data"),
            BOULEVARD_MATCHMAKING_PORT=str(mm_port),
            BOULEVARD_MATCHMAKING_METRICS_PORT="0",  # any free port: `boulevard up` holds 9091
            BOULEVARD_TOKEN_KEY=secrets.token_hex(32),
            BOULEVARD_AUTH_JWKS=str(ISSUER.setdefault("", issuer(Path(tmp))).jwks_path),
            BOULEVARD_LOG_LEVEL="warning",
            BOULEVARD_MATCHMAKING_GAME_WAIT_SECONDS="0",  # matchmaking alone, no engine
            PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "libs")]),
        )
        mm = start(["-m", "services.matchmaking"], env, Path(tmp) / "matchmaking.log")
        noop = start([__file__, "--noop-server", str(noop_port)], env, Path(tmp) / "noop.log")
        nc = await server.connect()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{mm_port}") as channel:
                stub = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
                await wait_serving(stub)
                results: dict[str, list[float]] = {}

                def note(prefix: str, values: dict[str, float]) -> None:
                    for k, v in values.items():
                        results.setdefault(f"{prefix} {k}", []).append(v)

                noop_address = f"127.0.0.1:{noop_port}"
                for run in range(runs):
                    note("raw", {"1": await noop_rate(noop_address, 1, seconds)})
                    note("raw", {"N": await noop_rate(noop_address, clients, seconds)})
                    note("raw", {"kv 1": await kv_cas_rate(nc, 1, seconds)})
                    note("raw", {"kv 64": await kv_cas_rate(nc, 64, seconds)})
                    note("drain", await drain(nc, stub, 1000))
                    if run == 0:
                        await fill_unmatchable(nc, stub, waiting)
                    queues = (await stub.ListQueues(pb.ListQueuesRequest(game=GAME))).queues
                    note("steady", {"waiting": float(queues[0].waiting)})
                    note("steady", await steady(stub, clients, seconds))
                med = {k: statistics.median(v) for k, v in results.items()}
        except BaseException:
            print((Path(tmp) / "matchmaking.log").read_text()[-3000:], file=sys.stderr)
            raise
        finally:
            await nc.close()
            end(mm)
            end(noop)
            server.stop()
    raw1, rawn = med["raw 1"], med["raw N"]
    load = os.getloadavg()[0]
    print(
        f"matchmaking bench: {runs} runs, medians; N = {clients} clients; sync_interval always;"
        f" load average {load:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"  raw gRPC unary no-op, 1 client            {raw1:>9,.0f} calls/s")
    print(f"  raw gRPC unary no-op, {clients} clients          {rawn:>9,.0f} calls/s")
    print(f"  raw JetStream KV update by revision, 1      {med['raw kv 1']:>9,.0f} updates/s")
    print(f"  raw JetStream KV update by revision, 64     {med['raw kv 64']:>9,.0f} updates/s")
    print(
        f"  drain 1,000 matchable tickets (2-4 seats)  {med['drain tickets/s']:>9,.0f} tickets/s"
        f"   ratio to raw N {med['drain tickets/s'] / rawn:5.2f}"
        f"   create->assigned p50 {med['drain p50 ms']:,.0f} ms  p99 {med['drain p99 ms']:,.0f} ms"
        f"   (matched {med['drain matched']:.0f}, left {med['drain left waiting']:.0f})"
    )
    print(
        f"  steady, {med['steady waiting']:.0f} waiting, {clients} clients (2 seats)"
        f"  {med['steady tickets/s']:>9,.0f} tickets/s"
        f"   ratio to raw N {med['steady tickets/s'] / rawn:5.2f}"
        f"   create->assigned p50 {med['steady p50 ms']:,.1f} ms"
        f"  p99 {med['steady p99 ms']:,.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=6.0, help="per timed measurement")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients")
    parser.add_argument("--runs", type=int, default=3, help="median of this many runs")
    parser.add_argument("--waiting", type=int, default=1000, help="unmatchable waiting tickets")
    parser.add_argument("--noop-server", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.noop_server:
        asyncio.run(noop_server(args.noop_server))
        return
    asyncio.run(measure(args.seconds, args.clients, args.runs, args.waiting))


if __name__ == "__main__":
    main()
