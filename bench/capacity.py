"""Capacity: a thousand live Lords of Vegas games at once, then ten thousand idle ones.

Starts a nats-server (sync always, as shipped) and the four services as processes (as
bench/engine.py does), measures the raw gRPC no-op in the same run (bench/engine.py's code),
then drives the engine through its public gRPC API from load-generator processes of its own
(multiprocessing; asyncio clients, each move signed with its seat's key):

1. live: `--games` games (CreateGame by an operator, every seat committing to a client seed
   and revealing it), each acting about `--rate` times a second for `--seconds`: a move is
   ListLegalActions for the seat likely to act (the others when it has none) and a signed
   SubmitAction with a random legal action at the version it saw. Printed: the achieved
   rate, SubmitAction p50/p99/max, every error by status code, the engine's RSS and CPU
   (from /proc), the load generators' CPU and the machine's load average;
2. idle: `--idle` more games, each created, moved `--moves` times and then looked at by the
   seat to act (ListLegalActions and GetGame: the player is thinking about its view). The
   engine's RSS per idle game is measured over the second eighth (the first warms the
   process up), made before the live phase on an engine that has freed nothing yet
   (trimmed live games would leave memory for idle ones to reuse), while every game fits
   in the engine's cache (`--cache`, by default live + a quarter of the idle games); the
   rest are made after the live phase, evicting the oldest, and the RSS after all of them
   is printed;
3. resume: the first action after idling (the move the thinking player chose, at the
   version it saw) for a sample of the oldest (evicted: reloaded from the snapshot and the
   log) and of the newest (still cached) idle games, p50/p99 each, with the engine's own
   count of where each load came from (boulevard_engine_game_loads, by source).

Usage: python bench/capacity.py [--quick] [--games N] [--seconds S] [--idle N] ...
`--quick` (about three minutes): 1,000 live games for 20 s, 2,000 idle games.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import multiprocessing.connection
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from engine import KEYS, NOOP_SERVER, create_game  # bench/engine.py
from engine import measure as measure_calls

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.seats.signing import sign_submit

# -- the load generator: one process per worker, each an asyncio loop of game clients -------


@dataclass
class LiveGame:
    created: engine_pb2.CreateGameResponse
    seat: int = 0  # the seat that acted last: the likeliest to act again (a turn has moves)
    moves: int = 0  # SubmitActions that went through
    receipts: list[bytes] = field(default_factory=list)  # kept for the games audited after


@dataclass
class IdleGame:
    created: engine_pb2.CreateGameResponse
    seat: int  # the seat to act, thinking about its view
    version: int  # the version its legal actions were listed at
    action: engine_pb2.Action  # the move it will make when it comes back


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)  # SubmitAction, seconds
    errors: Counter[str] = field(default_factory=Counter)  # SubmitAction, by status code
    other_errors: Counter[str] = field(default_factory=Counter)  # the other calls
    lists: int = 0  # ListLegalActions calls
    replaced: int = 0  # games that finished during the run and were replaced

    def merge(self, other: Tally) -> None:
        self.latencies += other.latencies
        self.errors.update(other.errors)
        self.other_errors.update(other.other_errors)
        self.lists += other.lists
        self.replaced += other.replaced


class Worker:
    """The state of one load-generator process: its games and one gRPC channel."""

    def __init__(self, address: str, operator: str, index: int) -> None:
        self.address = address
        self.operator = operator
        self.rng = random.Random(index)
        self.live: list[LiveGame] = []
        self.idle: list[IdleGame] = []
        self.channel = grpc.aio.insecure_channel(address)
        self.stub = engine_pb2_grpc.EngineServiceStub(self.channel)

    async def create(self, count: int, in_flight: int = 32) -> list[engine_pb2.CreateGameResponse]:
        gate = asyncio.Semaphore(in_flight)

        async def one() -> engine_pb2.CreateGameResponse:
            async with gate:
                return await create_game(self.stub, self.operator)

        return list(await asyncio.gather(*(one() for _ in range(count))))

    async def legal(
        self, game: LiveGame, tally: Tally
    ) -> tuple[int, engine_pb2.ListLegalActionsResponse] | None:
        """The seat that may act and its legal actions (the last actor's seat asked first);
        None when no seat may act (the game is over)."""
        seats = len(game.created.player_tokens)
        for k in range(seats):
            seat = (game.seat + k) % seats
            tally.lists += 1
            legal = await self.stub.ListLegalActions(
                engine_pb2.ListLegalActionsRequest(
                    game_id=game.created.game_id, player_token=game.created.player_tokens[seat]
                )
            )
            if legal.actions:
                return seat, legal
        return None

    async def move(self, game: LiveGame, tally: Tally, keep_receipts: bool) -> bool:
        """One random legal move, its SubmitAction timed; False when the game is over."""
        try:
            found = await self.legal(game, tally)
        except grpc.aio.AioRpcError as err:
            tally.other_errors[f"ListLegalActions {err.code().name}"] += 1
            return True
        if found is None:
            return False
        seat, legal = found
        request = engine_pb2.SubmitActionRequest(
            game_id=game.created.game_id,
            player_token=game.created.player_tokens[seat],
            action=legal.actions[self.rng.randrange(len(legal.actions))],
            expected_version=legal.version,
            idempotency_key=uuid.uuid4().hex,
        )
        sign_submit(request, seat, KEYS[seat])
        start = time.perf_counter()
        try:
            reply = await self.stub.SubmitAction(request)
        except grpc.aio.AioRpcError as err:
            tally.errors[err.code().name] += 1
            return True
        tally.latencies.append(time.perf_counter() - start)
        game.seat = seat
        game.moves += 1
        if keep_receipts:
            game.receipts.append(reply.receipt.SerializeToString())
        return True

    async def drive(
        self, index: int, start_wall: float, seconds: float, rate: float, tally: Tally, keep: int
    ) -> None:
        """Move game `index` about `rate` times a second from `start_wall` for `seconds`;
        a slow answer delays the next move (no bursts to catch up)."""
        period = 1.0 / rate
        await asyncio.sleep(max(0.0, start_wall - time.time()))
        begin = time.monotonic()
        end = begin + seconds
        due = begin + self.rng.random() * period  # spread the games over the period
        while due < end:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            game = self.live[index]
            if not await self.move(game, tally, keep_receipts=index < keep):
                tally.replaced += 1  # finished: a new table takes its place
                self.live[index] = LiveGame((await self.create(1))[0])
            due = max(due + period, time.monotonic())

    async def run(self, start_wall: float, seconds: float, rate: float, keep: int) -> Tally:
        tally = Tally()
        await asyncio.gather(
            *(self.drive(i, start_wall, seconds, rate, tally, keep) for i in range(len(self.live)))
        )
        return tally

    async def make_idle(self, count: int, moves: int, in_flight: int = 32) -> Tally:
        """Games created, moved a few times, then looked at by the seat to act (its legal
        actions and its view), which picks the move it will make when it comes back."""
        tally = Tally()
        gate = asyncio.Semaphore(in_flight)

        async def one() -> None:
            async with gate:
                game = LiveGame(await create_game(self.stub, self.operator))
                for _ in range(moves):
                    await self.move(game, tally, keep_receipts=False)
                found = await self.legal(game, tally)
                assert found is not None, "a game ended within a few moves"
                seat, legal = found
                await self.stub.GetGame(
                    engine_pb2.GetGameRequest(
                        game_id=game.created.game_id,
                        player_token=game.created.player_tokens[seat],
                    )
                )
                action = legal.actions[self.rng.randrange(len(legal.actions))]
                self.idle.append(IdleGame(game.created, seat, legal.version, action))

        await asyncio.gather(*(one() for _ in range(count)))
        return tally

    async def resume(self, indices: list[int]) -> Tally:
        """The first action of each idle game after its player thought: one at a time."""
        tally = Tally()
        for i in indices:
            game = self.idle[i]
            request = engine_pb2.SubmitActionRequest(
                game_id=game.created.game_id,
                player_token=game.created.player_tokens[game.seat],
                action=game.action,
                expected_version=game.version,
                idempotency_key=uuid.uuid4().hex,
            )
            sign_submit(request, game.seat, KEYS[game.seat])
            start = time.perf_counter()
            try:
                await self.stub.SubmitAction(request)
            except grpc.aio.AioRpcError as err:
                tally.errors[err.code().name] += 1
                continue
            tally.latencies.append(time.perf_counter() - start)
        return tally


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def worker_main(
    conn: multiprocessing.connection.Connection, address: str, operator: str, index: int
) -> None:
    """A load-generator process: runs what the parent sends, answers with its results."""

    async def serve() -> None:
        worker = Worker(address, operator, index)
        loop = asyncio.get_running_loop()
        while True:
            command, *args = await loop.run_in_executor(None, conn.recv)
            cpu = _cpu_seconds()
            result: Any = None
            if command == "stop":
                await worker.channel.close()
                return
            if command == "create_live":
                worker.live += [LiveGame(c) for c in await worker.create(args[0])]
            elif command == "run":
                result = await worker.run(*args)
            elif command == "idle":
                result = await worker.make_idle(*args)
            elif command == "resume":
                oldest, newest = args
                n = len(worker.idle)
                result = (
                    await worker.resume(list(range(min(oldest, n)))),
                    await worker.resume(list(range(max(0, n - newest), n))),
                )
            elif command == "live_games":
                result = [(g.created.game_id, g.moves, g.receipts) for g in worker.live]
            conn.send((result, _cpu_seconds() - cpu))

    try:
        asyncio.run(serve())
    except Exception as exc:  # tell the parent rather than leave it waiting
        conn.send(exc)
        raise


class LoadGenerator:
    """The parent's side: `workers` processes, each holding a share of the games."""

    def __init__(self, address: str, operator: str, workers: int) -> None:
        ctx = multiprocessing.get_context("spawn")  # no fork of a process holding gRPC
        self.conns: list[multiprocessing.connection.Connection] = []
        self.procs: list[Any] = []
        for i in range(workers):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=worker_main, args=(child, address, operator, i), daemon=True)
            proc.start()
            self.conns.append(parent)
            self.procs.append(proc)
        self.cpu = 0.0  # CPU seconds the workers spent on the last command

    async def all(self, *commands: tuple[Any, ...]) -> list[Any]:
        """Send command i to worker i (one command: to every worker); their answers."""
        sent = commands if len(commands) == len(self.conns) else commands * len(self.conns)
        for conn, command in zip(self.conns, sent, strict=True):
            conn.send(command)
        loop = asyncio.get_running_loop()
        answers = await asyncio.gather(*(loop.run_in_executor(None, c.recv) for c in self.conns))
        for answer in answers:
            if isinstance(answer, BaseException):
                raise RuntimeError("a load generator failed") from answer
        self.cpu = sum(cpu for _, cpu in answers)
        return [result for result, _ in answers]

    def shares(self, total: int) -> list[int]:
        n = len(self.conns)
        return [total // n + (1 if i < total % n else 0) for i in range(n)]

    async def create_live(self, games: int) -> None:
        await self.all(*(("create_live", k) for k in self.shares(games)))

    async def run(self, seconds: float, rate: float, keep_receipts: int = 0) -> Tally:
        start = time.time() + 0.5
        keeps = self.shares(keep_receipts)
        tally = Tally()
        for t in await self.all(*(("run", start, seconds, rate, k) for k in keeps)):
            tally.merge(t)
        return tally

    async def idle(self, games: int, moves: int) -> Tally:
        tally = Tally()
        for t in await self.all(*(("idle", k, moves) for k in self.shares(games))):
            tally.merge(t)
        return tally

    async def resume(self, oldest: int, newest: int) -> tuple[Tally, Tally]:
        old, new = Tally(), Tally()
        for o, n in await self.all(
            *(
                ("resume", a, b)
                for a, b in zip(self.shares(oldest), self.shares(newest), strict=True)
            )
        ):
            old.merge(o)
            new.merge(n)
        return old, new

    async def live_games(self) -> list[tuple[str, int, list[bytes]]]:
        """Every live game: its id, its moves and the receipts kept for it."""
        return [g for share in await self.all(("live_games",)) for g in share]

    def stop(self) -> None:
        for conn in self.conns:
            with contextlib.suppress(OSError):  # it may have died already
                conn.send(("stop",))
        for proc in self.procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
                proc.join()


# -- what one idle game costs, in-process ----------------------------------------------------


def own_rss() -> int:
    return rss_bytes(os.getpid())


async def session_memory(games: int, moves: int) -> dict[str, float]:
    """Bytes of RSS per idle session, measured in this process on the engine core (in-memory
    log, local dice): `games` Lords of Vegas games made and moved, then loaded from their
    log by a fresh engine as the real one holds them: with the caches readers fill (legal
    commands of every seat, the acting seat's view, the recent envelopes) and trimmed
    (what `Engine.trim_idle` keeps: the fold). Each figure is an RSS delta over all games."""
    import gc
    import logging

    import structlog

    from boulevard.contract.mapping import command_to_action, view_to_proto
    from boulevard.eventlog.store import InMemoryEventStore
    from boulevard.platform.auth import verify_token
    from services.engine.chance import LocalChance
    from services.engine.engine import Engine, MemoryKeyValue, SeatRequest

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    token_key = b"capacity-bench-token-key" * 2
    rng = random.Random(1)
    maker = Engine(InMemoryEventStore(), LocalChance(rng), MemoryKeyValue(), token_key)
    ids = []
    for g in range(games):
        seats = [SeatRequest(i, f"p{i}", public_key=KEYS[i].public_hex) for i in range(4)]
        created = await maker.create_game(f"idle-{g}", "lords_of_vegas", seats)
        for m in range(moves):
            session = await maker.load(created.game_id)
            seat = next(s for s in range(4) if session.legal(s))
            legal = session.legal(seat)
            command = legal[rng.randrange(len(legal))]
            claims = verify_token(token_key, created.tokens[seat])
            action = command_to_action(session.game, command).SerializeToString(deterministic=True)
            key, version = f"{m}", session.version
            signature = KEYS[seat].sign_command(created.game_id, seat, version, key, action)
            await maker.submit(created.game_id, claims, command, version, key, action, signature)
        ids.append(created.game_id)
    # (`maker` keeps its sessions: freed, their memory would be reused by the ones measured)

    held: list[Engine] = []  # both kept alive, so the second cannot reuse the first's memory

    async def hold(trim: bool) -> float:
        engine = Engine(maker.store, maker.chance, MemoryKeyValue(), token_key)
        await engine.load(ids[0])  # the first load's one-off costs stay out of the delta
        gc.collect()
        before = own_rss()
        for game_id in ids[1:]:
            session = await engine.load(game_id)
            seat = next(s for s in range(4) if session.legal(s))
            view = view_to_proto(session.game, session.game.view(session.state, seat))
            session.memo("view", seat, lambda v=view: v)  # as GetGame leaves it
            if trim:
                session.trim()
        gc.collect()
        held.append(engine)
        return (own_rss() - before) / (len(ids) - 1)

    cached = await hold(trim=False)
    trimmed = await hold(trim=True)
    versions = [s.version for s in held[-1]._sessions.values()]
    return {"cached": cached, "trimmed": trimmed, "events": statistics.mean(versions)}


# -- measuring the engine from the outside --------------------------------------------------


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise ValueError(f"no VmRSS for pid {pid}")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def run_queue_wait(pid: int) -> float:
    """Seconds the process's main thread (the engine's event loop) was ready to run but
    waited for a CPU: what a machine shared with other work costs it."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[1]) / 1e9


def cpu_by_process(pids: dict[str, int]) -> dict[str, float]:
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


def cores_line(before: dict[str, float], wall: float, generators: float) -> str:
    """CPU each process used over `wall` seconds, in cores (1.0 = one core all the time)."""
    after = cpu_by_process({n: p for n, p in PIDS.items()})
    parts = [f"{name} {(after[name] - before[name]) / wall:.2f}" for name in before]
    return f"  CPU in cores: {', '.join(parts)}, load generators {generators / wall:.2f}"


PIDS: dict[str, int] = {}  # the platform's processes, by name (filled by `measure`)


def loads_by_source(metrics_url: str) -> Counter[str]:
    """The engine's game loads so far, by where they came from (cache, snapshot, log)."""
    out: Counter[str] = Counter()
    with urllib.request.urlopen(metrics_url, timeout=5) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith("boulevard_engine_game_loads_total{"):
                source = line.split('source="', 1)[1].split('"', 1)[0]
                out[source] = int(float(line.rsplit(" ", 1)[1]))
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


def latency_line(label: str, tally: Tally, noop_s: float | None = None) -> str:
    """p50/p99/max of the successful calls, and p50 against a raw no-op call when given."""
    if not tally.latencies:
        return f"  {label:<32} no successful calls"
    p50, p99 = statistics.median(tally.latencies), pct(tally.latencies, 0.99)
    line = (
        f"  {label:<32} p50 {p50 * 1000:6.1f} ms  p99 {p99 * 1000:6.1f} ms  "
        f"max {max(tally.latencies) * 1000:6.1f} ms"
    )
    return line + (f"  (p50 {p50 / noop_s:5.1f}x a raw no-op call)" if noop_s else "")


def errors_line(tally: Tally) -> str:
    if not tally.errors and not tally.other_errors:
        return "  errors: none"
    parts = [f"SubmitAction {code} {n}" for code, n in sorted(tally.errors.items())]
    parts += [f"{what} {n}" for what, n in sorted(tally.other_errors.items())]
    return "  errors: " + ", ".join(parts)


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.1f} (1 min) / {five:.1f} (5 min) on {os.cpu_count()} cores"


@dataclass
class Plan:
    games: int
    seconds: float
    rate: float
    idle: int
    moves: int
    cache: int
    sample: int
    workers: int
    trim: float
    session_games: int


async def measure(plan: Plan) -> None:
    from boulevard.cli.up import demo_operator_token, start_platform
    from boulevard.messaging.server import free_port
    from boulevard.platform.settings import Settings

    memory = await session_memory(plan.session_games, plan.moves)
    print(
        f"one idle session in-process ({plan.session_games:,} Lords of Vegas games, "
        f"{plan.moves} moves, {memory['events']:.0f} events each, RSS delta): with its caches "
        f"{memory['cached'] / 1024:.1f} KiB, trimmed to its fold {memory['trimmed'] / 1024:.1f} KiB"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("MATCHMAKING", "ENGINE", "DICE", "LEDGER", "EMBEDDED_NATS"):
            os.environ[f"BOULEVARD_{name}_PORT"] = str(free_port())
        for name in ("MATCHMAKING", "DICE", "LEDGER"):
            os.environ[f"BOULEVARD_{name}_METRICS_PORT"] = "0"  # any free port
        engine_metrics = free_port()
        os.environ["BOULEVARD_ENGINE_METRICS_PORT"] = str(engine_metrics)
        os.environ["BOULEVARD_ENGINE_CACHE_GAMES"] = str(plan.cache)
        os.environ["BOULEVARD_ENGINE_IDLE_TRIM_SECONDS"] = str(plan.trim)
        os.environ["BOULEVARD_LOG_LEVEL"] = "warning"
        os.environ.pop("NATS_URL", None)
        settings = Settings()
        metrics_url = f"http://127.0.0.1:{engine_metrics}/metrics"
        platform, addresses = await start_platform(
            settings, ["matchmaking", "engine", "dice", "ledger"], Path(tmp), 60, verbose=False
        )
        engine_pid = next(c.process.pid for c in platform.children if c.name == "engine")
        PIDS.update({c.name: c.process.pid for c in platform.children})
        assert platform.nats is not None and platform.nats.process is not None
        PIDS["nats-server"] = platform.nats.process.pid
        noop_address = f"127.0.0.1:{free_port()}"
        noop = subprocess.Popen([sys.executable, "-c", NOOP_SERVER, noop_address])
        generator: LoadGenerator | None = None
        try:
            operator = demo_operator_token(settings, Path(tmp))
            # Raw no-op rates from a load-generator process, as bench/engine.py measures them.
            raw1 = measure_calls("noop", noop_address, operator, 1, 2.0, 1, {})["rate"]
            raw64 = measure_calls("noop", noop_address, operator, 64, 2.0, 1, {})["rate"]
            noop.terminate()
            noop.wait()
            noop_s = 1 / raw1
            print(f"machine: load average {load_average()} before the run")
            print("raw limits measured in this run:")
            print(
                f"  gRPC unary no-op, 1 in flight     {raw1:>8,.0f} calls/s ({noop_s * 1e3:.2f} ms)"
            )
            print(f"  gRPC unary no-op, 64 in flight    {raw64:>8,.0f} calls/s")
            rss0 = rss_bytes(engine_pid)
            print(
                f"engine RSS at start: {rss0 / 2**20:,.0f} MiB; engine cache: {plan.cache:,} games"
            )

            generator = LoadGenerator(addresses["engine"], operator, plan.workers)
            # A quarter of the idle games first, on an engine that has freed nothing yet
            # (trimmed live games would leave memory that idle games reuse, hiding their
            # cost). --cache (live + idle/4) holds them all.
            # The first eighth warms the engine process up (its one-off growth: buffers,
            # caches, arenas); the second eighth's RSS growth is what a held idle game costs.
            held = plan.idle // 4
            t0 = time.perf_counter()
            first = await generator.idle(held // 2, plan.moves)
            await asyncio.sleep(plan.trim + 2)  # every one of them idle long enough to trim
            rss_idle = rss_bytes(engine_pid)
            first.merge(await generator.idle(held - held // 2, plan.moves))
            idle_made = time.perf_counter() - t0
            await asyncio.sleep(plan.trim + 2)
            per_game = (rss_bytes(engine_pid) - rss_idle) / (held - held // 2)
            print(
                f"idle: {held:,} games created, {plan.moves} moves each, then looked at "
                f"(ListLegalActions + GetGame) by the seat to act, in {idle_made:.1f} s"
            )
            print(
                f"  engine RSS per idle game held: {per_game / 1024:,.1f} KiB; "
                f"10,000 held: {10_000 * per_game / 2**20:,.0f} MiB over the base"
            )
            rss0 = rss_bytes(engine_pid)
            t0 = time.perf_counter()
            await generator.create_live(plan.games)
            made = time.perf_counter() - t0
            print(
                f"live: {plan.games:,} games created (4 seats, seeds committed and revealed) "
                f"in {made:.1f} s ({plan.games / made:,.1f} games/s)"
            )
            rss1 = rss_bytes(engine_pid)
            cpu1 = cpu_by_process(PIDS)
            waited = run_queue_wait(engine_pid)
            t0 = time.perf_counter()
            live = await generator.run(plan.seconds, plan.rate)
            wall = time.perf_counter() - t0
            engine_cpu = cpu_seconds(engine_pid) - cpu1["engine"]
            waited = run_queue_wait(engine_pid) - waited
            achieved = len(live.latencies) / plan.seconds
            print(
                f"live: {plan.games:,} games, each aiming at {plan.rate:g} action/s for "
                f"{plan.seconds:g} s (load generator: {plan.workers} processes)"
            )
            print(
                f"  achieved {achieved:,.0f} SubmitAction/s of {plan.games * plan.rate:,.0f} "
                f"aimed ({achieved / (plan.games * plan.rate):.2f}); ratio "
                f"{achieved / raw64:.2f} of the raw no-op at 64 in flight; "
                f"{live.lists / max(1, len(live.latencies)):.2f} ListLegalActions per move; "
                f"{live.replaced} games finished and were replaced"
            )
            print(latency_line("SubmitAction", live, noop_s) + "   (aim: p99 < 50 ms)")
            print(errors_line(live))
            print(
                f"  engine: CPU {engine_cpu / wall:.2f} cores "
                f"({1e3 * engine_cpu / max(1, len(live.latencies)):.2f} ms per action, "
                f"ListLegalActions included); RSS {rss_bytes(engine_pid) / 2**20:,.0f} MiB "
                f"({(rss1 - rss0) / plan.games / 1024:,.1f} KiB per live game created)"
            )
            print(cores_line(cpu1, wall, generator.cpu))
            print(
                f"  the engine's event loop waited for a CPU {waited / wall:.0%} of the run "
                f"(run-queue wait, /proc/<pid>/schedstat); machine load average {load_average()}"
            )

            t0 = time.perf_counter()
            rest = await generator.idle(plan.idle - held, plan.moves)
            idle_made += time.perf_counter() - t0
            first.merge(rest)
            print(
                f"idle: the other {plan.idle - held:,} idle games; all {plan.idle:,} made in "
                f"{idle_made:.1f} s"
            )
            print(errors_line(first))
            print(
                f"  engine RSS after all {plan.idle:,} idle + {plan.games:,} live games "
                f"(cache {plan.cache:,}: the oldest evicted): {rss_bytes(engine_pid) / 2**20:,.0f} "
                "MiB   (aim: < 1 GiB)"
            )

            before = loads_by_source(metrics_url)
            evicted, cached = await generator.resume(plan.sample, plan.sample)
            after = loads_by_source(metrics_url)
            sources = {k: after[k] - before[k] for k in after if after[k] - before[k]}
            print(
                f"resume: the first action after idling, one at a time per load generator, "
                f"{plan.sample} oldest and {plan.sample} newest idle games"
            )
            print(latency_line("evicted (oldest)", evicted, noop_s) + "   (aim: p99 < 20 ms)")
            print(latency_line("cached (newest)", cached, noop_s) + "   (aim: p99 < 20 ms)")
            evicted.merge(cached)
            print(errors_line(evicted))
            print(f"  the engine's game loads during the resume, by source: {sources}")
            print(f"machine: load average {load_average()} at the end")
        finally:
            if generator is not None:
                generator.stop()
            if noop.poll() is None:
                noop.terminate()
                noop.wait()
            platform.stop()


def plan_of(args: argparse.Namespace) -> Plan:
    quick = args.quick
    games = args.games
    idle = args.idle if args.idle is not None else (2_000 if quick else 10_000)
    return Plan(
        games=games,
        seconds=args.seconds if args.seconds is not None else (20.0 if quick else 60.0),
        rate=args.rate,
        idle=idle,
        moves=args.moves,
        cache=args.cache if args.cache is not None else games + idle // 4,
        sample=args.sample if args.sample is not None else (100 if quick else 300),
        workers=args.workers,
        trim=args.trim,
        session_games=1_000 if quick else 3_000,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="shorter: about three minutes")
    parser.add_argument("--games", type=int, default=1_000, help="live games (1,000)")
    parser.add_argument("--seconds", type=float, help="live phase length (60 s; quick 20 s)")
    parser.add_argument("--rate", type=float, default=1.0, help="actions per second per game")
    parser.add_argument("--idle", type=int, help="idle games (10,000; quick 2,000)")
    parser.add_argument("--moves", type=int, default=3, help="moves per idle game")
    parser.add_argument("--cache", type=int, help="engine_cache_games (live + idle/4)")
    parser.add_argument("--sample", type=int, help="idle games resumed per kind (300; quick 100)")
    parser.add_argument("--workers", type=int, default=2, help="load-generator processes")
    parser.add_argument(
        "--trim", type=float, default=2.0, help="engine_idle_trim_seconds (2 s: players think)"
    )
    asyncio.run(measure(plan_of(parser.parse_args())))
