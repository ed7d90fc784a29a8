"""A three-node JetStream cluster loses a node mid-game, again and again.

Three nats-server processes form one cluster on loopback (streams and KV at 3 replicas,
`sync_interval: always`); the engine, dice and ledger run as processes against it. Bots play
games at three tables while the test SIGKILLs one server at a time, the GAMES stream's leader first,
and starts it again on its store. Every game finishes; no event is lost or duplicated (the
log's versions run 1..N with distinct event ids, and a pure replay reaches the engine's
version); the dice verify and the ledger reconciles. The SubmitAction latencies during the
faults are printed (docs/operations.md quotes a run)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from random import Random

import grpc
import pytest

from boulevard.api.v1 import (
    dice_pb2,
    dice_pb2_grpc,
    engine_pb2,
    engine_pb2_grpc,
    ledger_pb2,
    ledger_pb2_grpc,
)
from boulevard.client.ledger import LedgerClient
from boulevard.games import get_game
from boulevard.messaging.cluster import ClusterNode, NatsCluster
from boulevard.platform.identity import OPERATOR as OPERATOR_ROLE
from boulevard.seats.player import SeatPlayer
from boulevard.seats.submitting import SubmitStream
from tests.e2e.test_engine_robustness import replay_hash
from tests.support.identity import auth_env, mint
from tests.support.keys import seat_key
from tests.support.nats import connect_as
from tests.support.processes import ServiceProcess, address, service_env

pytestmark = pytest.mark.e2e

OPERATOR = mint("cluster-operator", (OPERATOR_ROLE,), ttl=3600)
GAME = "lords_of_vegas"  # long games: all three faults happen mid-game
RETRY = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.INTERNAL,  # counted below: must stay zero
}


class Latency(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Records (start, seconds, code) of every SubmitAction."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, float, str]] = []
        self.internal: list[str] = []

    async def intercept_unary_unary(self, continuation, details, request):  # type: ignore[no-untyped-def]
        start = time.monotonic()
        call = await continuation(details, request)
        method = details.method
        if (method.decode() if isinstance(method, bytes) else method).endswith("/SubmitAction"):
            try:
                await call
                code = "OK"
            except grpc.aio.AioRpcError as err:
                code = err.code().name
                if code == "INTERNAL":
                    self.internal.append(str(err.details()))
            self.calls.append((start, time.monotonic() - start, code))
        return call


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[NatsCluster]:
    c = NatsCluster(tmp_path / "cluster").start()
    try:
        yield c
    finally:
        c.stop()


async def play_through_faults(engine: engine_pb2_grpc.EngineServiceStub, game_id: str,
                              tokens: list[str]) -> None:  # fmt: skip
    game = get_game(GAME)
    seats = [
        SeatPlayer(
            engine,
            game_id,
            GAME,
            seat,
            token,
            game.bots["heuristic"],
            Random(seat),
            seat_key(seat),
            # Unary calls, which `Latency` records (the stream is tested in
            # tests/integration/engine/test_submit_stream.py).
            moves_stream=SubmitStream(engine, unary=True),
        )
        for seat, token in enumerate(tokens)
    ]
    for _ in range(200):
        try:
            await asyncio.gather(*(s.play() for s in seats))
            return
        except grpc.aio.AioRpcError as err:
            if err.code() not in RETRY:
                raise
            await asyncio.sleep(0.3)
    raise AssertionError("never finished")


async def games_leader(node: ClusterNode) -> str:
    nc = await connect_as(node)
    try:
        info = await nc.jetstream().stream_info("GAMES")
        assert info.config.num_replicas == 3
        assert info.cluster is not None and info.cluster.leader
        return info.cluster.leader
    finally:
        await nc.close()


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0


def test_games_finish_while_cluster_nodes_die(cluster: NatsCluster, tmp_path: Path) -> None:
    env = service_env(cluster, tmp_path / "data",
                      {"BOULEVARD_TOKEN_KEY": "c" * 64, **auth_env(),
                       "BOULEVARD_STREAM_REPLICAS": "3"})  # fmt: skip
    services = [ServiceProcess(n, env, tmp_path) for n in ("dice", "ledger", "engine")]
    faults: list[tuple[str, float, float]] = []
    latency = Latency()

    async def run() -> None:
        from boulevard.cli.up import wait_serving

        await cluster.wait_jetstream()
        for s in services:
            s.start()
            await wait_serving(s.address, 60, s.process)
        async with grpc.aio.insecure_channel(
            address(env, "engine"), interceptors=[latency]
        ) as channel:
            engine = engine_pb2_grpc.EngineServiceStub(channel)
            created: list[engine_pb2.CreateGameResponse] = []
            chaos_done = asyncio.Event()

            async def table() -> None:
                """Games one after another at one table until every fault has happened."""
                while not chaos_done.is_set():
                    for attempt in range(100):
                        try:
                            made = await engine.CreateGame(
                                engine_pb2.CreateGameRequest(
                                    request_id=f"{uuid.uuid4().hex}", game=GAME,
                                    seats=[engine_pb2.SeatAssignment(
                                        seat=i, player_id=f"p{i}",  # no seed: no reveal to wait for
                                        public_key=seat_key(i).public_hex,
                                    ) for i in range(2)],
                                ),
                                metadata=(("authorization", f"Bearer {OPERATOR}"),),
                            )  # fmt: skip
                            break
                        except grpc.aio.AioRpcError as err:
                            if err.code() not in RETRY or attempt == 99:
                                raise
                            await asyncio.sleep(0.3)
                    created.append(made)
                    await play_through_faults(engine, made.game_id, list(made.player_tokens))

            playing = asyncio.gather(table(), table(), table())

            async def chaos() -> None:
                await asyncio.sleep(2)
                leader = await games_leader(cluster.nodes[0])
                order = [leader] + [n.name for n in cluster.nodes if n.name != leader]
                for name in order:
                    node = cluster.node(name)
                    start = time.monotonic()
                    node.kill()
                    await asyncio.sleep(4)
                    await asyncio.to_thread(cluster.restart, node)
                    await asyncio.sleep(4)  # let it catch up before the next one dies
                    faults.append((name, start, time.monotonic()))
                chaos_done.set()

            await asyncio.gather(playing, chaos())
            for c in created:
                got = await engine.GetGame(engine_pb2.GetGameRequest(game_id=c.game_id))
                assert got.status == engine_pb2.GAME_STATUS_FINISHED
                _, version, ids = await replay_hash(cluster.nodes[0], c.game_id)
                assert version == got.version  # a pure replay reaches the engine's state
                assert len(ids) == len(set(ids)) == version  # nothing lost, nothing twice
        async with grpc.aio.insecure_channel(address(env, "dice")) as channel:
            dice = dice_pb2_grpc.DiceServiceStub(channel)
            for c in created:
                verdict = await dice.VerifyGame(dice_pb2.VerifyGameRequest(game_id=c.game_id))
                assert verdict.ok, verdict.summary
        async with grpc.aio.insecure_channel(address(env, "ledger")) as channel:
            ledger = ledger_pb2_grpc.LedgerServiceStub(channel)
            for c in created:
                for _ in range(100):
                    rec = await ledger.Reconcile(ledger_pb2.ReconcileRequest(game_id=c.game_id))
                    if rec.reconciled:
                        break
                    await asyncio.sleep(0.2)
                if not rec.reconciled:  # what the next reader needs to find the cause
                    versions = Counter(
                        [e.version async for e in LedgerClient(channel).entries(c.game_id)]
                    )
                    twice = sorted(v for v, n in versions.items() if n > 1)
                    alarms = [x for x in services[1].log().splitlines() if "ALARM" in x]
                    print(
                        f"entries of {c.game_id} posted twice at versions {twice}; "
                        f"{len(versions)} versions posted; ledger alarms: {alarms[-5:]}"
                    )
                assert rec.reconciled, rec.message

    try:
        asyncio.run(run())
    except BaseException:
        for s in services:
            print(f"--- {s.name}\n{s.log()[-3000:]}")
        raise
    finally:
        for s in services:
            s.stop()
    assert len(faults) == 3
    # A checkpoint read that timed out in an election is "unreadable, will retry", never
    # the alarm that says someone wrote the bucket (issue 29: 62 false alarms in 20 rounds).
    false_alarms = [x for x in services[1].log().splitlines() if "checkpoint does not match" in x]
    assert not false_alarms, false_alarms[:3]
    codes = [code for _, _, code in latency.calls]
    errors = [x for x in services[-1].log().splitlines() if "unexpected error" in x]
    # (an INTERNAL here was the dice service's NoStreamResponseError during an election,
    # now answered "unavailable" and retried: tests/unit/dice/test_rpc_errors.py)
    assert "UNKNOWN" not in codes and "INTERNAL" not in codes, "\n".join(
        [*latency.internal[:3], *(x[:1500] for x in errors[-3:])]
    )
    print(f"\nSubmitAction calls: {len(latency.calls)}, "
          f"p99 overall {p99([d for _, d, _ in latency.calls]) * 1000:.0f} ms")  # fmt: skip
    for name, start, end in faults:
        during = [d for t, d, _ in latency.calls if start <= t <= end]
        failed = sorted(c for t, _, c in latency.calls if start <= t <= end and c != "OK")
        print(f"  {name} killed: {len(during)} calls, p99 {p99(during) * 1000:.0f} ms, "
              f"max {max(during, default=0) * 1000:.0f} ms, "
              f"not OK: {dict(Counter(failed))}")  # fmt: skip
