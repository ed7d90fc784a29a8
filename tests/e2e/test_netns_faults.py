"""Faults across a network (issue 29): the deployment's three-node NATS cluster and the
services on their own network namespaces (tests/support/netns.py), games of all four games
played by bots through the public API, and a schedule of faults: one node isolated, a
majority/minority split, a one-way cut, a node SIGSTOPped past its leases, the ledger
SIGSTOPped, a node killed and restarted, slow and lossy links, a node on a nearly full disk.
Every SubmitAction answer is recorded; afterwards the history checker
(tests/support/history.py) compares what clients were told with what the platform holds.

Needs root, ip, nft and tc: skipped locally without them (naming what is missing), never in
CI (CI=true fails instead). Bounded to a few minutes: small tables, a short schedule."""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from random import Random

import grpc
import nats
import pytest

from boulevard.api.v1 import (
    dice_pb2,
    dice_pb2_grpc,
    engine_pb2,
    engine_pb2_grpc,
    events_pb2,
    ledger_pb2,
    ledger_pb2_grpc,
)
from boulevard.audit.signing import chain_hash
from boulevard.client.ledger import LedgerClient
from boulevard.eventlog.jetstream import JetStreamEventStore
from boulevard.games import get_game
from boulevard.messaging.identities import ADMIN, inbox_prefix, seed_path
from boulevard.platform.identity import OPERATOR as OPERATOR_ROLE
from boulevard.platform.tls import client_ssl_context
from boulevard.seats.player import SeatPlayer
from tests.support.history import (
    Acknowledged,
    FinalState,
    GameFinal,
    Report,
    Status,
    StoredEvent,
    check,
)
from tests.support.identity import auth_env, mint
from tests.support.keys import seat_key
from tests.support.netns import NetnsCluster, missing_tools

pytestmark = pytest.mark.e2e

OPERATOR = mint("netfaults-operator", (OPERATOR_ROLE,), ttl=3600)
GAMES = {"las_vegas": 2, "lords_of_vegas": 2, "long_shot": 3, "vegas_showdown": 3}
PORTS = {"dice": 50053, "ledger": 50054, "engine": 50052}
FINISH_SECONDS = 150  # for the games under way once the last fault is undone
RETRY = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[NetnsCluster]:
    missing = missing_tools()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the network fault test; missing: {', '.join(missing)}")
        pytest.skip(f"needs {', '.join(missing)} (network namespaces, nftables, tc netem)")
    c = NetnsCluster(tmp_path / "netns")
    try:
        yield c.start()
    finally:
        c.stop()


class Recorder(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """What every client was told: each SubmitAction answered OK, and each failure's code,
    with when it happened (for the per-fault table)."""

    def __init__(self) -> None:
        self.acks: list[Acknowledged] = []
        self.calls: list[tuple[float, float, str]] = []

    async def intercept_unary_unary(self, continuation, details, request):  # type: ignore[no-untyped-def]
        method = details.method
        if not (method.decode() if isinstance(method, bytes) else method).endswith("/SubmitAction"):
            return await continuation(details, request)
        start = time.monotonic()
        call = await continuation(details, request)
        try:
            reply = await call
        except grpc.aio.AioRpcError as err:
            self.calls.append((start, time.monotonic() - start, err.code().name))
            return call
        self.calls.append((start, time.monotonic() - start, "OK"))
        self.acks.append(
            Acknowledged(
                request.game_id,
                tuple((e.event_id, e.version) for e in reply.events),
                reply.receipt.version,
                bytes(reply.receipt.chain_head),
            )
        )
        return call


@dataclass
class Fault:
    name: str
    start: float = 0.0
    end: float = 0.0
    recovered_at: float = 0.0  # first OK SubmitAction after the fault was undone
    notes: list[str] = field(default_factory=list)


class Platform:
    def __init__(self, cluster: NetnsCluster, tmp_path: Path) -> None:
        assert cluster.pki is not None
        self.cluster = cluster
        self.tmp = tmp_path
        env = {k: v for k, v in os.environ.items() if not k.startswith("BOULEVARD_")}
        env.pop("NATS_URL", None)
        env.update(auth_env())
        env.update({
            "NATS_URL": cluster.nats_url,
            "BOULEVARD_NATS_IDENTITIES_DIR": str(cluster.identities_dir),
            "BOULEVARD_TLS_CA_FILE": str(cluster.pki.ca_cert),
            "BOULEVARD_GRPC_HOST": "0.0.0.0",
            "BOULEVARD_STREAM_REPLICAS": "3",
            "BOULEVARD_TOKEN_KEY": "c" * 64,
            "BOULEVARD_DATA_DIR": str(tmp_path / "data"),
            "BOULEVARD_LOG_FORMAT": "json",
            "PYTHONPATH": os.pathsep.join(sys.path),
        })  # fmt: skip
        for name, port in PORTS.items():
            env[f"BOULEVARD_{name.upper()}_PORT"] = str(port)
            env[f"BOULEVARD_{name.upper()}_METRICS_PORT"] = str(port + 1000)
        self.env = env
        self.procs: dict[str, object] = {}
        self.restarts: list[str] = []  # services started again after exiting at start

    def address(self, name: str) -> str:
        return f"{self.cluster.svc.address}:{PORTS[name]}"

    def start_one(self, name: str) -> None:
        self.procs[name] = self.cluster.svc.popen(
            [sys.executable, "-m", f"services.{name}"], self.env, self.tmp / f"{name}.log"
        )

    async def start(self) -> None:
        """Each service until SERVING. One that exits while starting (a stream leader not
        elected yet on a loaded machine: its first JetStream call timed out) is started
        again, as Kubernetes restarts a crashed pod; at most three times."""
        from boulevard.cli.up import wait_serving

        for name in PORTS:
            for attempt in range(3):
                self.start_one(name)
                try:
                    await wait_serving(self.address(name), 90, self.procs[name])  # type: ignore[arg-type]
                    break
                except RuntimeError:
                    if attempt == 2:
                        raise
                    self.restarts.append(name)

    def pid(self, name: str) -> int:
        return self.procs[name].pid  # type: ignore[attr-defined, no-any-return]

    def stop(self) -> None:
        for proc in self.procs.values():
            p = proc  # subprocess.Popen
            if p.poll() is None:  # type: ignore[attr-defined]
                os.kill(p.pid, 18)  # type: ignore[attr-defined]  # SIGCONT, in case
                p.terminate()  # type: ignore[attr-defined]
                try:
                    p.wait(15)  # type: ignore[attr-defined]
                except Exception:
                    p.kill()  # type: ignore[attr-defined]

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""


async def admin_nats(cluster: NetnsCluster) -> nats.aio.client.Client:
    assert cluster.pki is not None
    return await nats.connect(
        cluster.admin_urls,
        tls=client_ssl_context(cluster.pki.ca_cert),
        tls_hostname="nats",
        nkeys_seed_str=seed_path(cluster.identities_dir, ADMIN).read_text().strip(),
        inbox_prefix=inbox_prefix(ADMIN),
        max_reconnect_attempts=60,
        reconnect_time_wait=0.2,
    )


async def cluster_ready(cluster: NetnsCluster, within: float = 60) -> None:
    """Until every node says JetStream is up (/healthz?js-enabled-only=true) and the
    cluster has a meta leader (/jsz)."""
    import json

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        answers = [
            await asyncio.to_thread(cluster.monitor, i, "/healthz?js-enabled-only=true")
            for i in range(3)
        ]
        healthy = all('"ok"' in a for a in answers)
        jsz = json.loads(await asyncio.to_thread(cluster.monitor, 0, "/jsz") or "{}")
        if healthy and (jsz.get("meta_cluster") or {}).get("leader"):
            return
        await asyncio.sleep(0.5)
    raise TimeoutError(f"the cluster was not ready within {within} s")


async def games_leader(cluster: NetnsCluster) -> int:
    nc = await admin_nats(cluster)
    try:
        info = await nc.jetstream().stream_info("GAMES")
        assert info.config.num_replicas == 3
        assert info.cluster is not None and info.cluster.leader
        return int(info.cluster.leader.rsplit("-", 1)[-1])
    finally:
        await nc.close()


async def play_one(engine: engine_pb2_grpc.EngineServiceStub, name: str, seats: int,
                   created: list[tuple[str, str]]) -> None:  # fmt: skip
    """One game from creation to its end, retrying what a fault answers."""
    for attempt in range(200):
        try:
            made = await engine.CreateGame(
                engine_pb2.CreateGameRequest(
                    request_id=uuid.uuid4().hex, game=name,
                    seats=[engine_pb2.SeatAssignment(seat=i, player_id=f"p{i}",
                                                     public_key=seat_key(i).public_hex)
                           for i in range(seats)],
                ),
                metadata=(("authorization", f"Bearer {OPERATOR}"),),
                timeout=10,
            )  # fmt: skip
            break
        except grpc.aio.AioRpcError as err:
            if err.code() not in RETRY or attempt == 199:
                raise
            await asyncio.sleep(0.3)
    created.append((made.game_id, name))
    game = get_game(name)
    players = [
        SeatPlayer(engine, made.game_id, name, s, token, game.bots["heuristic"], Random(s),
                   seat_key(s))
        for s, token in enumerate(made.player_tokens)
    ]  # fmt: skip
    for _ in range(300):
        try:
            await asyncio.gather(*(p.play() for p in players))
            return
        except grpc.aio.AioRpcError as err:
            if err.code() not in RETRY | {grpc.StatusCode.INTERNAL}:
                raise
            await asyncio.sleep(0.3)
    raise AssertionError(f"{made.game_id} never finished")


async def final_state(platform: Platform, created: list[tuple[str, str]]) -> FinalState:
    """Everything the platform holds of the games: logs as stored, pure replays, the
    engine's answers, the ledger's entries, the dice verdicts and reconciliations."""
    from tests.e2e.test_engine_robustness import Codec, Session  # the pure replay

    nc = await admin_nats(platform.cluster)
    games: dict[str, GameFinal] = {}
    postings: list[tuple[str, int]] = []
    try:
        store = JetStreamEventStore(nc, "GAMES", "game")
        async with (
            grpc.aio.insecure_channel(platform.address("engine")) as ech,
            grpc.aio.insecure_channel(platform.address("dice")) as dch,
            grpc.aio.insecure_channel(platform.address("ledger")) as lch,
        ):
            engine = engine_pb2_grpc.EngineServiceStub(ech)
            dice = dice_pb2_grpc.DiceServiceStub(dch)
            ledger = ledger_pb2_grpc.LedgerServiceStub(lch)
            for game_id, _ in created:
                recorded = await store.read(game_id)
                envs = [events_pb2.EventEnvelope.FromString(r.data) for r in recorded]
                log = tuple(
                    StoredEvent(e.version, e.event_id, chain_hash(r.data),
                                bool(e.transfers) or e.type == "GameFinished")
                    for e, r in zip(envs, recorded, strict=True)
                )  # fmt: skip
                session = Session.new(game_id, Codec(()).loads(envs[0].payload))
                for e in envs:
                    session.apply_envelope(e)
                got = await engine.GetGame(engine_pb2.GetGameRequest(game_id=game_id))
                finished = got.status == engine_pb2.GAME_STATUS_FINISHED
                replay_finished = bool(envs) and envs[-1].type == "GameFinished"
                status = Status.FINISHED if finished else (
                    Status.PLAYABLE if got.to_act else Status.STUCK)  # fmt: skip
                verdict = await dice.VerifyGame(dice_pb2.VerifyGameRequest(game_id=game_id))
                for _ in range(100):
                    rec = await ledger.Reconcile(ledger_pb2.ReconcileRequest(game_id=game_id))
                    if rec.reconciled:
                        break
                    await asyncio.sleep(0.2)
                games[game_id] = GameFinal(
                    log,
                    got.version,
                    f"{got.version}:{finished}".encode(),
                    session.version,
                    f"{session.version}:{replay_finished}".encode(),
                    status,
                    audit_ok=verdict.ok and rec.reconciled,
                    audit_summary=f"dice: {verdict.summary}; ledger: {rec.message}",
                )
                postings += [(game_id, e.version) async for e in LedgerClient(lch).entries(game_id)]
    finally:
        await nc.close()
    return FinalState(games, postings)


def fault_schedule(cluster: NetnsCluster, platform: Platform) -> list[
    tuple[str, Callable[[int], Awaitable[None]]]
]:  # fmt: skip
    """(name, run(leader)) for each fault; each undoes itself before returning."""
    hold = float(os.environ.get("BOULEVARD_FAULT_SECONDS", "6"))

    async def isolate(leader: int) -> None:
        cluster.isolate(leader)
        await asyncio.sleep(hold)
        cluster.heal()

    async def split(leader: int) -> None:
        cluster.split([leader])
        await asyncio.sleep(hold)
        cluster.heal()

    async def one_way(leader: int) -> None:
        cluster.cut(leader, [i for i in range(3) if i != leader], inbound_only=True)
        await asyncio.sleep(hold)
        cluster.heal()

    async def pause_node(leader: int) -> None:
        cluster.nodes[leader].signal(__import__("signal").SIGSTOP)
        await asyncio.sleep(hold + 4)  # past the routes' ping and the leader's lease
        cluster.nodes[leader].signal(__import__("signal").SIGCONT)

    async def pause_ledger(_: int) -> None:
        os.kill(platform.pid("ledger"), __import__("signal").SIGSTOP)
        await asyncio.sleep(hold + 4)  # past its GAMES consumer's ack wait? no: 30 s; past pings
        os.kill(platform.pid("ledger"), __import__("signal").SIGCONT)

    async def kill_restart(leader: int) -> None:
        cluster.nodes[leader].kill()
        await asyncio.sleep(hold)
        await asyncio.to_thread(cluster.nodes[leader].start)

    async def slow(_: int) -> None:
        applied = [cluster.slow(i, 80, 5) for i in range(3)]
        print(f"slow links: {applied[0]}")
        await asyncio.sleep(hold)
        cluster.heal()

    async def full_disk(leader: int) -> None:
        node = (leader + 1) % 3
        used = sum(f.stat().st_size for f in cluster.nodes[node].store.rglob("*") if f.is_file())
        size_k = used // 1024 + 1024  # a megabyte of room: it fills while games go on
        await asyncio.to_thread(cluster.small_disk, node, f"{size_k}k")
        await asyncio.sleep(hold * 2)
        # Then freed. (Left full, one run here stalled every table for over six minutes:
        # docs/operations.md, "Network faults".)
        cluster.free_disk()

    return [
        ("one node isolated (the GAMES leader)", isolate),
        ("majority/minority split (leader alone)", split),
        ("one-way cut (leader hears no peer)", one_way),
        ("node SIGSTOPped past its leases", pause_node),
        ("ledger service SIGSTOPped", pause_ledger),
        ("node killed and restarted", kill_restart),
        ("slow, lossy links on every node (5% loss)", slow),
        ("nearly full disk under one node", full_disk),
    ]


@pytest.mark.timeout(420)
def test_games_survive_network_faults_and_the_history_checks(
    cluster: NetnsCluster, tmp_path: Path
) -> None:
    platform = Platform(cluster, tmp_path)
    recorder = Recorder()
    faults: list[Fault] = []
    created: list[tuple[str, str]] = []

    async def run() -> Report:
        await cluster_ready(cluster)
        await platform.start()
        chaos_done = asyncio.Event()
        async with grpc.aio.insecure_channel(
            platform.address("engine"), interceptors=[recorder]
        ) as channel:
            engine = engine_pb2_grpc.EngineServiceStub(channel)

            async def table(name: str, seats: int) -> None:
                while not chaos_done.is_set():
                    await play_one(engine, name, seats, created)

            playing = asyncio.gather(*(table(n, s) for n, s in GAMES.items()))

            async def chaos() -> None:
                await asyncio.sleep(4)
                for name, fault in fault_schedule(cluster, platform):
                    f = Fault(name)
                    f.start = time.monotonic()
                    leader = await games_leader(cluster)
                    f.notes.append(f"GAMES leader nats-{leader}")
                    await fault(leader)
                    f.end = time.monotonic()
                    faults.append(f)
                    await asyncio.sleep(3)  # catch up before the next one
                chaos_done.set()

            await chaos()
            try:  # the games under way finish, or the run fails saying which did not
                await asyncio.wait_for(playing, FINISH_SECONDS)
            except TimeoutError:
                stuck = []
                for game_id, name in created:
                    got = await engine.GetGame(engine_pb2.GetGameRequest(game_id=game_id))
                    if got.status != engine_pb2.GAME_STATUS_FINISHED:
                        stuck.append(
                            f"{name} {game_id} at {got.version}, to act {list(got.to_act)}"
                        )
                raise AssertionError(
                    f"games unfinished {FINISH_SECONDS} s after the faults: {stuck}"
                ) from None
        return check(recorder.acks, await final_state(platform, created))

    try:
        report = asyncio.run(run())
    except BaseException:
        for name in PORTS:
            print(f"--- {name}\n{platform.log(name)[-3000:]}")
        for node in cluster.nodes:
            print(f"--- {node.name}\n{node.log()[-2000:]}")
        raise
    finally:
        platform.stop()
    print(f"\n{report.describe()}")
    print(f"services restarted at start: {platform.restarts}")
    print(f"games by kind: {dict(Counter(n for _, n in created))}; "
          f"load average: {os.getloadavg()}")  # fmt: skip
    for f in faults:
        during = [(t, c) for t, _, c in recorder.calls if f.start <= t <= f.end + 3]
        after = [t for t, _, c in recorder.calls if t > f.end and c == "OK"]
        recover = (min(after) - f.end) if after else float("nan")
        seen = dict(Counter(c for _, c in during))
        print(f"  {f.name}: {f.end - f.start:.1f} s, calls {len(during)} {seen}, "
              f"first OK after {recover:.2f} s ({'; '.join(f.notes)})")  # fmt: skip
    assert len(faults) == 8
    broken = Counter(c for *_, c in recorder.calls if c in ("INTERNAL", "UNKNOWN"))
    assert not broken, f"calls that ended {dict(broken)}"
    assert {n for _, n in created} == set(GAMES)
    assert report.ok, report.describe()
    alarms = [x for x in platform.log("ledger").splitlines() if "checkpoint does not match" in x]
    assert not alarms, alarms[:3]
