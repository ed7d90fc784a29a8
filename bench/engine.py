"""Engine throughput, latency and CPU through the public gRPC API, beside raw limits measured
in the same run (issue 17's aims, each printed with its raw denominator).

Starts a nats-server (sync always, as shipped), the four services as processes and a bare
gRPC no-op server process, then:
1. SubmitAction with 1, 10 and 100 games at once (`--game`, any of the four: Lords of Vegas
   by default; 4 seats each), and the raw gRPC unary
   no-op (a health Check) with the SAME number of calls in flight: rate, ratio, p50/p99.
   The load is generated in other processes (multiprocessing), never in the servers'; each
   seat of each game watches its game with its own token (WatchGame, one message per burst
   as the bots do; `--watch events` for one per event) and submits a random legal action
   from the update's legal_actions: one message per move on the seat's SubmitActions
   stream, as the bots do (`--submit unary`: one SubmitAction call per move).
2. The CPU each side used over each run, from /proc/<pid>/stat (engine, dice, ledger,
   matchmaking, nats-server, the no-op server) and the load generators' own counters: cores
   used, engine CPU per action, all servers' CPU per action, the no-op server's CPU per
   call, and the game's own decide + evolve time per
   action measured in this process — aim: engine CPU/action <= 2 x (no-op CPU/call +
   decide + evolve).
3. What signing costs per action (docs/auditing.md) beside one action's time.
4. Cold rebuild of a game of over 1,000 events (a trade-heavy Lords of Vegas game, whatever
   `--game` says, played
   in-process on the platform's real JetStream GAMES stream), measured, with and without
   its snapshot; and a game of `--game` played to the end by bots through the engine, read through
   WatchGame one event per message and in bursts (what `boulevard audit` reads).
The machine's load average is printed at the start and at the end: the figures are only as
good as the machine was quiet.
Usage: python bench/engine.py [--quick] [--game NAME] [--procs N] [--engines N]
                              [--watch bursts|events] [--views full]
                              [--submit stream|unary]
                              [--load-only [--games N,N,...]]
                              [--affinity [--runs N]]
`--load-only` runs only step 1's SubmitAction rows (no no-op, no rebuild) and prints each
server process's CPU per action: the short run for comparing two versions of the engine
back to back (docs/performance.md, issue 28).
`--load-only --engines N --affinity` starts the N engines on ports of their own and runs each
row alternately without affinity (every call to the next replica in turn, as a per-call
balancer spreads them) and with it (each call to its game's owner, by the routing the gateway
uses, boulevard.contract.routing), printing beside each the cold loads: games a replica
loaded from its snapshot or the log rather than its memory; then what one move costs on a
replica that does not hold the game beside a warm one (docs/performance.md).
bench/bgio.py measures boardgame.io beside it, playing Las Vegas (`make bench-bgio`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import multiprocessing
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from common import Timer, rate

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2
from boulevard.audit.signing import Receipt, SigningKey, chain_hash, command_signing_bytes, verify
from boulevard.cli.up import demo_operator_token, start_platform, wait_serving
from boulevard.contract.mapping import command_to_action
from boulevard.contract.routing import owner, replica_list
from boulevard.eventlog.jetstream import JetStreamEventStore
from boulevard.fairness import client_seed_commitment
from boulevard.games import REGISTRY, get_game
from boulevard.games.base import GameConfig
from boulevard.games.lords_of_vegas.types import ProposeTrade, RejectTrade
from boulevard.games.playout import resolve_locally
from boulevard.messaging.server import free_port
from boulevard.platform.auth import PlayerClaims
from boulevard.platform.identity import bearer
from boulevard.platform.replicas import RoutedBidi
from boulevard.platform.settings import Settings
from boulevard.seats.player import play_game, reveal_seed
from boulevard.seats.signing import sign_submit
from boulevard.seats.submitting import SubmitStream
from boulevard.seats.watching import last_event
from services.engine.chance import LocalChance
from services.engine.engine import Engine, MemoryKeyValue, SeatRequest

NOOP_SERVER = """
import asyncio, sys, grpc
from grpc_health.v1 import health, health_pb2_grpc
async def main():
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    server.add_insecure_port(sys.argv[1])
    await server.start()
    await server.wait_for_termination()
asyncio.run(main())
"""

WATCH_ENV = "BOULEVARD_BENCH_WATCH"  # "events": one event per stream message (--watch)
VIEWS_ENV = "BOULEVARD_BENCH_VIEWS"  # "full": a view with its text board every burst (--views)
ROUTE_ENV = "BOULEVARD_BENCH_ROUTE"  # with --affinity: "owner" or "spread" (RoutedStub)
CLOCK_ENV = "BOULEVARD_BENCH_CLOCK"  # "1": games on a real-time clock (--clock)
SUBMIT_ENV = "BOULEVARD_BENCH_SUBMIT"  # "unary": moves by SubmitAction, not the stream


def bench_time_control() -> events_pb2.TimeControl | None:
    """With --clock, every game runs a real-time clock that never runs out in a bench row
    (30 minutes a seat plus 10 s a move), so the clocks' cost is measured and no seat times
    out; without, no clock (what the earlier rows ran)."""
    if os.environ.get(CLOCK_ENV) != "1":
        return None
    return events_pb2.TimeControl(
        kind=events_pb2.CLOCK_KIND_REAL_TIME, base_ms=30 * 60_000, increment_ms=10_000
    )


KEYS = [SigningKey(bytes([i + 1]) * 32) for i in range(4)]  # one per seat, as clients hold
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU the processes have used so far (/proc/<pid>/stat utime + stime)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def percentile(sorted_values: list[float], p: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * p))]


# --- the load generator (runs in its own processes) ------------------------------------------


async def create_game(
    stub: Any, operator: str, game: str = "lords_of_vegas", players: int = 4
) -> engine_pb2.CreateGameResponse:
    """A game of `game` whose seats committed to seeds and revealed them (the blind opening)."""
    seeds = [f"bench-seed-{uuid.uuid4().hex}" for _ in range(players)]
    created: engine_pb2.CreateGameResponse = await stub.CreateGame(
        engine_pb2.CreateGameRequest(
            request_id=uuid.uuid4().hex,
            game=game,
            seats=[
                engine_pb2.SeatAssignment(
                    seat=i,
                    player_id=f"b{i}",
                    client_seed_commitment=client_seed_commitment(seed),
                    public_key=KEYS[i].public_hex,
                )
                for i, seed in enumerate(seeds)
            ],
            time_control=bench_time_control(),
        ),
        metadata=bearer(operator),
    )
    for token, seed in zip(created.player_tokens, seeds, strict=True):
        await reveal_seed(stub, created.game_id, token, seed)
    return created


class Tally:
    def __init__(self, think: float = 0.0) -> None:
        self.think = think  # mean seconds a seat waits before each move (0: at once)
        self.latencies: list[float] = []
        # Moves that found their seat's SubmitActions stream not open yet (they opened it, or
        # waited for the seat's `open` to be answered): apart, since under saturation a new
        # stream's first message waits far longer than a message on an open one
        # (docs/performance.md). Seats open theirs at sit-down, so few moves should.
        self.first_latencies: list[float] = []
        self.opened_at_sit_down = 0  # seats whose `open` was answered `opened`
        self.aborted = 0
        self.games_finished = 0
        self.streams_open = 0  # seats whose stream has brought its first message
        self.go = asyncio.Event()  # set when the measured time starts


async def play_seat(
    stub: engine_pb2_grpc.EngineServiceStub,
    game_id: str,
    token: str,
    seat: int,
    rng: random.Random,
    tally: Tally,
) -> None:
    """One seat as a client app plays it: its own WatchGame stream, whose updates carry the
    seat's legal actions at their version; it submits a random one, pinned to that version
    (one message per move on its SubmitActions stream, or one unary call: `--submit`). It
    opens its SubmitActions stream as it sits down (`SubmitStream.open`, as the bots do),
    and waits for the measured time to start before acting."""
    latest: list[engine_pb2.WatchGameResponse] = []
    changed = asyncio.Event()
    opened = asyncio.Event()
    finished = False
    # The seat's moves on one SubmitActions stream, as the bots send them; unary with
    # BOULEVARD_BENCH_SUBMIT=unary (the call before the stream, for A/B rows).
    # With --affinity, `stub` is a RoutedStub (its SubmitActions routes by the first move).
    moves = SubmitStream(stub, unary=os.environ.get(SUBMIT_ENV) == "unary")

    async def watch() -> None:
        nonlocal finished
        mode = os.environ.get(WATCH_ENV, "settled")
        # The seat reads only the legal actions, on its turn: by default (as the bots) it
        # asks for no text board and no view while it waits; `--views full` for the old shape.
        turn = os.environ.get(VIEWS_ENV, "turn") == "turn"
        request = engine_pb2.WatchGameRequest(
            game_id=game_id,
            player_token=token,
            bursts=mode != "events",
            settled=mode == "settled",
            omit_rendered=turn,
            views_on_turn=turn,
        )
        async for update in stub.WatchGame(request):
            if last_event(update).type == "GameFinished":
                finished = True
                return
            opened.set()  # the stream's first message: it is open (with a view or not)
            if update.HasField("view"):
                latest[:] = [update]
                changed.set()
            else:
                latest.clear()  # a waiting seat's update: an older turn is over

    async def sit_down() -> None:
        if await moves.open(game_id, token):
            tally.opened_at_sit_down += 1

    watcher = asyncio.create_task(watch())
    watcher.add_done_callback(lambda _: (changed.set(), opened.set()))
    # Beside the watch: a seat of a game begun in the measured time may have its turn before
    # the stream is open, and its move then waits for it (timed, and counted apart).
    opening = asyncio.create_task(sit_down())
    try:
        await opened.wait()
        if not tally.go.is_set():
            await opening  # the first games: every stream open before the measured time
        tally.streams_open += 1
        await tally.go.wait()
        acted_at = -1
        while not watcher.done():
            await changed.wait()
            changed.clear()
            if not latest or finished:
                continue
            if tally.think:  # a player thinking: uniform around the mean, so tables drift apart
                await asyncio.sleep(tally.think * (0.5 + rng.random()))
            update = latest[0]
            version = last_event(update).version
            if not update.legal_actions or version <= acted_at:
                continue
            submit = engine_pb2.SubmitActionRequest(
                game_id=game_id,
                player_token=token,
                action=update.legal_actions[rng.randrange(len(update.legal_actions))],
                expected_version=version,
                idempotency_key=uuid.uuid4().hex,
            )
            sign_submit(submit, seat, KEYS[seat])
            start = time.perf_counter()
            opens_its_stream = not moves.unary and not moves.ready
            try:
                await moves.submit(submit)
            except grpc.aio.AioRpcError as err:
                if err.code() != grpc.StatusCode.ABORTED:
                    raise
                tally.aborted += 1  # another seat moved first: the stream brings the news
            took = time.perf_counter() - start
            tally.latencies.append(took)
            if opens_its_stream:
                tally.first_latencies.append(took)
            acted_at = version
        watcher.result()  # a stream that failed: surface it
    finally:
        watcher.cancel()
        opening.cancel()
        await asyncio.gather(watcher, opening, return_exceptions=True)
        await moves.close()


async def play_games(
    stub: engine_pb2_grpc.EngineServiceStub,
    operator: str,
    game: str,
    first: engine_pb2.CreateGameResponse,
    rng: random.Random,
    tally: Tally,
) -> None:
    """One table: play its game; when it ends, the next one (inside the measured time)."""
    created = first
    while True:
        await asyncio.gather(
            *(
                play_seat(stub, created.game_id, token, seat, rng, tally)
                for seat, token in enumerate(created.player_tokens)
            )
        )
        tally.games_finished += 1
        created = await create_game(stub, operator, game)


class RoutedStub:
    """An EngineServiceStub over several engine replicas (`--affinity`). "owner": each call
    goes to the replica that owns its request's game id (boulevard.contract.routing, as the
    gateway routes), a call without one (CreateGame) to the first; "spread": every call to the
    next replica in turn, as a per-call balancer (round_robin, a mesh) spreads them."""

    def __init__(self, channels: dict[str, grpc.aio.Channel], route: str) -> None:
        self._stubs = {a: engine_pb2_grpc.EngineServiceStub(c) for a, c in channels.items()}
        self._replicas = list(channels)
        self._spread = route == "spread"
        self._turn = itertools.count()

    def _stub(self, request: Any) -> engine_pb2_grpc.EngineServiceStub:
        if self._spread:
            return self._stubs[self._replicas[next(self._turn) % len(self._replicas)]]
        game_id = getattr(request, "game_id", "")
        return self._stubs[owner(game_id, self._replicas) if game_id else self._replicas[0]]

    def SubmitActions(self, **kwargs: Any) -> RoutedBidi:  # the stub's name
        """The stream on the replica its first message's game (its open's, or its move's)
        routes to."""
        return RoutedBidi(
            lambda first: self._stub(
                first.open if first.HasField("open") else first.submit
            ).SubmitActions(**kwargs)
        )

    def __getattr__(self, method: str) -> Any:
        def call(request: Any, *args: Any, **kwargs: Any) -> Any:
            return getattr(self._stub(request), method)(request, *args, **kwargs)

        return call


async def _loadgen(
    kind: str,
    address: str,
    operator: str,
    count: int,
    seconds: float,
    seed: int,
    ready: Any,
    go: Any,
    game: str,
    think: float = 0.0,
) -> dict[str, Any]:
    """`count` games of `game` (kind "engine") or `count` calls in flight (kind "noop"), driven for
    `seconds` once `go` is set; what happened, and this process's CPU over that time. The
    games' streams are open and caught up before the measured time starts. `think`: the
    mean seconds each seat waits before a move (a paced load instead of a saturated one)."""
    tally = Tally(think)
    loop = asyncio.get_running_loop()
    async with contextlib.AsyncExitStack() as channels:
        # `address`: one, or the engine replicas comma-separated (--affinity: RoutedStub).
        replicas = {
            a: await channels.enter_async_context(grpc.aio.insecure_channel(a))
            for a in replica_list(address)
        }
        channel = next(iter(replicas.values()))
        if kind == "noop":
            health = health_pb2_grpc.HealthStub(channel)
            await health.Check(health_pb2.HealthCheckRequest(), wait_for_ready=True)

            async def caller() -> None:
                await tally.go.wait()
                check = health_pb2.HealthCheckRequest()
                while True:
                    start = time.perf_counter()
                    await health.Check(check)
                    tally.latencies.append(time.perf_counter() - start)

            tasks = [asyncio.create_task(caller()) for _ in range(count)]
        else:
            stub: Any = (
                RoutedStub(replicas, os.environ.get(ROUTE_ENV, "owner"))
                if len(replicas) > 1
                else engine_pb2_grpc.EngineServiceStub(channel)
            )
            tables = [await create_game(stub, operator, game) for _ in range(count)]
            tasks = [
                asyncio.create_task(
                    play_games(stub, operator, game, t, random.Random(seed * 1000 + i), tally)
                )
                for i, t in enumerate(tables)
            ]
            for _ in range(2400):
                if tally.streams_open >= 4 * count or any(t.done() for t in tasks):
                    break
                await asyncio.sleep(0.05)
        ready.put(os.getpid())
        await loop.run_in_executor(None, go.wait)
        cpu = time.process_time()
        with Timer() as t:
            tally.go.set()
            await asyncio.sleep(seconds)
        cpu = time.process_time() - cpu
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
                raise result  # a driver that failed: surface it
    return {
        "latencies": tally.latencies,
        "first_latencies": tally.first_latencies,
        "opened_at_sit_down": tally.opened_at_sit_down,
        "aborted": tally.aborted,
        "games_finished": tally.games_finished,
        "seconds": t.seconds,
        "cpu": cpu,
    }


def loadgen(
    kind: str,
    address: str,
    operator: str,
    count: int,
    seconds: float,
    seed: int,
    ready: Any,
    go: Any,
    results: Any,
    game: str,
    think: float = 0.0,
) -> None:
    try:
        results.put(
            asyncio.run(
                _loadgen(kind, address, operator, count, seconds, seed, ready, go, game, think)
            )
        )
    except BaseException as exc:
        ready.put(-1)
        results.put({"error": repr(exc)})
        raise


def measure(
    kind: str,
    address: str,
    operator: str,
    count: int,
    seconds: float,
    procs: int,
    watched: dict[str, list[int]],
    game: str = "lords_of_vegas",
    think: float = 0.0,
) -> dict[str, Any]:
    """Run `count` (games of `game`, or calls in flight) split over load-generator
    processes, each seat waiting `think` seconds on average before a move; the servers' CPU
    (by pid) over the measured time, and the machine's 1-minute load average at its end."""
    ctx = multiprocessing.get_context("spawn")
    ready, results = ctx.Queue(), ctx.Queue()
    go = ctx.Event()
    procs = max(1, min(procs, count))
    shares = [count // procs + (1 if i < count % procs else 0) for i in range(procs)]
    workers = [
        ctx.Process(
            target=loadgen,
            args=(kind, address, operator, n, seconds, i + 1, ready, go, results, game, think),
            daemon=True,
        )
        for i, n in enumerate(shares)
    ]
    for w in workers:
        w.start()
    try:
        for _ in workers:
            if ready.get(timeout=300) == -1:
                raise RuntimeError(f"a load generator failed: {results.get(timeout=10)}")
        before = {name: cpu_seconds(pid) for name, pid in watched.items()}
        go.set()
        with Timer() as t:
            outs = [results.get(timeout=seconds + 120) for _ in workers]
        after = {name: cpu_seconds(pid) for name, pid in watched.items()}
    finally:
        for w in workers:
            w.join(timeout=30)
            if w.is_alive():
                w.terminate()
    for out in outs:
        if "error" in out:
            raise RuntimeError(f"a load generator failed: {out['error']}")
    latencies = sorted(x for out in outs for x in out["latencies"])
    firsts = sorted(x for out in outs for x in out.get("first_latencies", []))
    window = max(out["seconds"] for out in outs)
    return {
        "rate": rate(len(latencies), window),
        "calls": len(latencies),
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * percentile(latencies, 0.99),
        # The moves that found their stream not open yet, and the others (on a stream open
        # already); and the seats that opened theirs at sit-down.
        "first_moves": len(firsts),
        "opened_at_sit_down": sum(out.get("opened_at_sit_down", 0) for out in outs),
        "first_p50_ms": 1000 * statistics.median(firsts) if firsts else 0.0,
        "open_p99_ms": 1000 * percentile(sorted(set_minus(latencies, firsts)), 0.99)
        if len(firsts) < len(latencies)
        else 0.0,
        "aborted": sum(out["aborted"] for out in outs),
        "games_finished": sum(out["games_finished"] for out in outs),
        "window": window,
        "client_cores": sum(out["cpu"] for out in outs) / window,
        "server_cpu": {name: after[name] - before[name] for name in watched},
        "wall": t.seconds,
        "load": os.getloadavg()[0],
    }


def set_minus(values: list[float], taken: list[float]) -> list[float]:
    """`values` less one occurrence of each of `taken` (both sorted)."""
    out, i = [], 0
    for v in values:
        if i < len(taken) and taken[i] == v:
            i += 1
        else:
            out.append(v)
    return out


# --- in-process measurements -------------------------------------------------------------------


def rules_cost(
    games: int, name: str = "lords_of_vegas", seed: int = 7, max_commands: int = 3000
) -> tuple[float, float, int]:
    """The game's own work per action, in this process: seconds of decide + evolve per
    command (the chance it causes folded too), and of legal_commands per action for one
    seat (what the engine computes for each seat after each version), over random 4-seat
    games of `name` (each cut at `max_commands`: random play need not end); and how many
    commands were timed."""
    game = get_game(name)
    rng = random.Random(seed)
    rules_time = legal_time = 0.0
    commands = 0
    for _ in range(games):
        state = game.initial_state()
        for event in game.new_game(GameConfig(4, ())):
            state = game.evolve(state, event)
        played = 0
        while not game.outcome(state).finished and played < max_commands:
            request = game.chance(state)
            if request is not None:
                resolved = resolve_locally(request, rng)
                start = time.perf_counter()
                state = game.evolve(state, resolved)
                rules_time += time.perf_counter() - start
                continue
            start = time.perf_counter()
            legal = [(seat, game.legal_commands(state, seat)) for seat in range(4)]
            legal_time += time.perf_counter() - start
            choices = [(seat, c) for seat, cs in legal for c in cs]
            _, command = choices[rng.randrange(len(choices))]
            start = time.perf_counter()
            for event in game.decide(command, state):
                state = game.evolve(state, event)
            rules_time += time.perf_counter() - start
            commands += 1
            played += 1
    return rules_time / commands, legal_time / commands / 4, commands


def signing_cost(n: int, envelopes_per_action: float = 3.0) -> dict[str, float]:
    """Seconds per action of the trust layer's crypto: the client signs the command, the
    engine verifies it, signs a receipt and chain-hashes each envelope it appends."""
    player, engine = KEYS[0], SigningKey(bytes(range(32)))
    action = bytes(range(24))
    envelope = bytes(400)
    with Timer() as sign_t:
        sigs = [player.sign_command("g-bench", 0, i, f"k{i}", action) for i in range(n)]
    with Timer() as verify_t:
        for i, sig in enumerate(sigs):
            assert verify(
                player.public_key, sig, command_signing_bytes("g-bench", 0, i, f"k{i}", action)
            )
    with Timer() as receipt_t:
        for i in range(n):
            Receipt.sign(engine, "g-bench", i, chain_hash(envelope))
    with Timer() as chain_t:
        for _ in range(int(n * envelopes_per_action)):
            chain_hash(envelope)
    return {
        "sign": sign_t.seconds / n,
        "verify": verify_t.seconds / n,
        "receipt": receipt_t.seconds / n,
        "chain": chain_t.seconds / n,
    }


def haggler(heuristic: Any) -> Any:
    """Lords of Vegas heuristic play, except that every other seat rejects any trade."""

    def bot(view: Any, legal: Any, seat: int, rng: Any) -> Any:
        for command in legal:
            if isinstance(command, RejectTrade):
                return command
        return heuristic(view, legal, seat, rng)

    return bot


async def long_game(nc: Any, events: int) -> tuple[str, Engine, MemoryKeyValue]:
    """A legal Lords of Vegas game of more than `events` events, appended to the platform's
    GAMES stream by an in-process engine core: the current player keeps proposing the same
    trade (the rules offer two a turn but accept any number) and the others reject it,
    until the log is long enough; then heuristic play to the end. Its id, the engine and
    its snapshots."""
    game = get_game("lords_of_vegas")
    store = JetStreamEventStore(nc, "GAMES", "game")
    snapshots = MemoryKeyValue()
    engine = Engine(
        store,
        LocalChance(random.Random(3)),
        snapshots,
        b"bench-token-key",
        receipt_key=SigningKey(bytes(range(32))),
    )
    seats = [SeatRequest(i, f"h{i}", public_key=KEYS[i].public_hex) for i in range(4)]
    created = await engine.create_game(uuid.uuid4().hex, "lords_of_vegas", seats)
    game_id = created.game_id
    bot = haggler(game.bots["heuristic"])
    rng = random.Random(5)
    offer: ProposeTrade | None = None
    while True:
        session = await engine.load(game_id)
        if session.finished is not None:
            return game_id, engine, snapshots
        seat = next(s for s in range(4) if session.legal(s))
        legal = list(session.legal(seat))
        proposals = [c for c in legal if isinstance(c, ProposeTrade)]
        if proposals:
            offer = proposals[0]
        if (
            session.version < events
            and offer is not None
            and offer.seat == seat
            and session.state.pending_trade is None
        ):
            command: Any = offer  # once more: accepted by the rules, though not offered
        else:
            command = bot(game.view(session.state, seat), legal, seat, rng)
            if not isinstance(command, RejectTrade):
                offer = None if command not in proposals else offer
        action = command_to_action(game, command).SerializeToString(deterministic=True)
        key = uuid.uuid4().hex
        signature = KEYS[seat].sign_command(game_id, seat, session.version, key, action)
        claims = PlayerClaims(game_id, seat, f"h{seat}")
        await engine.submit(game_id, claims, command, session.version, key, action, signature)


async def rebuild(
    nc: Any, game_id: str, engine: Engine, snapshots: MemoryKeyValue
) -> tuple[int, float, float]:
    """Median of 5 loads of the game by a fresh engine core: cold (no snapshot: every
    event read from JetStream and folded) and from its latest snapshot."""
    store = JetStreamEventStore(nc, "GAMES", "game")
    times = {}
    version = 0
    for label, kv in (("cold", MemoryKeyValue()), ("snapshot", snapshots)):
        runs = []
        for _ in range(5):
            fresh = Engine(
                store,
                LocalChance(random.Random()),
                kv,
                engine.token_key,
                receipt_key=engine.receipt_key,  # the snapshots are sealed with it
            )
            with Timer() as t:
                session = await fresh.load(game_id)
            runs.append(t.seconds)
            version = session.version
        times[label] = statistics.median(runs)
    return version, times["cold"], times["snapshot"]


async def read_through_watch(
    address: str, operator: str, game: str = "lords_of_vegas"
) -> tuple[int, float, float]:
    """A game of `game` played to the end through the engine by four bots; then the
    median of 3 spectator reads of it, every event from version 0: one event per message,
    then in bursts. Its events and the two times."""
    times = []
    async with grpc.aio.insecure_channel(address) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        created = await create_game(stub, operator, game)
        await play_game(channel, created.game_id, game, list(created.player_tokens), KEYS, seed=7)
        game_id = created.game_id
        events = (await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id))).version
        for bursts in (False, True):
            runs = []
            for _ in range(3):
                request = engine_pb2.WatchGameRequest(game_id=game_id, bursts=bursts)
                with Timer() as t:
                    async for update in stub.WatchGame(request):
                        if last_event(update).type == "GameFinished":
                            break
                runs.append(t.seconds)
            times.append(statistics.median(runs))
    return events, times[0], times[1]


# --- the report -----------------------------------------------------------------------------


async def stream_writes(nc: Any) -> int:
    """Messages written so far to every JetStream stream (KV buckets included: their last
    sequence counts overwrites too): what the disk syncs."""
    total = 0
    for info in await nc.jetstream().streams_info():
        total += info.state.last_seq
    return total


def loadavg() -> str:
    one, five, fifteen = os.getloadavg()
    text = f"{one:.2f} {five:.2f} {fifteen:.2f} (1/5/15 min) on {os.cpu_count()} cores"
    try:  # Linux pressure stall information: the share of time runnable tasks waited
        with open("/proc/pressure/cpu") as f:
            some = dict(kv.split("=") for kv in f.readline().split()[1:])
        text += f"; CPU pressure {some['avg10']}% (10 s) {some['avg60']}% (60 s)"
    except (OSError, KeyError, ValueError):
        pass
    return text


async def raw_jetstream(server: Any, n: int, in_flight: int) -> float:
    """Raw JetStream publishes of 200 bytes with a message id (what an append is), to a
    stream of the same (synced) server, `in_flight` at a time."""
    nc = await server.connect()
    js = nc.jetstream()
    await js.add_stream(name="RAWBENCH", subjects=["rawbench.>"])
    sent = 0

    async def publisher(k: int) -> None:
        nonlocal sent
        while sent < n:
            sent += 1
            await js.publish(f"rawbench.{k}", b"x" * 200, headers={"Nats-Msg-Id": uuid.uuid4().hex})

    with Timer() as t:
        await asyncio.gather(*(publisher(k) for k in range(in_flight)))
    await nc.close()
    return rate(sent, t.seconds)


@dataclass
class BenchPlatform:
    """The platform a bench drives: nats-server (synced, as shipped) and the four services
    as processes, an operator token, and the pids whose CPU the bench reads."""

    platform: Any
    addresses: dict[str, str]
    operator: str
    servers: dict[str, list[int]]  # name -> pids: engine (all replicas), dice, ledger, ...
    engine_metrics: list[str]  # each engine replica's /metrics URL

    @property
    def engine(self) -> str:
        return self.addresses["engine"]


@contextlib.asynccontextmanager
async def bench_platform(engines: int = 1, own_ports: bool = False) -> AsyncIterator[BenchPlatform]:
    """Start the whole platform in a temporary directory, on free ports, logging warnings
    only; `engines` engine processes on the one port (grpc sets SO_REUSEPORT: the kernel
    spreads the load generators' connections over them; OCC orders each game), or with
    `own_ports` each on a port of its own (`addresses["engine"]` then lists them all,
    comma-separated, for RoutedStub). Stopped on exit."""
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("MATCHMAKING", "ENGINE", "DICE", "LEDGER", "GATEWAY", "EMBEDDED_NATS"):
            os.environ[f"BOULEVARD_{name}_PORT"] = str(free_port())
        for name in ("MATCHMAKING", "ENGINE", "DICE", "LEDGER", "GATEWAY"):
            # Any free port: a `boulevard up` on this machine holds the default ones.
            os.environ[f"BOULEVARD_{name}_METRICS_PORT"] = "0"
        metrics_port = free_port()  # the engine's is read (cold loads, --affinity)
        os.environ["BOULEVARD_ENGINE_METRICS_PORT"] = str(metrics_port)
        os.environ["BOULEVARD_LOG_LEVEL"] = "warning"
        os.environ.pop("NATS_URL", None)
        settings = Settings()
        platform, addresses = await start_platform(
            settings, ["matchmaking", "engine", "dice", "ledger"], Path(tmp), 60
        )
        replicas: list[subprocess.Popen[bytes]] = []
        try:
            assert platform.nats is not None and platform.nats.process is not None
            pids = {c.name: c.process.pid for c in platform.children}
            metrics = [f"http://127.0.0.1:{metrics_port}/metrics"]
            if not own_ports:
                replicas.extend(platform.spawn("engine") for _ in range(engines - 1))
            for _ in range(engines - 1 if own_ports else 0):
                port, metrics_port = free_port(), free_port()
                env = {
                    **platform.env,
                    "BOULEVARD_ENGINE_PORT": str(port),
                    "BOULEVARD_ENGINE_METRICS_PORT": str(metrics_port),
                }
                replicas.append(
                    subprocess.Popen([sys.executable, "-m", "services.engine"], env=env)
                )
                await wait_serving(f"127.0.0.1:{port}", 60, replicas[-1])
                addresses["engine"] += f",127.0.0.1:{port}"
                metrics.append(f"http://127.0.0.1:{metrics_port}/metrics")
            yield BenchPlatform(
                platform,
                addresses,
                demo_operator_token(settings, Path(tmp)),
                {
                    "engine": [pids["engine"], *(r.pid for r in replicas)],
                    "dice": [pids["dice"]],
                    "ledger": [pids["ledger"]],
                    "matchmaking": [pids["matchmaking"]],
                    "nats": [platform.nats.process.pid],
                },
                metrics,
            )
        finally:
            for process in replicas:
                process.terminate()
                process.wait()
            platform.stop()


def cold_loads(urls: list[str]) -> list[float]:
    """Each engine replica's count of games it loaded from its snapshot or the log (not from
    memory): boulevard_engine_game_loads{source="snapshot"|"log"} on its /metrics."""
    counts = []
    for url in urls:
        with urllib.request.urlopen(url, timeout=5) as reply:
            text = reply.read().decode()
        counts.append(
            sum(
                float(line.rsplit(" ", 1)[1])
                for line in text.splitlines()
                if line.startswith("boulevard_engine_game_loads_total{")
                and 'source="cache"' not in line
            )
        )
    return counts


async def timed_move(
    stub: engine_pb2_grpc.EngineServiceStub, game_id: str, tokens: list[str], rng: random.Random
) -> float:
    """Seconds of one SubmitAction of a random legal action, by the first seat that has
    one (the legal actions asked for first, untimed)."""
    for seat, token in enumerate(tokens):
        legal = await stub.ListLegalActions(
            engine_pb2.ListLegalActionsRequest(game_id=game_id, player_token=token)
        )
        if legal.actions:
            submit = engine_pb2.SubmitActionRequest(
                game_id=game_id,
                player_token=token,
                action=legal.actions[rng.randrange(len(legal.actions))],
                expected_version=legal.version,
                idempotency_key=uuid.uuid4().hex,
            )
            sign_submit(submit, seat, KEYS[seat])
            start = time.perf_counter()
            await stub.SubmitAction(submit)
            return time.perf_counter() - start
    raise RuntimeError(f"no seat of {game_id} can act")


async def cold_move_cost(replicas: list[str], operator: str, game: str, games: int) -> None:
    """What a move costs on a replica that does not hold the game, beside a warm one: each
    game is made and played 20 moves on the first replica; then one move there (warm), the
    next on the second replica, which never saw the game (cold: its snapshot and the log
    after it are read), and one more there (warm again). Medians over `games` games."""
    rng = random.Random(5)
    warm, cold, again = [], [], []
    async with (
        grpc.aio.insecure_channel(replicas[0]) as one,
        grpc.aio.insecure_channel(replicas[1]) as two,
    ):
        first, second = (
            engine_pb2_grpc.EngineServiceStub(one),
            engine_pb2_grpc.EngineServiceStub(two),
        )
        for _ in range(games):
            made = await create_game(first, operator, game)
            tokens = list(made.player_tokens)
            for _ in range(20):
                await timed_move(first, made.game_id, tokens, rng)
            warm.append(await timed_move(first, made.game_id, tokens, rng))
            cold.append(await timed_move(second, made.game_id, tokens, rng))
            again.append(await timed_move(second, made.game_id, tokens, rng))
    ms = [1e3 * statistics.median(x) for x in (warm, cold, again)]
    print(
        f"a move on a replica that does not hold the game, after 20 moves elsewhere "
        f"(median of {games} games): cold {ms[1]:.1f} ms; warm {ms[0]:.1f} ms on the replica "
        f"that played them, {ms[2]:.1f} ms for the next move on the cold one"
    )


async def load_only(
    seconds: float,
    procs: int,
    engines: int,
    game: str,
    sizes: list[int],
    affinity: bool = False,
    runs: int = 2,
) -> None:
    """Only the SubmitAction rows at `sizes` games: rate, latency, and every server
    process's CPU per action, each row with the load average at its end. With `affinity`,
    the engines listen on ports of their own and each size runs `runs` times alternately
    spread (no affinity) and by owner, each row with its cold loads per replica."""
    title = get_game(game).title
    print(f"load average at start: {loadavg()}")
    async with bench_platform(engines, own_ports=affinity) as bench:
        print(
            f"SubmitAction ({title}, 4 seats a game, WatchGame in "
            f"{os.environ.get(WATCH_ENV, 'settled')} mode, "
            f"views {os.environ.get(VIEWS_ENV, 'turn')}"
            f"{'; every game on a real-time clock' if bench_time_control() else ''}), "
            f"{seconds:.0f} s a row, {engines} engine process(es) "
            + ("on ports of their own" if affinity else "on one port (SO_REUSEPORT)")
            + "; server CPU per action in ms:"
        )
        rows = [(n, r) for n in sizes for r in (("spread", "owner") * runs if affinity else ("",))]
        for n, route in rows:
            if route:
                os.environ[ROUTE_ENV] = route  # the spawned load generators read it
            loads = cold_loads(bench.engine_metrics)
            e = measure(
                "engine", bench.engine, bench.operator, n, seconds, procs, bench.servers, game
            )
            # Counted from before the tables were made: a game created on one replica and
            # played on another is loaded there once (its owner is known only once made).
            cold = [b - a for a, b in zip(loads, cold_loads(bench.engine_metrics), strict=True)]
            calls = max(1, e["calls"])
            every = sum(e["server_cpu"].values()) / calls
            parts = "  ".join(
                f"{name} {1e3 * cpu / calls:.2f}" for name, cpu in e["server_cpu"].items()
            )
            label = {"spread": "spread", "owner": "affinity", "": ""}[route]
            print(
                f"  {n:>3} games{' ' + label if label else ''}: {e['rate']:6,.0f} actions/s  "
                f"p50 {e['p50_ms']:6.1f}  p99 {e['p99_ms']:7.1f} ms  all {1e3 * every:.2f}  "
                f"({parts})  cold loads {'+'.join(f'{c:.0f}' for c in cold)}  "
                f"aborted {e['aborted']}  "
                f"load {e['load']:.1f}"
            )
            if e["first_moves"] or e["opened_at_sit_down"]:
                print(
                    f"      of them {e['first_moves']} opened their seat's SubmitActions stream "
                    f"or waited for it to open (p50 {e['first_p50_ms']:.1f} ms); on an open "
                    f"stream p99 {e['open_p99_ms']:.1f} ms; {e['opened_at_sit_down']} seats "
                    "opened theirs at sit-down"
                )
        if affinity:
            replicas = replica_list(bench.engine)
            await cold_move_cost(replicas, bench.operator, game, 5 if seconds < 10 else 20)
    print(f"load average at end:   {loadavg()}")


async def main(quick: bool, procs: int, engines: int, game: str) -> None:
    seconds = 6.0 if quick else 20.0
    title = get_game(game).title
    print(f"load average at start: {loadavg()}")
    async with bench_platform(engines) as bench:
        platform, addresses, operator, servers = (
            bench.platform,
            bench.addresses,
            bench.operator,
            bench.servers,
        )
        noop_address = f"127.0.0.1:{free_port()}"
        noop = subprocess.Popen([sys.executable, "-c", NOOP_SERVER, noop_address])
        try:
            decide_evolve, legal_one_seat, timed = rules_cost(3 if quick else 10, game)
            print(
                f"the game's own work, in-process ({timed:,} random {title} commands): "
                f"decide + evolve {decide_evolve * 1e6:,.0f} us/action, legal_commands "
                f"{legal_one_seat * 1e6:,.0f} us per seat"
            )
            print(
                f"{engines} engine process(es); "
                f"load generators: {procs} process(es) of their own (multiprocessing), "
                f"{seconds:.0f} s a run; cores = CPU seconds / wall seconds of the run"
            )
            header = (
                f"  {'in flight':>9}  {'calls/s':>8}  {'ratio':>5}  {'p50 ms':>7}  "
                f"{'p99 ms':>7}  {'server cores':>12}  {'client cores':>12}  "
                f"{'server CPU/call':>15}"
            )
            js1 = await raw_jetstream(platform.nats, 300 if quick else 1000, 1)
            js100 = await raw_jetstream(platform.nats, 2000 if quick else 6000, 100)
            print(
                f"raw JetStream publish (synced to disk, as the GAMES stream): {js1:,.0f} msg/s "
                f"one at a time, {js100:,.0f} msg/s with 100 in flight"
            )
            admin = await platform.nats.connect()
            rows = []
            for n in (1, 10, 100):
                noop_r = measure(
                    "noop", noop_address, operator, n, seconds / 2, procs, {"noop": [noop.pid]}
                )
                written = await stream_writes(admin)
                eng = measure(
                    "engine", addresses["engine"], operator, n, seconds, procs, servers, game
                )
                eng["writes"] = await stream_writes(admin) - written
                rows.append((n, noop_r, eng))
            print("raw gRPC unary no-op (health Check on a bare server process):")
            print(header)
            for n, r, _ in rows:
                cpu = r["server_cpu"]["noop"]
                print(
                    f"  {n:>9}  {r['rate']:>8,.0f}  {'':>5}  {r['p50_ms']:>7.2f}  "
                    f"{r['p99_ms']:>7.2f}  {cpu / r['window']:>12.2f}  "
                    f"{r['client_cores']:>12.2f}  {1e6 * cpu / r['calls']:>12,.0f} us"
                )
            print(
                f"SubmitAction ({title}, 4 seats a game, each seat its own WatchGame "
                f"stream in {os.environ.get(WATCH_ENV, 'settled')} mode, views "
                f"{os.environ.get(VIEWS_ENV, 'turn')}; games in flight = "
                "calls in flight):"
            )
            print(header.replace("in flight", "    games"))
            for n, r, e in rows:
                cpu = e["server_cpu"]["engine"]
                print(
                    f"  {n:>9}  {e['rate']:>8,.0f}  {e['rate'] / r['rate']:>5.2f}  "
                    f"{e['p50_ms']:>7.2f}  {e['p99_ms']:>7.2f}  {cpu / e['window']:>12.2f}  "
                    f"{e['client_cores']:>12.2f}  {1e6 * cpu / e['calls']:>12,.0f} us"
                )
            print("  (server = the engine process; others over the same runs, cores:")
            for n, _, e in rows:
                others = ", ".join(
                    f"{name} {cpu / e['window']:.2f}"
                    for name, cpu in e["server_cpu"].items()
                    if name != "engine"
                )
                print(
                    f"   {n:>3} games: {others}; {e['aborted']} ABORTED (lost races), "
                    f"{e['games_finished']} games finished; load average {e['load']:.1f})"
                )
            print("server CPU per action, all server processes (of it, the engine):")
            for n, _, e in rows:
                every = sum(e["server_cpu"].values()) / max(1, e["calls"])
                engine_share = e["server_cpu"]["engine"] / max(1, e["calls"])
                print(f"  {n:>3} games: {every * 1e3:.2f} ms (engine {engine_share * 1e3:.2f} ms)")
            print(
                "synced JetStream writes per action (all streams: GAMES, dice outcomes, "
                "ledger, KV), and the action rate they allow at the raw publish rate above:"
            )
            for n, _, e in rows:
                per_action = e["writes"] / max(1, e["calls"])
                print(
                    f"  {n:>3} games: {per_action:4.1f} writes/action -> at most "
                    f"{(js1 if n == 1 else js100) / per_action:,.0f} actions/s "
                    f"(raw publish {'one at a time' if n == 1 else 'with 100 in flight'})"
                )
            await admin.close()
            print("aims (issue 17):")
            n, r100, e100 = rows[2]
            print(
                f"  SubmitAction at 100 games / raw no-op at 100 in flight: "
                f"{e100['rate']:,.0f} / {r100['rate']:,.0f} = {e100['rate'] / r100['rate']:.2f}"
                f"  (aim >= 0.50)"
            )
            print(f"  p99 at 10 games:  {rows[1][2]['p99_ms']:7.1f} ms  (aim < 20 ms)")
            print(f"  p99 at 100 games: {e100['p99_ms']:7.1f} ms  (aim < 50 ms)")
            for n, r, e in rows[1:]:
                engine_cpu = e["server_cpu"]["engine"] / e["calls"]
                noop_cpu = r["server_cpu"]["noop"] / r["calls"]
                budget = 2 * (noop_cpu + decide_evolve)
                print(
                    f"  engine CPU per action at {n:>3} games: {engine_cpu * 1e6:,.0f} us vs "
                    f"2 x ({noop_cpu * 1e6:,.0f} us no-op CPU/call + "
                    f"{decide_evolve * 1e6:,.0f} us decide+evolve) = {budget * 1e6:,.0f} us: "
                    f"ratio {engine_cpu / budget:.2f} (aim <= 1)"
                )
            cost = signing_cost(500 if quick else 3000)
            engine_side = cost["verify"] + cost["receipt"] + cost["chain"]
            engine_per_action = rows[2][2]["server_cpu"]["engine"] / rows[2][2]["calls"]
            print("signing and verifying per action (Ed25519, SHA-256; docs/auditing.md):")
            print(f"  client signs the command            {cost['sign'] * 1e6:7.1f} us")
            print(f"  engine verifies it                  {cost['verify'] * 1e6:7.1f} us")
            print(f"  engine signs the receipt            {cost['receipt'] * 1e6:7.1f} us")
            print(f"  engine chain-hashes ~3 envelopes    {cost['chain'] * 1e6:7.1f} us")
            print(
                f"  engine's share: {engine_side * 1e6:.1f} us of the engine's "
                f"{engine_per_action * 1e6:,.0f} us CPU per action at 100 games = "
                f"{100 * engine_side / engine_per_action:.1f}% (aim < 10%)"
            )
            nc = await platform.nats.connect("engine")
            try:
                game_id, engine, snapshots = await long_game(nc, 1000)
                events, cold, snap = await rebuild(nc, game_id, engine, snapshots)
            finally:
                await nc.close()
            print(
                f"rebuild of a {events:,}-event trade-heavy game from the GAMES stream "
                "(median of 5, measured):"
            )
            print(
                f"  cold, from the start   {cold * 1000:7.1f} ms  "
                f"({rate(events, cold):,.0f} events/s; aim < 100 ms)"
            )
            print(f"  from its snapshot      {snap * 1000:7.1f} ms")
            played, single, bursts = await read_through_watch(addresses["engine"], operator, game)
            print(
                f"a finished {played:,}-event {title} game (four bots through the engine) read "
                "through "
                "WatchGame from version 0, as the audits read it (median of 3):"
            )
            print(f"  one event per message  {single * 1000:7.1f} ms")
            print(
                f"  bursts (<= 128 events) {bursts * 1000:7.1f} ms  ({single / bursts:.1f}x faster)"
            )
        finally:
            noop.terminate()
            noop.wait()
    print(f"load average at end:   {loadavg()}")


if __name__ == "__main__":
    # Stopped with SIGTERM (kill, pkill, a CI time limit) as with Ctrl-C: the platform and the
    # load generators it started are stopped too, not left running without it.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="shorter runs")
    parser.add_argument(
        "--game",
        choices=sorted(REGISTRY),
        default="lords_of_vegas",
        help="the game the seats play (default lords_of_vegas; 4 seats a game)",
    )
    parser.add_argument(
        "--procs", type=int, default=2, help="load-generator processes per run (default 2)"
    )
    parser.add_argument(
        "--engines", type=int, default=1, help="engine processes on the one port (default 1)"
    )
    parser.add_argument(
        "--watch",
        choices=("settled", "bursts", "events"),
        default="settled",
        help="how seats watch: one message per move and the chance it owes "
        "(WatchGameRequest.settled), as the bots do (default); one per burst; or one per event",
    )
    parser.add_argument(
        "--views",
        choices=("turn", "full"),
        default="turn",
        help="what the seats' updates carry: a view only on the seat's turn and no text "
        "board (WatchGameRequest.views_on_turn, omit_rendered), as the bots do (default); "
        "or a view with its text board on every burst",
    )
    parser.add_argument(
        "--load-only",
        action="store_true",
        help="only the SubmitAction rows and each server's CPU per action (A/B comparisons)",
    )
    parser.add_argument(
        "--affinity",
        action="store_true",
        help="with --load-only and --engines N: the engines on ports of their own, each row "
        "run alternately spread over them and routed to each game's owner",
    )
    parser.add_argument(
        "--runs", type=int, default=2, help="with --affinity: runs of each mode per size"
    )
    parser.add_argument(
        "--games",
        default="10,100",
        help="with --load-only: the table counts, comma-separated (default 10,100)",
    )
    parser.add_argument(
        "--clock",
        action="store_true",
        help="every game on a real-time clock (30 min a seat + 10 s a move; none runs out): "
        "what the clocks cost, beside a run without",
    )
    parser.add_argument(
        "--submit",
        choices=("stream", "unary"),
        default="stream",
        help="how seats submit: one message per move on a SubmitActions stream, as the bots "
        "do (default), or one unary SubmitAction call per move (the call before the stream)",
    )
    args = parser.parse_args()
    os.environ[WATCH_ENV] = args.watch  # the spawned load generators read it
    os.environ[VIEWS_ENV] = args.views
    os.environ[SUBMIT_ENV] = args.submit
    os.environ[CLOCK_ENV] = "1" if args.clock else ""
    if args.load_only:
        sizes = [int(n) for n in args.games.split(",")]
        seconds = 6.0 if args.quick else 15.0
        asyncio.run(
            load_only(seconds, args.procs, args.engines, args.game, sizes, args.affinity, args.runs)
        )
    else:
        asyncio.run(main(args.quick, args.procs, args.engines, args.game))
