"""Faults across a network (issue 29): the deployment's three-node NATS cluster and the
services on their own network namespaces (tests/support/netns.py), games of all four games
played by bots through the public API, and a schedule of faults: one node isolated, a
majority/minority split, a one-way cut, a node SIGSTOPped past its leases, the ledger
SIGSTOPped, a node killed and restarted, slow and lossy links, and last a node's disk filled
and left full (its JetStream stops: the other two carry on). Every SubmitAction answer and
every ledger entry a table reads is recorded; afterwards the history checker
(tests/support/history.py) compares what clients were told with what the platform holds:
each game's state digest from the engine against a fold of its log, and `boulevard audit
game`'s library call (`audit_one`) over every game with every receipt its clients got. The
NATS servers' monitoring (/varz, /jsz, /healthz) is read as an operator's scraper would.

Needs root, ip, nft and tc: skipped locally without them (naming what is missing), never in
CI (CI=true fails instead). Bounded to a few minutes: small tables, a short schedule."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import TypeVar

import grpc
import nats
import pytest

from boulevard.api.v1 import (
    engine_pb2,
    engine_pb2_grpc,
    events_pb2,
    ledger_pb2,
    ledger_pb2_grpc,
)
from boulevard.audit.evidence import receipt_from_pb
from boulevard.audit.game_log import GameAuditFailed
from boulevard.audit.signing import chain_hash
from boulevard.cli.audit_game import Addresses, audit_one
from boulevard.client.ledger import LedgerClient
from boulevard.contract.mapping import view_to_proto
from boulevard.eventlog.jetstream import JetStreamEventStore
from boulevard.games import get_game
from boulevard.games.codec import Codec
from boulevard.messaging.identities import ADMIN, inbox_prefix, seed_path
from boulevard.platform.identity import OPERATOR as OPERATOR_ROLE
from boulevard.platform.tls import client_ssl_context
from boulevard.seats.player import SeatPlayer
from boulevard.seats.submitting import SubmitStream
from services.engine.sessions import Session
from tests.support.history import (
    Acknowledged,
    FinalState,
    GameFinal,
    LedgerSeen,
    Report,
    Status,
    StoredEvent,
    check,
    state_digest,
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
T = TypeVar("T")


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
        self.receipts: dict[str, list[engine_pb2.Receipt]] = {}  # game id -> as answered
        self.ledger_seen: list[LedgerSeen] = []

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
        self.receipts.setdefault(request.game_id, []).append(reply.receipt)
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


@dataclass(frozen=True)
class Created:
    game_id: str
    game: str
    tokens: tuple[str, ...]  # each seat's player token: its view is part of the digest


async def play_one(engine: engine_pb2_grpc.EngineServiceStub, name: str, seats: int,
                   created: list[Created], ledger: LedgerClient,
                   recorder: Recorder) -> None:  # fmt: skip
    """One game from creation to its end, retrying what a fault answers; then the ledger
    entries of the game as a player would read them (LedgerSeen: the final ledger must
    still hold each)."""
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
    created.append(Created(made.game_id, name, tuple(made.player_tokens)))
    game = get_game(name)
    players = [
        # Unary calls, which `Recorder` records (the stream is tested in
        # tests/integration/engine/test_submit_stream.py).
        SeatPlayer(engine, made.game_id, name, s, token, game.bots["heuristic"], Random(s),
                   seat_key(s), moves_stream=SubmitStream(engine, unary=True))
        for s, token in enumerate(made.player_tokens)
    ]  # fmt: skip
    for _ in range(300):
        try:
            await asyncio.gather(*(p.play() for p in players))
            break
        except grpc.aio.AioRpcError as err:
            if err.code() not in RETRY | {grpc.StatusCode.INTERNAL}:
                raise
            await asyncio.sleep(0.3)
    else:
        raise AssertionError(f"{made.game_id} never finished")
    try:  # what is posted so far (the ledger posts a moment after the game's events)
        recorder.ledger_seen += [
            LedgerSeen(made.game_id, e.version) async for e in ledger.entries(made.game_id)
        ]
    except grpc.aio.AioRpcError as err:
        if err.code() not in RETRY:
            raise


RECONCILE_WITHIN = 60.0  # seconds the ledger may take to post a game's money once healed


async def retried(call: Callable[[], Awaitable[T]], within: float = 60) -> T:
    """`call()` again while it answers what a fault answers (as a client would), for up to
    `within` seconds: with a node's JetStream stopped, a read whose consumer the cluster
    placed there times out (docs/operations.md, "A full disk")."""
    deadline = time.monotonic() + within
    while True:
        try:
            return await call()
        except grpc.aio.AioRpcError as err:
            if err.code() not in RETRY or time.monotonic() > deadline:
                raise
        except (TimeoutError, nats.errors.TimeoutError):
            if time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.5)


def replay_digest(session: Session) -> bytes:
    """The digest `state_digest` of a pure fold of the log: what GetGame would answer for
    it, computed here from the rules, for the spectator and for every seat."""
    if session.halted is not None:
        status = "halted"
    else:
        status = "finished" if session.finished is not None else "active"
    seats = [s.seat for s in session.created.seats]
    views = [
        view_to_proto(session.game, session.game.view(session.state, seat))
        for seat in [None, *seats]
    ]  # fmt: skip
    to_act = session.to_act() if session.halted is None else []
    return state_digest(session.version, status, to_act,
                        [v.SerializeToString(deterministic=True) for v in views])  # fmt: skip


STATUS = {
    engine_pb2.GAME_STATUS_ACTIVE: "active",
    engine_pb2.GAME_STATUS_FINISHED: "finished",
    engine_pb2.GAME_STATUS_HALTED: "halted",
}


async def engine_digest(
    engine: engine_pb2_grpc.EngineServiceStub, made: Created
) -> tuple[engine_pb2.GetGameResponse, bytes]:
    """GetGame as the spectator and as each seat (its token), and their `state_digest`."""
    answers = []
    for token in ("", *made.tokens):
        request = engine_pb2.GetGameRequest(game_id=made.game_id, player_token=token)
        answers.append(await retried(lambda r=request: engine.GetGame(r, timeout=10)))
    first = answers[0]
    views = [a.view.SerializeToString(deterministic=True) for a in answers]
    status = STATUS.get(first.status, str(first.status))
    digest = state_digest(first.version, status, list(first.to_act), views)
    versions = {a.version for a in answers}
    assert len(versions) == 1, f"{made.game_id} moved while being read: {versions}"
    return first, digest


async def final_state(platform: Platform, created: list[Created],
                      recorder: Recorder) -> FinalState:  # fmt: skip
    """Everything the platform holds of the games: logs as stored, pure folds of them, the
    engine's answers (as digests of the same state), the ledger's entries, and each game's
    audit: `boulevard audit game`'s own call with every receipt the game's clients got,
    and the ledger's reconciliation."""
    nc = await admin_nats(platform.cluster)
    games: dict[str, GameFinal] = {}
    postings: list[tuple[str, int]] = []
    addresses = Addresses(platform.address("engine"), platform.address("dice"),
                          platform.address("ledger"))  # fmt: skip
    try:
        store = JetStreamEventStore(nc, "GAMES", "game")
        async with (
            grpc.aio.insecure_channel(platform.address("engine")) as ech,
            grpc.aio.insecure_channel(platform.address("ledger")) as lch,
        ):
            engine = engine_pb2_grpc.EngineServiceStub(ech)
            ledger = ledger_pb2_grpc.LedgerServiceStub(lch)

            async def one(made: Created) -> None:
                async with gate:
                    game_id = made.game_id
                    recorded = await retried(lambda g=game_id: store.read(g))
                    envs = [events_pb2.EventEnvelope.FromString(r.data) for r in recorded]
                    log = tuple(
                        StoredEvent(e.version, e.event_id, chain_hash(r.data),
                                    bool(e.transfers) or e.type == "GameFinished")
                        for e, r in zip(envs, recorded, strict=True)
                    )  # fmt: skip
                    session = Session.new(game_id, Codec(()).loads(envs[0].payload))
                    for e in envs:
                        session.apply_envelope(e)
                    got, digest = await engine_digest(engine, made)
                    finished = got.status == engine_pb2.GAME_STATUS_FINISHED
                    status = Status.FINISHED if finished else (
                        Status.PLAYABLE if got.to_act else Status.STUCK)  # fmt: skip
                    # The ledger first: after the faults it may still be catching up on
                    # GAMES (a fetch refused while its consumer's node was cut off), and an
                    # audit of a game whose money is not posted yet fails on the missing
                    # entries. What is checked is where the platform converges once healed:
                    # reconciled within RECONCILE_WITHIN seconds, then audited.
                    deadline = time.monotonic() + RECONCILE_WITHIN
                    while True:
                        rec = await retried(lambda g=game_id: ledger.Reconcile(
                            ledger_pb2.ReconcileRequest(game_id=g), timeout=10))  # fmt: skip
                        if rec.reconciled or time.monotonic() > deadline:
                            break
                        await asyncio.sleep(0.2)
                    receipts = [receipt_from_pb(r) for r in recorder.receipts.get(game_id, [])]
                    try:
                        report = await retried(
                            lambda g=game_id, r=receipts: audit_one(  # type: ignore[misc]
                                g, addresses, receipts=r, timeout=10
                            )
                        )
                        audited, summary = True, f"audit: {report.versions} versions"
                    except GameAuditFailed as failed:
                        audited, summary = False, f"audit: {failed}"
                    games[game_id] = GameFinal(
                        log,
                        got.version,
                        digest,
                        session.version,
                        replay_digest(session),
                        status,
                        audit_ok=audited and rec.reconciled,
                        audit_summary=f"{summary}; {len(receipts)} receipts; ledger: {rec.message}",
                    )
                    entries = await retried(
                        lambda g=game_id: _entries(LedgerClient(lch), g)  # type: ignore[misc]
                    )
                    postings.extend((game_id, v) for v in entries)

            gate = asyncio.Semaphore(4)  # a few games at a time: the checks read a lot
            await asyncio.gather(*(one(made) for made in created))
    finally:
        await nc.close()
    return FinalState(games, postings)


async def _entries(client: LedgerClient, game_id: str) -> list[int]:
    return [e.version async for e in client.entries(game_id)]


def scrape(cluster: NetnsCluster) -> list[dict[str, object]]:
    """What a scraper of each node's monitoring port reads (docs/operations.md, "NATS
    monitoring"): /healthz?js-enabled-only=true (the liveness probe's), /varz and /jsz."""
    out: list[dict[str, object]] = []
    for i in range(len(cluster.nodes)):
        health = json.loads(cluster.monitor(i, "/healthz?js-enabled-only=true") or "{}")
        varz = json.loads(cluster.monitor(i, "/varz") or "{}")
        jsz = json.loads(cluster.monitor(i, "/jsz") or "{}")
        out.append({
            "js_healthz": health.get("status") if health.get("status") == "ok"
            else health.get("error", "no answer"),
            "routes": varz.get("routes"),
            "connections": varz.get("connections"),
            "jetstream": "disabled" if jsz.get("disabled") else "enabled",
            "streams": jsz.get("streams", 0),
            "meta_leader": (jsz.get("meta_cluster") or {}).get("leader"),
        })  # fmt: skip
    return out


def fault_schedule(cluster: NetnsCluster, platform: Platform) -> list[
    tuple[str, Callable[[int], Awaitable[str | None]]]
]:  # fmt: skip
    """(name, run(leader)) for each fault, which returns a note for the table; each undoes
    itself before returning, but the last: a full disk is left full to the end."""
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

    async def slow(_: int) -> str:
        applied = [cluster.slow(i, 80, 5) for i in range(3)]
        await asyncio.sleep(hold)
        cluster.heal()
        return applied[0]

    async def full_disk(leader: int) -> str:
        node = (leader + 1) % 3
        used = sum(f.stat().st_size for f in cluster.nodes[node].store.rglob("*") if f.is_file())
        size_k = used // 1024 + 1024  # a megabyte of room for its catch-up after the restart
        await asyncio.to_thread(cluster.small_disk, node, f"{size_k}k")
        await asyncio.sleep(2)
        cluster.fill_disk(node)  # what the store does not hold, something else filled
        start = time.monotonic()
        while not await asyncio.to_thread(cluster.jetstream_stopped, node):
            assert time.monotonic() - start < 30, f"nats-{node}'s JetStream kept running"
            await asyncio.sleep(0.5)
        stopped_after = time.monotonic() - start
        # Left full (and its JetStream off) to the end of the run: the games go on, the
        # checks run, on the other two nodes.
        await asyncio.sleep(hold * 2)
        return f"nats-{node} full; its JetStream stopped {stopped_after:.1f} s after filling"

    return [
        ("one node isolated (the GAMES leader)", isolate),
        ("majority/minority split (leader alone)", split),
        ("one-way cut (leader hears no peer)", one_way),
        ("node SIGSTOPped past its leases", pause_node),
        ("ledger service SIGSTOPped", pause_ledger),
        ("node killed and restarted", kill_restart),
        ("slow, lossy links on every node (5% loss)", slow),
        ("one node's disk filled and left full", full_disk),
    ]


@pytest.mark.timeout(420)
def test_games_survive_network_faults_and_the_history_checks(
    cluster: NetnsCluster, tmp_path: Path
) -> None:
    platform = Platform(cluster, tmp_path)
    recorder = Recorder()
    faults: list[Fault] = []
    created: list[Created] = []
    scraped: list[dict[str, object]] = []

    async def run() -> Report:
        await cluster_ready(cluster)
        await platform.start()
        chaos_done = asyncio.Event()
        engine_address = platform.address("engine")
        async with (
            grpc.aio.insecure_channel(engine_address, interceptors=[recorder]) as channel,
            grpc.aio.insecure_channel(platform.address("ledger")) as lch,
        ):
            engine = engine_pb2_grpc.EngineServiceStub(channel)
            ledger = LedgerClient(lch)

            async def table(name: str, seats: int) -> None:
                while not chaos_done.is_set():
                    await play_one(engine, name, seats, created, ledger, recorder)

            playing = asyncio.gather(*(table(n, s) for n, s in GAMES.items()))

            async def chaos() -> None:
                await asyncio.sleep(4)
                for name, fault in fault_schedule(cluster, platform):
                    f = Fault(name)
                    f.start = time.monotonic()
                    leader = await games_leader(cluster)
                    f.notes.append(f"GAMES leader nats-{leader}")
                    note = await fault(leader)
                    f.end = time.monotonic()
                    f.notes += [note] if note else []
                    faults.append(f)
                    await asyncio.sleep(3)  # catch up before the next one
                chaos_done.set()

            await chaos()
            try:  # the games under way finish, or the run fails saying which did not
                await asyncio.wait_for(playing, FINISH_SECONDS)
            except TimeoutError:
                stuck = []
                for made in created:
                    got = await engine.GetGame(engine_pb2.GetGameRequest(game_id=made.game_id))
                    if got.status != engine_pb2.GAME_STATUS_FINISHED:
                        stuck.append(f"{made.game} {made.game_id} at {got.version}, "
                                     f"to act {list(got.to_act)}")  # fmt: skip
                raise AssertionError(
                    f"games unfinished {FINISH_SECONDS} s after the faults: {stuck}"
                ) from None
        final = await final_state(platform, created, recorder)
        scraped.extend(await asyncio.to_thread(scrape, cluster))
        return check(recorder.acks, final, recorder.ledger_seen)

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
    anew = [x for x in platform.log("engine").splitlines() if "feed fell behind" in x]
    print(f"game feeds read anew after falling behind the engine's appends: {len(anew)}")
    print(f"games by kind: {dict(Counter(c.game for c in created))}; "
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
    assert {c.game for c in created} == set(GAMES)
    assert report.ok, report.describe()
    assert len(recorder.ledger_seen) > 0
    # The one a full disk stopped, as its monitoring endpoints tell an operator (what
    # docs/operations.md has alert on); the other two serve JetStream and the streams.
    for i, mon in enumerate(scraped):
        print(f"  nats-{i} monitoring: {mon}")
        if i in cluster.filled:
            assert mon["js_healthz"] != "ok" and mon["jetstream"] == "disabled", mon
        else:
            assert mon["js_healthz"] == "ok" and mon["meta_leader"], mon
            assert int(str(mon["streams"])) > 0, mon
    # The full disk's stretch: the platform went on with one node's JetStream off.
    after = [t for t, _, c in recorder.calls if t > faults[-1].start + 5 and c == "OK"]
    assert len(after) > 20, f"{len(after)} moves accepted once the disk was full"
    alarms = [x for x in platform.log("ledger").splitlines() if "checkpoint does not match" in x]
    assert not alarms, alarms[:3]
